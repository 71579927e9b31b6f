"""Open unions and unions with a default branch, as the models read them (``FAST_UNION``).

A model looks such a union's tag up inside pydantic-core (no Python call for
a valid message), while the union alias itself, and every rejected message,
goes through the precise lookup (``tag_discriminator``). Checked here:

- a valid message of known tags makes no Python call in validation;
- the native and the precise forms accept exactly the same payloads (every
  fixture, and unknown, absent and malformed tags of every such union) with
  the same result;
- a rejected message's errors are the precise form's, through every entry point.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Annotated, Any

import pytest
from conftest import GENERATED, VERSIONS, api, fixture_files, load_fixture, payload_of
from pydantic import TypeAdapter, ValidationError

from acp_types._runtime import (
    _TAG_UNIONS,
    DEFAULT_TAG,
    FAST_UNION,
    UNKNOWN_TAG,
    _fast,
    precise_validator,
)

CHUNK = {
    "sessionId": "s1",
    "update": {
        "sessionUpdate": "agent_message_chunk",
        "messageId": "m1",
        "content": {"type": "text", "text": "hello", "_meta": {"k": [1, None]}},
    },
}
TOOL_CALL_UPDATE = {
    "sessionId": "s1",
    "update": {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "done"}}],
    },
}


@contextmanager
def python_calls() -> Iterator[list[str]]:
    """The Python functions of acp_types and pydantic called inside the block (C functions are not counted)."""
    seen: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        if event == "call" and ("acp_types" in code.co_filename or "pydantic" in code.co_filename):
            seen.append(code.co_name)

    sys.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(None)


@pytest.mark.parametrize("payload", [CHUNK, TOOL_CALL_UPDATE], ids=["agent_message_chunk", "tool_call_update"])
def test_a_valid_v2_update_is_validated_without_a_python_call(payload: dict[str, Any]) -> None:
    model = api("v2").METHODS["session/update"].params
    text = json.dumps(payload)
    assert model.model_validate_json(text, by_name=False).to_wire() == payload  # built before counting
    fast = _fast(model)
    data = json.loads(text)
    for validate in (lambda: fast.validate_json(text, strict=True, by_name=False),
                     lambda: fast.validate_python(data, strict=True, by_name=False)):
        with python_calls() as calls:
            validate()
        assert calls == [], calls
    with python_calls() as calls:
        model.model_validate_json(text, by_name=False)
    assert set(calls) <= {"model_validate_json", "_fast"}, calls


def _native_unions(version: str) -> list[tuple[str, Any]]:
    models = api(version).models
    out = []
    for name in sorted(vars(models)):
        alias = getattr(models, name)
        value = getattr(alias, "__value__", None)
        if type(alias).__name__ != "TypeAliasType" or value is None:
            continue
        if any(getattr(m, "discriminator", None) in _TAG_UNIONS for m in getattr(value, "__metadata__", ())):
            out.append((name, alias))
    return out


def _outcome(validate: Callable[[Any], Any], data: Any) -> tuple[str, Any]:
    try:
        value = validate(data)
    except ValidationError:
        return ("rejected", None)
    return (type(value).__name__, value.to_wire())


def _tag_probes(tag: str, known: frozenset[str]) -> list[Any]:
    probes: list[Any] = [{}, {"x": 1}, "text", 5, None, []]
    for value in [*sorted(known), "_acme/custom", "future_kind", UNKNOWN_TAG, DEFAULT_TAG, 5, None, True, ["x"], {}]:
        probes.append({tag: value})
        probes.append({tag: value, "payload": {"deep": [1, None]}, "_meta": {"m": 1}})
    return probes


@pytest.mark.parametrize("version", VERSIONS)
def test_native_and_precise_unions_accept_the_same_tags(version: str) -> None:
    unions = _native_unions(version)
    assert unions, f"{version} has no union read natively"
    for name, alias in unions:
        (disc,) = [m.discriminator for m in alias.__value__.__metadata__ if getattr(m, "discriminator", None)]
        spec = _TAG_UNIONS[disc]
        native = TypeAdapter(Annotated[alias, FAST_UNION])
        precise = TypeAdapter(alias)
        for data in _tag_probes(spec.wire, spec.known):
            a = _outcome(partial(native.validate_python, strict=True), data)
            b = _outcome(partial(precise.validate_python, strict=True), data)
            assert a == b, (version, name, data)


def _fixture_payloads() -> Iterator[Any]:
    for path in fixture_files():
        fx = load_fixture(path)
        part, payload = payload_of(fx["message"])
        if part == "error":
            continue
        for version in fx["versions"]:
            spec = api(version).METHODS[fx["method"]]
            tp = spec.params if part == "params" else spec.result
            if isinstance(tp, type) and tp is not None:
                yield pytest.param(version, tp, payload, id=f"{version}:{path.name}")


@pytest.mark.parametrize("version, model, payload", list(_fixture_payloads()))
def test_native_and_precise_models_agree_on_every_fixture(version: str, model: Any, payload: Any) -> None:
    fast = _fast(model)
    precise = precise_validator(model)
    a = _outcome(lambda d: fast.validate_python(d, strict=True, by_name=False), payload)
    b = _outcome(lambda d: precise.validate_python(d, strict=True, by_name=False), payload)
    assert a == b
    text = json.dumps(payload)
    a = _outcome(lambda d: fast.validate_json(d, strict=True, by_name=False), text)
    b = _outcome(lambda d: precise.validate_json(d, strict=True, by_name=False), text)
    assert a == b


BAD_CHUNK = {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
                                          "content": {"type": "text", "text": "hi"}}}
BAD_CONTENT = {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "messageId": "m",
                                            "content": {"type": "text", "text": 5}}}


@pytest.mark.parametrize("data, loc", [
    (BAD_CHUNK, ("update", "agent_message_chunk", "messageId")),
    (BAD_CONTENT, ("update", "agent_message_chunk", "content", "text", "text")),
])
def test_a_rejected_message_gets_the_precise_errors_through_every_entry_point(data: dict[str, Any],
                                                                             loc: tuple[Any, ...]) -> None:
    assert_precise_everywhere(data, loc)


def test_a_forced_rebuild_keeps_the_precise_errors_everywhere() -> None:
    # pydantic's forced rebuild of a complete class does not call __pydantic_on_complete__:
    # the validator it builds must still be the one every entry point reads, precise errors and all
    model = api("v2").UpdateSessionNotification
    model.model_rebuild()
    model.model_rebuild(force=True)
    assert_precise_everywhere(BAD_CHUNK, ("update", "agent_message_chunk", "messageId"))


def assert_precise_everywhere(data: dict[str, Any], loc: tuple[Any, ...]) -> None:
    v2 = api("v2")
    model = v2.UpdateSessionNotification
    text = json.dumps(data)
    entry_points: list[Callable[[], Any]] = [
        lambda: model.model_validate(data),
        lambda: model.model_validate_json(text),
        lambda: TypeAdapter(model).validate_python(data),
        lambda: TypeAdapter(model).validate_json(text),
        lambda: model(**data),
        lambda: v2.parse_params("session/update", data),
    ]
    for call in entry_points:
        with pytest.raises(ValidationError) as info:
            call()
        assert [e["loc"] for e in info.value.errors()] == [loc]


_ADAPTER_FIRST = """
import json
from pydantic import TypeAdapter, ValidationError
import acp_types.v2 as v2
model = v2.UpdateSessionNotification
data = json.loads({data!r})
out = {{}}
def locs(call):
    try:
        call()
    except ValidationError as exc:
        return [list(e["loc"]) for e in exc.errors()]
    return None
