"""Read a version's schema files, check them against the meta-schemas, bundle them.

Nothing here knows about Python: the result is validated JSON, ready for
``generator.model`` to turn into the intermediate model.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from generator.errors import Problem, SchemaError, UsageError, pointer
from generator.sources import DirSource, GitSource, read_bounded

META_DIR = Path(__file__).parent / "metaschemas"
PROTOCOL_FILE = "protocol.json"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


# How deeply a schema file may nest objects and arrays. The canonical schemas
# need 8 levels; the limit keeps every later step (the meta-schema check, the
# model, datamodel-code-generator) far from Python's recursion limit.
MAX_DEPTH = 32
# Integer literals longer than this are refused: no schema needs them, and
# Python refuses to convert very long ones at all.
MAX_INT_DIGITS = 30
_MAX_REPORTED = 20


def _strict_integer(checker: object, instance: object) -> bool:
    """An integer is an int: ``1.0`` is a number, not an integer, so it never reaches the output as a float."""
    return isinstance(instance, int) and not isinstance(instance, bool)


_MetaValidator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _strict_integer),
)


@cache
def meta_document(name: str) -> dict[str, Any]:
    """One meta-schema of the schema format, as JSON."""
    doc: dict[str, Any] = json.loads((META_DIR / f"{name}.schema.json").read_text("utf-8"))
    return doc


def _true_end(pattern: str) -> str:
    """A pattern whose final ``$`` matches only at the end of the text, as in JSON Schema.

    JSON Schema patterns are ECMA-262 regular expressions, where ``$`` is the
    end of the text; Python's ``$`` also matches before a final newline, so
    ``"Zz\\n"`` would pass ``^[A-Z][A-Za-z0-9]*$`` and reach the output as a
    name. The meta-schemas keep the portable spelling; only the copy checked
    here ends in ``\\Z``.
    """
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        return pattern[:-1] + "\\Z"
    return pattern


def _anchored(node: Any) -> Any:
    if isinstance(node, list):
        return [_anchored(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "pattern" and isinstance(value, str):
            out[key] = _true_end(value)
        elif key == "patternProperties" and isinstance(value, dict):
            out[key] = {_true_end(k): _anchored(v) for k, v in value.items()}
        else:
            out[key] = _anchored(value)
    return out


@cache
def metaschema(name: str) -> jsonschema.protocols.Validator:
    validator: jsonschema.protocols.Validator = _MetaValidator(_anchored(meta_document(name)))
    return validator


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _LongInt(str):
    """An integer literal too long to use, kept as its text so the walk can report where it is."""


def _parse_int(text: str) -> int | _LongInt:
    return _LongInt(text) if len(text.lstrip("-")) > MAX_INT_DIGITS else int(text)


def parse_json(data: bytes, file: str) -> Any:
    """Parse JSON strictly; raise SchemaError with line and column, or with the JSON pointer of the value.

    Refused: not UTF-8, bad syntax, duplicate keys, NaN and Infinity, numbers
    too large to be finite (``1e400``), integer literals of more than
    MAX_INT_DIGITS digits, strings or keys holding a lone surrogate escape
    (``"\\ud800"``, which no UTF-8 file can hold), and nesting deeper than
    MAX_DEPTH.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SchemaError([Problem(file, "", f"not UTF-8 text (byte {exc.start})", "save the file as UTF-8")]) from None
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant, parse_int=_parse_int)
    except RecursionError:
        raise SchemaError(
            [
                Problem(
                    file,
                    "",
                    f"nested too deeply (the limit is {MAX_DEPTH} levels)",
                    "flatten the structure: give nested schemas a name in $defs",
                )
            ]
        ) from None
    except json.JSONDecodeError as exc:
        raise SchemaError(
            [
                Problem(
                    file,
                    "",
                    f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
                    "fix the JSON syntax there",
                )
            ]
        ) from None
    except _DuplicateKey as exc:
        raise SchemaError(
            [Problem(file, "", f"key {exc.args[0]!r} appears twice in one object", "keep one of the two entries")]
        ) from None
    except ValueError as exc:
        raise SchemaError([Problem(file, "", str(exc), "use only standard JSON values")]) from None
    problems = value_problems(doc, file)
    if problems:
        raise SchemaError(problems)
    return doc


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def value_problems(doc: Any, file: str) -> list[Problem]:
    """What ``json.loads`` lets through but no output can hold, each with its JSON pointer (the first few)."""
    problems: list[Problem] = []
    stack: list[tuple[Any, tuple[str, ...]]] = [(doc, ())]
    while stack and len(problems) < _MAX_REPORTED:
        node, path = stack.pop()
        where = pointer(*path)
        if len(path) >= MAX_DEPTH and isinstance(node, (dict, list)) and node:
            problems.append(
                Problem(
                    file,
                    where,
                    f"nested too deeply (the limit is {MAX_DEPTH} levels)",
                    "flatten the structure: give nested schemas a name in $defs",
                )
            )
        elif isinstance(node, dict):
            for key, value in node.items():
                if _lone_surrogate(key):
                    problems.append(
                        Problem(
                            file,
                            where,
                            f"the key {key!r} holds a lone surrogate escape",
                            "write the character itself, or a complete surrogate pair",
                        )
                    )
                else:
                    stack.append((value, (*path, key)))
        elif isinstance(node, list):
            stack.extend((value, (*path, str(i))) for i, value in enumerate(node))
        elif isinstance(node, _LongInt):
            problems.append(
                Problem(
                    file,
                    where,
                    f"an integer of {len(node.lstrip('-'))} digits is too long (at most {MAX_INT_DIGITS})",
                    "use a smaller number",
                )
            )
        elif isinstance(node, str):
            if _lone_surrogate(node):
                problems.append(
                    Problem(
                        file,
                        where,
                        "the text holds a lone surrogate escape (such as \\ud800), which UTF-8 cannot encode",
                        "write the character itself, or a complete surrogate pair",
                    )
                )
        elif isinstance(node, float) and not math.isfinite(node):
            problems.append(
                Problem(
                    file, where, "a number too large to represent (it would become Infinity)", "use a finite number"
                )
            )
    return problems


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def meta_problems(doc: Any, meta: str, file: str) -> list[Problem]:
    """Every violation of a meta-schema, deepest first, as problems."""
    problems = []
    for error in metaschema(meta).iter_errors(doc):
        best = jsonschema.exceptions.best_match([error])
        where = pointer(*best.absolute_path)
        problems.append(Problem(file, where, _explain(best), _hint(best)))
    return problems


