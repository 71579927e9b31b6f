"""Python names for wire names: one rule, used by every renderer."""

from __future__ import annotations

import keyword
import re

# Attributes of pydantic's BaseModel that a field must not shadow.
_RESERVED = {
    "construct", "copy", "dict", "from_orm", "json", "parse_file", "parse_obj",
    "parse_raw", "schema", "schema_json", "update_forward_refs", "validate",
    "fields", "to_wire", "to_json",
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
    if keyword.iskeyword(name) or keyword.issoftkeyword(name) or name in _RESERVED or name.startswith("model_"):
        name += "_"
    return name


def method_name(wire: str) -> str:
    """``session/set_mode`` -> ``session_set_mode``; ``$/cancel_request`` -> ``cancel_request``."""
    name = wire.removeprefix("$/")
    name = re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_")
    return snake_case(name)


def constant_name(wire: str) -> str:
    return method_name(wire).upper()