# no entry point has completed the class yet: each adapter is made from scratch
assert not model.__pydantic_complete__
out["python"] = locs(lambda: TypeAdapter(model).validate_python(data))
out["json"] = locs(lambda: TypeAdapter(model).validate_json(json.dumps(data)))
out["list"] = locs(lambda: TypeAdapter(list[model]).validate_python([data]))
good = dict(data, update=dict(data["update"], messageId="m", content={{"type": "text", "text": "hi"}}, extra=1))
value = TypeAdapter(model).validate_python(good)
out["good"] = [value.to_json(), model.model_validate(good).to_json()]
print(json.dumps(out))
"""


@pytest.mark.parametrize("data, loc", [
    (BAD_CHUNK, ["update", "agent_message_chunk", "messageId"]),
    (BAD_CONTENT, ["update", "agent_message_chunk", "content", "text", "text"]),
])
def test_an_adapter_made_before_the_class_is_used_gives_the_precise_errors(data: dict[str, Any],
                                                                           loc: list[Any]) -> None:
    # pydantic builds the validator of a TypeAdapter of a class not completed
    # yet itself, from the class's schema; without AcpModel's schema hook that
    # validator reported every alternative of the native union, so the errors
    # depended on whether anything had used the class before (a fresh process)
    code = _ADAPTER_FIRST.format(data=json.dumps(data))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=GENERATED, check=False)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["python"] == out["json"] == [loc]
    assert out["list"] == [[0, *loc]]
    ours, theirs = out["good"]
    assert ours == theirs and '"extra":1' in ours


def test_acp_types_own_schemas_carry_no_precise_hook() -> None:
    # the hook is for a user's adapter only: a class's own schema, the store's
    # and the envelopes' are pydantic's, with no Python call added
    from acp_types import _build

    v2 = api("v2")
    model = v2.UpdateSessionNotification
    model.model_rebuild()
    for schema in (model.__pydantic_core_schema__, _build.generate_schema(model)):
        assert "_precise_on_rejection" not in repr(schema)