def _explain(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        schema = error.schema if isinstance(error.schema, Mapping) else {}
        allowed = set(schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in allowed)
        if extra:
            return f"keyword(s) not allowed here: {', '.join(extra)}"
    if error.validator == "required":
        return str(error.message).replace("is a required property", "is required here")
    message = error.message
    if len(message) > 300:
        message = message[:300] + "..."
    return f"does not follow the schema format ({error.validator}): {message}"


def _hint(error: jsonschema.ValidationError) -> str:
    if error.validator == "type" and isinstance(error.instance, float) and "integer" in str(error.validator_value):
        return "write an integer without a fraction or exponent (1, not 1.0 or 1e0)"
    return "see docs/SCHEMA_FORMAT.md for what this place may hold"


@dataclass
class LoadedVersion:
    """One version's files, checked against the meta-schemas and bundled."""

    label: str
    protocol: dict[str, Any]
    definitions: dict[str, dict[str, Any]]
    def_files: dict[str, str]
    files: dict[str, bytes] = field(repr=False)

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for name in sorted(self.files):
            h.update(name.encode() + b"\0" + self.files[name] + b"\0")
        return h.hexdigest()

    def file_of(self, name: str) -> str:
        return self.def_files.get(name, f"{self.label}/{PROTOCOL_FILE}")


def load_version(source: DirSource | GitSource) -> LoadedVersion:
    """Load, parse and meta-check every file of a version folder; raise SchemaError on any problem."""
    names = source.files()
    label = source.label.rstrip("/")
    files = {name: source.read(name) for name in names}
    problems: list[Problem] = []
    docs: dict[str, Any] = {}
    for name, data in files.items():
        display = f"{label}/{name}"
        try:
            docs[name] = parse_json(data, display)
        except SchemaError as exc:
            problems.extend(exc.problems)
    if PROTOCOL_FILE not in files:
        problems.append(
            Problem(
                f"{label}/{PROTOCOL_FILE}",
                "",
                "missing",
                "every version folder needs a protocol.json (see docs/SCHEMA_FORMAT.md)",
            )
        )
    if problems:
        raise SchemaError(problems)

    for name, doc in docs.items():
        meta = "protocol" if name == PROTOCOL_FILE else "area"
        problems.extend(meta_problems(doc, meta, f"{label}/{name}"))
    if problems:
        raise SchemaError(problems)

    definitions: dict[str, dict[str, Any]] = {}
    def_files: dict[str, str] = {}
    for name in names:
        if name == PROTOCOL_FILE:
            continue
        display = f"{label}/{name}"
        for def_name, schema in docs[name]["$defs"].items():
            if def_name in definitions:
                problems.append(
                    Problem(
                        display,
                        pointer("$defs", def_name),
                        f"definition {def_name!r} is already defined in {def_files[def_name]}",
                        "a name may be defined in one file only; rename or remove one",
                    )
                )
                continue
            definitions[def_name] = schema
            def_files[def_name] = display
    if problems:
        raise SchemaError(problems)
    return LoadedVersion(label, docs[PROTOCOL_FILE], definitions, def_files, files)


def load_crossversion(path: Path, label: str) -> dict[str, Any]:
    if not path.is_file():
        raise SchemaError([Problem(label, "", "missing", "create it (see docs/SCHEMA_FORMAT.md)")])
    try:
        data = read_bounded(path, label)
    except OSError as exc:
        raise UsageError(f"{label}: cannot be read ({exc.strerror})") from None
    doc = parse_json(data, label)
    problems = meta_problems(doc, "crossversion", label)
    if problems:
        raise SchemaError(problems)
    assert isinstance(doc, dict)  # the meta-schema requires an object
    return doc
