"""The cross-version map (schema/crossversion.json), checked against each pair of adjacent versions.

Each entry names its counterparts by version (``{"v1": "authenticate", "v2":
"auth/login"}``); the map of a pair of versions is made of the entries that
name both of them. Adding a version is adding its folder and its entries: no
version is named in this code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generator.errors import Problem, SchemaError, pointer
from generator.model import ObjectType, Protocol

CATEGORIES = ("methods", "types", "fields", "capabilities")
SINGULAR = {"methods": "method", "types": "type", "fields": "field", "capabilities": "capability"}
"""How an error names one entry of each category."""


@dataclass(frozen=True)
class CrossMap:
    """Pairs of corresponding names, as (``left``, ``right``); ``None`` on a side means "only in the other version"."""

    left: str
    right: str
    methods: tuple[tuple[str | None, str | None], ...]
    types: tuple[tuple[str | None, str | None], ...]
    fields: tuple[tuple[str | None, str | None], ...]
    capabilities: tuple[tuple[str | None, str | None], ...]

    def pairs(self, category: str) -> tuple[tuple[str | None, str | None], ...]:
        pairs: tuple[tuple[str | None, str | None], ...] = getattr(self, category)
        return pairs

    def oriented(self, old: str, new: str, category: str) -> list[tuple[str | None, str | None]]:
        """The pairs as (``old`` side, ``new`` side); nothing when the map is of other versions."""
        if (old, new) == (self.left, self.right):
            return list(self.pairs(category))
        if (old, new) == (self.right, self.left):
            return [(b, a) for a, b in self.pairs(category)]
        return []


def entries_of(doc: dict[str, Any], category: str, left: str, right: str) -> list[tuple[int, dict[str, Any]]]:
    """The entries of ``category`` that name both versions, with their index in the file."""
    return [(i, entry) for i, entry in enumerate(doc[category]) if left in entry and right in entry]


def crossmap_from_doc(doc: dict[str, Any], left: str, right: str) -> CrossMap:
    """The map of two versions as written, without checking it against them.

    ``validate`` checks the map strictly against the current schemas; the diff
    also compares older revisions, where some listed names do not exist yet, so
    such entries simply pair nothing.
    """
    return CrossMap(
        left, right, **{c: tuple((e[left], e[right]) for _, e in entries_of(doc, c, left, right)) for c in CATEGORIES}
    )


def entry_problems(doc: dict[str, Any], file: str) -> list[Problem]:
    """Entries that name fewer than two versions, or no name at all."""
    problems = []
    for category in CATEGORIES:
        for i, entry in enumerate(doc[category]):
            versions = [key for key in entry if key != "note"]
            if len(versions) < 2:
                problems.append(
                    Problem(
                        file,
                        pointer(category, i),
                        "an entry must name at least two versions",
                        'add the counterpart, e.g. {"v1": "old/name", "v2": null}',
                    )
                )
            elif all(entry[key] is None for key in versions):
                problems.append(
                    Problem(
                        file,
                        pointer(category, i),
                        "every side of the entry is null",
                        "name the method, type, field or capability on one side at least",
                    )
                )
    return problems


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
    """Check every entry of two adjacent versions against both, and that nothing is left unaccounted for."""
    problems: list[Problem] = []
    out: dict[str, list[tuple[str | None, str | None]]] = {}
    lv, rv = left.version, right.version
    for category in CATEGORIES:
        rows = []
        seen: dict[str, set[str]] = {lv: set(), rv: set()}
        for i, entry in entries_of(doc, category, lv, rv):
            a, b = entry[lv], entry[rv]
            for proto, name, key in ((left, a, lv), (right, b, rv)):
                if name is None:
                    continue
                if name in seen[proto.version]:
                    problems.append(
                        Problem(file, pointer(category, i, key), f"{name!r} is listed twice", "keep one entry per name")
                    )
                seen[proto.version].add(name)
                if not _exists(category, proto, name):
                    problems.append(
                        Problem(
                            file,
                            pointer(category, i, key),
                            f"{SINGULAR[category]} {name!r} does not exist in {proto.source}",
                            "correct the name, or remove the entry",
                        )
                    )
            rows.append((a, b))
        out[category] = rows

    def method_names(p: Protocol) -> list[str]:
        return [m.name for m in p.methods]

    def type_names(p: Protocol) -> list[str]:
        return [t.name for t in p.types]

    for category, names_of in (("methods", method_names), ("types", type_names)):
        listed_left = {a for a, _ in out[category] if a}
        listed_right = {b for _, b in out[category] if b}
        left_names, right_names = set(names_of(left)), set(names_of(right))
        for name in sorted(left_names - right_names - listed_left):
            problems.append(
                Problem(
                    file,
                    pointer(category),
                    f"{left.version} {SINGULAR[category]} {name!r} has no counterpart in {right.version} and is not listed",
                    f'add {{"{lv}": "{name}", "{rv}": <its {rv} name or null>}}',
                )
            )
        for name in sorted(right_names - left_names - listed_right):
            problems.append(
                Problem(
                    file,
                    pointer(category),
                    f"{right.version} {SINGULAR[category]} {name!r} has no counterpart in {left.version} and is not listed",
                    f'add {{"{lv}": <its {lv} name or null>, "{rv}": "{name}"}}',
                )
            )
    if problems:
        raise SchemaError(problems)
    return CrossMap(lv, rv, **{c: tuple(out[c]) for c in CATEGORIES})
