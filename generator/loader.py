"""Read a version's schema files, check them against the meta-schemas, bundle them.

Nothing here knows about Python: the result is validated JSON, ready for
``generator.model`` to turn into the intermediate model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from generator.errors import Problem, SchemaError, pointer
from generator.sources import DirSource, GitSource

META_DIR = Path(__file__).parent / "metaschemas"
PROTOCOL_FILE = "protocol.json"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


@cache
def meta_document(name: str) -> dict[str, Any]:
    """One meta-schema of the schema format, as JSON."""
    doc: dict[str, Any] = json.loads((META_DIR / f"{name}.schema.json").read_text("utf-8"))
    return doc


@cache
def metaschema(name: str) -> jsonschema.protocols.Validator:
    return jsonschema.Draft202012Validator(meta_document(name))


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def parse_json(data: bytes, file: str) -> Any:
    """Parse JSON strictly: UTF-8, no duplicate keys, no NaN; problems carry line and column."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SchemaError([Problem(file, "", f"not UTF-8 text (byte {exc.start})",
                                   "save the file as UTF-8")]) from None
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates,
                          parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise SchemaError([Problem(file, "", f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
                                   "fix the JSON syntax there")]) from None
    except _DuplicateKey as exc:
        raise SchemaError([Problem(file, "", f"key {exc.args[0]!r} appears twice in one object",
                                   "keep one of the two entries")]) from None
    except ValueError as exc:
        raise SchemaError([Problem(file, "", str(exc), "use only standard JSON values")]) from None


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
        problems.append(Problem(f"{label}/{PROTOCOL_FILE}", "", "missing",
                                "every version folder needs a protocol.json (see docs/SCHEMA_FORMAT.md)"))
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
                problems.append(Problem(display, pointer("$defs", def_name),
                                        f"definition {def_name!r} is already defined in {def_files[def_name]}",
                                        "a name may be defined in one file only; rename or remove one"))
                continue
            definitions[def_name] = schema
            def_files[def_name] = display
    if problems:
        raise SchemaError(problems)
    return LoadedVersion(label, docs[PROTOCOL_FILE], definitions, def_files, files)


def load_crossversion(path: Path, label: str) -> dict[str, Any]:
    if not path.is_file():
        raise SchemaError([Problem(label, "", "missing", "create it (see docs/SCHEMA_FORMAT.md)")])
    doc = parse_json(path.read_bytes(), label)
    problems = meta_problems(doc, "crossversion", label)
    if problems:
        raise SchemaError(problems)
    assert isinstance(doc, dict)  # the meta-schema requires an object
    return doc
