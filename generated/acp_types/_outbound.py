"""What this side sends is checked strictly: tolerance is for what we receive, never for what we send.

The models' validators are tolerant where the protocol asks receivers to be
(a malformed optional field is dropped, an invalid item of some arrays is
skipped, unknown keys are kept). Applied to a handler's own answer, that
would send something other than what the handler returned: a ``session/load``
answer ``{"modes": 3}`` would go out as ``{}``. :func:`check_result` refuses
instead, naming the version, the type and the JSON pointer.

Hand-written: the source is runtime/_outbound.py, copied into the package unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ._runtime import UnknownVariant

__all__ = ["InvalidOutbound", "check_result"]


class InvalidOutbound(ValueError):
    """A handler's answer is not a valid result of its method in the connection's version."""


def _pointer(path: list[str]) -> str:
    return "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in path) if path else "(the root)"


def _difference(sent: Any, given: Any, path: list[str]) -> str | None:
    """Where what would be sent differs from what the handler gave, or ``None``."""
    if isinstance(given, Mapping) and isinstance(sent, Mapping):
        for key, value in given.items():
            if key not in sent:
                return f"{_pointer([*path, str(key)])}: {json.dumps(value)[:80]} is not valid there"
            found = _difference(sent[key], value, [*path, str(key)])
            if found:
                return found
        return None
    if isinstance(given, list) and isinstance(sent, list):
        if len(given) != len(sent):
            return f"{_pointer(path)}: some items are not valid there"
        for i, (a, b) in enumerate(zip(sent, given, strict=True)):
            found = _difference(a, b, [*path, str(i)])
            if found:
                return found
        return None
    return None if sent == given else f"{_pointer(path)}: {json.dumps(given)[:80]} is not valid there"


def _unknown_key(model: Any, path: list[str]) -> str | None:
    """The first key a model carries that its type does not define (``_``-prefixed extensions aside)."""
    if isinstance(model, UnknownVariant):
        return None  # an unknown variant is all its own keys, sent on purpose
    if isinstance(model, BaseModel):
        for key in model.__pydantic_extra__ or {}:
            if not str(key).startswith("_"):
                return _pointer([*path, str(key)])
        for name, info in type(model).model_fields.items():
            value = getattr(model, name, None)
            found = _unknown_key(value, [*path, info.alias or name])
            if found:
                return found
    elif isinstance(model, (list, tuple)):
        for i, item in enumerate(model):
            found = _unknown_key(item, [*path, str(i)])
            if found:
                return found
    return None


def check_result(method: str, version: str, type_name: str, given: Any, model: Any) -> None:
    """Raise :class:`InvalidOutbound` unless ``model`` (validated from ``given``) sends exactly what was given."""
    where = f"the result of {method!r} is not a valid ACP {version} {type_name}"
    if isinstance(given, Mapping):
        normal = json.loads(json.dumps(given, allow_nan=False, default=str))
        sent = model.to_wire() if hasattr(model, "to_wire") else model
        found = _difference(sent, normal, [])
        if found:
            raise InvalidOutbound(f"{where}: {found}")
    unknown = _unknown_key(model, [])
    if unknown:
        raise InvalidOutbound(f"{where}: {unknown} is not a field of it")
