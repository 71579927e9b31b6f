"""The validators behind the wire entry points: the models' own schema, with errors bounded.

pydantic reports every invalid item of an array (and every invalid value of a
map), and each report costs a few hundred bytes: a message of a million
two-byte invalid items would cost hundreds of times its size. The entry points
(``parse_params``, ``parse_result``, ``parse_message``) therefore validate
with a copy of each payload type's core schema in which

- every array and map stops at its first invalid item (``fail_fast``), so a
  report holds at most one item per collection. An array the schema marks
  ``x-acp-invalid-items: skip`` keeps its tolerant meaning: its items are
  ``OnErrorOmit`` in the models, so an invalid one is dropped where it is
  met and never reaches a report.

Validation results are those of the models' own validators; only the error
reports are shorter (the first invalid item of each collection). The models'
own ``model_validate`` is unchanged.

Hand-written: the source is runtime/_validators.py, which the generator copies
into the package unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, partial
from typing import Any

from pydantic_core import SchemaValidator

_COLLECTIONS = frozenset({"list", "dict", "set", "frozenset", "tuple"})


def bounded_validator(tp: Any, precise: bool = False) -> Callable[..., Any]:
    """``validate_python`` of ``tp`` (a model class or a union alias), with bounded error reports.

    ``precise``: every native union in its precise form (``acp_types._runtime.precise_schema``),
    the validator whose errors a rejected payload gets.
    """
    from ._runtime import core_schema_of, precise_schema

    if not precise and isinstance(tp, type):
        # a payload class with a stored entry: its bounded copy was stored beside its schema
        from ._build import bounded_validator as stored

        validator = stored(tp)
        if validator is not None:
            return validator.validate_python  # type: ignore[no-any-return]
    schema: Any = core_schema_of(tp)
    if precise:
        # precise_schema copies every node it changes or passes (metadata aside, which _bound skips)
        return _bounded(precise_schema(schema)).validate_python
    return bounded_schema_validator(schema).validate_python


def bounded_schema_validator(schema: Any) -> SchemaValidator:
    """The validator of a core schema with bounded error reports (Python and JSON input); ``schema`` is left as it is."""
    return _bounded(_copy_containers(schema))


def _bounded(schema: Any) -> SchemaValidator:
    from ._runtime import own_validator

    _bound(schema)
    return own_validator(schema)


def _copy_containers(node: Any) -> Any:
    """A copy of the dicts and lists of a core schema, sharing every other value (classes, functions).

    ``_bound`` changes only dicts, so this is all the copy it needs; it is
    several times faster than ``copy.deepcopy``, which was a tenth of the first
    message after import.
    """
    if type(node) is dict:
        return {k: _copy_containers(v) for k, v in node.items()}
    if type(node) is list:
        return [_copy_containers(v) for v in node]
    return node


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
        for key, value in n.items():
            if key in ("metadata", "serialization", "cls", "function", "default"):
                continue
            if isinstance(value, (dict, list)):
                stack.append(value)


@cache
def bind(tp: Any, precise: bool = False) -> Callable[[Any], Any]:
    """The entry points' validator of ``tp``: strict, wire names only, bounded errors."""
    return partial(bounded_validator(tp, precise), strict=True, by_name=False)
