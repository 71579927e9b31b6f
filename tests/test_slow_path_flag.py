"""The slow path of a key spelled like an attribute is taken for that message only.

The key check (``WireKey``) notes the key in a per-thread set; the entry points
read it once after validating and clear it when it is set (``_runtime._Seen``).
These tests hold that contract: a message with such a key goes the slow path
and gets its result, the next message without one does not go it, a rejected
message leaves nothing behind, and a flag left set by a validation outside the
entry points costs one slow validation and never a different result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from acp_types import _runtime, v1

PLAIN = {"cwd": "/p", "mcpServers": []}
SPELLED = {"cwd": "/p", "mcpServers": [], "meta": 5, "mcp_servers": "x"}
BAD = {"cwd": 5, "mcpServers": [], "meta": 5}


def _entry_points() -> dict[str, Callable[[dict[str, Any]], Any]]:
    new = v1.models.NewSessionRequest
    return {
        "model_validate": lambda d: new.model_validate(d, by_name=False),
        "model_validate_json": lambda d: new.model_validate_json(json.dumps(d), by_name=False),
        "parse_params": lambda d: v1.parse_params("session/new", d),
    }


@pytest.fixture
def slow_calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    real = _runtime._again

    def counting(validate: Any, data: Any, **options: Any) -> Any:
        calls.append(data)
        return real(validate, data, **options)

    monkeypatch.setattr(_runtime, "_again", counting)
    _runtime._SEEN.keys = None
    return calls


@pytest.mark.parametrize("entry", sorted(_entry_points()))
def test_slow_path_for_that_message_only(entry: str, slow_calls: list[Any]) -> None:
    validate = _entry_points()[entry]
    spelled = validate(SPELLED)
    assert len(slow_calls) == 1
    # the slow path's result: the attribute spellings are unknown keys, not set fields
    assert spelled.meta is None and spelled.mcp_servers == []
    assert spelled.to_wire() == SPELLED
    plain = validate(PLAIN)
    assert len(slow_calls) == 1, "a message without such a key went the slow path"
    assert plain.to_wire() == PLAIN
    assert _runtime._SEEN.keys is None


@pytest.mark.parametrize("entry", sorted(_entry_points()))
def test_rejected_message_leaves_no_flag(entry: str, slow_calls: list[Any]) -> None:
    validate = _entry_points()[entry]
    with pytest.raises(ValidationError):
        validate(BAD)
    assert _runtime._SEEN.keys is None
    validate(PLAIN)
    assert slow_calls == []


@pytest.mark.parametrize("entry", sorted(_entry_points()))
def test_flag_left_by_another_validation_changes_no_result(entry: str, slow_calls: list[Any]) -> None:
    # a user's own TypeAdapter runs the key check too, and reads no flag
    TypeAdapter(v1.models.NewSessionRequest).validate_python(SPELLED, by_name=False)
    assert _runtime._SEEN.keys == {"meta", "mcp_servers"}
    validate = _entry_points()[entry]
    assert validate(PLAIN).to_wire() == PLAIN
    assert _runtime._SEEN.keys is None
    assert len(slow_calls) <= 1
    validate(PLAIN)
    assert len(slow_calls) <= 1


def test_entry_points_read_the_current_validator_after_a_rebuild() -> None:
    class Sub(v1.models.NewSessionRequest):
        pass

    assert Sub.model_validate_json(json.dumps(SPELLED), by_name=False).to_wire() == SPELLED
    Sub.model_rebuild(force=True)
    assert Sub.model_validate(SPELLED, by_name=False).to_wire() == SPELLED
    assert Sub.model_validate(PLAIN, by_name=False).to_wire() == PLAIN


def test_a_key_spelled_with_the_escape_character_is_kept_as_it_came() -> None:
    # the slow path escapes the spellings it found with a private-use prefix: a key that
    # starts with that character already is escaped too, and comes back unchanged
    odd = {**SPELLED, "\ue000meta": 1, "_meta": {"meta": 2, "\ue000": 3}}
    model = v1.parse_params("session/new", odd)
    assert model.to_wire() == odd
    assert model.meta == {"meta": 2, "\ue000": 3}
    assert model.model_fields_set == {"cwd", "mcp_servers", "meta", "\ue000meta"}


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_no_attribute_spelling_is_a_wire_name_in_its_version(version: str) -> None:
    # the slow path escapes the spellings it met wherever they occur in the message: that
    # changes nothing only while no model of the version has such a key as its wire name
    import importlib

    from pydantic import BaseModel

    models = importlib.import_module(f"acp_types.{version}.models")
    classes = [c for c in vars(models).values() if isinstance(c, type) and issubclass(c, BaseModel)]
    wire = {f.alias or name for c in classes for name, f in c.model_fields.items()}
    spellings = {name for c in classes for name, f in c.model_fields.items() if f.alias and f.alias != name}
    assert len(spellings) > 50
    assert not spellings & wire, sorted(spellings & wire)
