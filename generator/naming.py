"""Python names for wire names: one rule, used by every renderer."""

from __future__ import annotations

import re

# Python's keywords, spelled out rather than read from the running
# interpreter's ``keyword`` module: the generated attribute names must not
# depend on which Python runs the generator (3.12 made ``type`` a soft
# keyword, and renaming every ``type`` field to ``type_`` would break the API).
# This is the hard keyword list of every supported version, 3.10 to 3.13, plus
# the soft keywords of 3.10 and 3.11 that earlier output already renamed.
KEYWORDS = frozenset(
    {
        "False",
        "None",
        "True",
        "and",
        "as",
        "assert",
        "async",
        "await",
        "break",
        "class",
        "continue",
        "def",
        "del",
        "elif",
        "else",
        "except",
        "finally",
        "for",
        "from",
        "global",
        "if",
        "import",
        "in",
        "is",
        "lambda",
        "nonlocal",
        "not",
        "or",
        "pass",
        "raise",
        "return",
        "try",
        "while",
        "with",
        "yield",
    }
)
SOFT_KEYWORDS = frozenset({"_", "case", "match"})

# Attributes of pydantic's BaseModel that a field must not shadow.
_RESERVED = {
    "construct",
    "copy",
    "dict",
    "from_orm",
    "json",
    "parse_file",
    "parse_obj",
    "parse_raw",
    "schema",
    "schema_json",
    "update_forward_refs",
    "validate",
    "fields",
    "to_wire",
    "to_json",
}


def snake_case(wire: str) -> str:
    """``sessionId`` -> ``session_id``, ``_meta`` -> ``meta``, ``mimeType`` -> ``mime_type``."""
    name = wire.lstrip("_$") or "field"
    name = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    name = re.sub(r"[^0-9A-Za-z_]", "_", name).lower()
    if name[0].isdigit():
        name = "field_" + name
    return name


def field_name(wire: str) -> str:
    """The attribute name of a wire property: snake_case, never a keyword or a pydantic attribute."""
    name = snake_case(wire)
    if name in KEYWORDS or name in SOFT_KEYWORDS or name in _RESERVED or name.startswith("model_"):
        name += "_"
    return name


def method_name(wire: str) -> str:
    """``session/set_mode`` -> ``session_set_mode``; ``$/cancel_request`` -> ``cancel_request``."""
    name = wire.removeprefix("$/")
    name = re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_")
    return snake_case(name)


def constant_name(wire: str) -> str:
    return method_name(wire).upper()
