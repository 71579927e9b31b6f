"""The validators behind the wire entry points: the models' own schema, with errors bounded.

pydantic reports every invalid item of an array (and every invalid value of a
map), and each report costs a few hundred bytes: a message of a million
two-byte invalid items would cost hundreds of times its size. The entry points
(``parse_params``, ``parse_result``, ``parse_message``) therefore validate
with a copy of each payload type's core schema in which

- every array and map stops at its first invalid item (``fail_fast``), so a
  report holds at most one item per collection;
- an array the schema marks ``x-acp-invalid-items: skip`` keeps its
  tolerant meaning: when it does not validate as a whole, its items are tried
  one at a time and the invalid ones dropped, so memory stays in proportion to
  the message while every valid item is kept.

Validation results are those of the models' own validators; only the error
reports are shorter (the first invalid item of each collection). The models'
own ``model_validate`` is unchanged.

Hand-written: the source is runtime/_validators.py, which the generator copies
into the package unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import partial
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import SchemaValidator, core_schema

_COLLECTIONS = frozenset({"list", "dict", "set", "frozenset", "tuple"})


def bounded_validator(tp: Any) -> Callable[..., Any]:
    """``validate_python`` of ``tp`` (a model class or a union alias), with bounded error reports."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        tp.model_rebuild()
        schema: Any = tp.__pydantic_core_schema__
    else:
        from pydantic import TypeAdapter

        schema = TypeAdapter(tp).core_schema
    schema = copy.deepcopy(schema)
    _bound(schema)
    return SchemaValidator(schema).validate_python


def _bound(node: Any) -> None:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, list):
            stack.extend(n)
            continue
        if not isinstance(n, dict):
            continue
        kind = n.get("type")
        if not isinstance(kind, str):
            # a map of names to schemas (model fields, union choices): a
            # field may be called "type", "default" or anything else
            stack.extend(v for v in n.values() if isinstance(v, (dict, list)))
            continue
        if kind in _COLLECTIONS:
            n["fail_fast"] = True
        elif kind == "model":
            _tolerant_arrays(n)
        for key, value in n.items():
            if key in ("metadata", "serialization", "cls", "function", "default"):
                continue
            if isinstance(value, (dict, list)):
                stack.append(value)


def _tolerant_arrays(model: dict[str, Any]) -> None:
    cls = model.get("cls")
    fields = getattr(cls, "_acp_tolerant_fields", ())
    inner = model.get("schema", {})
    if inner.get("type") != "model-fields":
        return
    for spec in fields:
        if not spec.skip_invalid_items:
            continue
        field = inner["fields"].get(spec.attr)
        if field is None:
            continue
        holder, key = field, "schema"
        while holder[key].get("type") in ("default", "nullable"):
            holder, key = holder[key], "schema"
        target = holder[key]
        if target.get("type") != "list":
            continue
        holder[key] = core_schema.no_info_wrap_validator_function(
            _skip_invalid_items, target
        )


def _skip_invalid_items(value: Any, handler: Callable[[Any], Any]) -> Any:
    try:
        return handler(value)
    except ValidationError:
        if type(value) is not list:
            raise
    kept = []
    for item in value:
        try:
            handler([item])
        except ValidationError:
            continue
        kept.append(item)
    return handler(kept)


def bind(tp: Any) -> Callable[[Any], Any]:
    """The entry points' validator of ``tp``: strict, wire names only, bounded errors."""
    return partial(bounded_validator(tp), strict=True, by_name=False)
