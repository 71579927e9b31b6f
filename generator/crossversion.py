"""The v1 <-> v2 correspondence map (schema/crossversion.json), checked against both versions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generator.errors import Problem, SchemaError, pointer
from generator.model import ObjectType, Protocol

CATEGORIES = ("methods", "types", "fields", "capabilities")


@dataclass(frozen=True)
class CrossMap:
    """Pairs of corresponding names; ``None`` on a side means "only in the other version"."""

    methods: tuple[tuple[str | None, str | None], ...]
    types: tuple[tuple[str | None, str | None], ...]
    fields: tuple[tuple[str | None, str | None], ...]
    capabilities: tuple[tuple[str | None, str | None], ...]

    def pairs(self, category: str) -> tuple[tuple[str | None, str | None], ...]:
        return getattr(self, category)


def _exists(category: str, proto: Protocol, name: str) -> bool:
    if category == "methods":
        return proto.method(name) is not None
    if category == "types":
        return proto.has_type(name)
    if category == "fields":
        tname, _, wire = name.partition(".")
        if not proto.has_type(tname):
            return False
        t = proto.type(tname)
        return isinstance(t, ObjectType) and t.field(wire) is not None
    path = tuple(name.split("."))
    for side in ("agent", "client"):
        try:
            proto.resolve_path(side, path)
            return True
        except KeyError:
            continue
    return False


def build_crossmap(doc: dict[str, Any], left: Protocol, right: Protocol, file: str) -> CrossMap:
    """Check every entry against both versions, and that nothing is left unaccounted for."""
    problems: list[Problem] = []
    out: dict[str, list[tuple[str | None, str | None]]] = {}
    for category in CATEGORIES:
        rows = []
        seen = {left.version: set(), right.version: set()}
        for i, entry in enumerate(doc[category]):
            a, b = entry["v1"], entry["v2"]
            for proto, name, key in ((left, a, "v1"), (right, b, "v2")):
                if name is None:
                    continue
                if name in seen[proto.version]:
                    problems.append(Problem(file, pointer(category, i, key), f"{name!r} is listed twice",
                                            "keep one entry per name"))
                seen[proto.version].add(name)
                if not _exists(category, proto, name):
                    problems.append(Problem(file, pointer(category, i, key),
                                            f"{category[:-1]} {name!r} does not exist in {proto.source}",
                                            "correct the name, or remove the entry"))
            rows.append((a, b))
        out[category] = rows
    for category, names_of in (("methods", lambda p: [m.name for m in p.methods]),
                               ("types", lambda p: [t.name for t in p.types])):
        listed_left = {a for a, _ in out[category] if a}
        listed_right = {b for _, b in out[category] if b}
        left_names, right_names = set(names_of(left)), set(names_of(right))
        for name in sorted(left_names - right_names - listed_left):
            problems.append(Problem(file, pointer(category), f"{left.version} {category[:-1]} {name!r} has no counterpart in {right.version} and is not listed",
                                    f'add {{"v1": "{name}", "v2": <its {right.version} name or null>}}'))
        for name in sorted(right_names - left_names - listed_right):
            problems.append(Problem(file, pointer(category), f"{right.version} {category[:-1]} {name!r} has no counterpart in {left.version} and is not listed",
                                    f'add {{"v1": <its {left.version} name or null>, "v2": "{name}"}}'))
    if problems:
        raise SchemaError(problems)
    return CrossMap(**{c: tuple(out[c]) for c in CATEGORIES})
