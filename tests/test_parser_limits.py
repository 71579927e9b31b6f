"""The parser under hostile input: each test pins one finding of issue 14 (items 10 to 18).

What every wire entry point promises (``acp_types._wire``, README "Limits of
the parser"): validation does not depend on what ran before in the process;
numbers are finite; one depth limit holds for text and decoded input alike;
only documented exceptions are raised; what is accepted writes back to JSON
that reads again to the same; a key twice in one object is refused; a
message costs memory in proportion to its size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from conftest import GENERATED, ROOT, VERSIONS, api, validator_for
from pydantic import ValidationError

from acp_types import v1
from acp_types._jsonrpc import InvalidParams, InvalidRequest, MessageError, ParseError
from acp_types._runtime import UNKNOWN_TAG, UnknownMethodError
from acp_types._wire import MAX_DEPTH, MAX_INT_DIGITS

CANCEL = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}


def outcome(version: str, data: Any, **kw: Any) -> tuple[str, Any]:
    """('ok', wire) or ('error', exception class name); fails on anything undocumented."""
    try:
        msg = api(version).parse_message(data, **kw)
    except MessageError as exc:
        return "error", type(exc).__name__
    text = msg.to_json()
    again = api(version).parse_message(text, **kw)
    assert again.to_wire() == msg.to_wire() == json.loads(text)
    return "ok", msg.to_wire()


def with_params(params: Any, method: str = "_acme/echo", *, notification: bool = False) -> dict[str, Any]:
    if notification:
        return {"jsonrpc": "2.0", "method": method, "params": params}
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}


def nested(depth: int) -> Any:
    """A value whose containers nest ``depth`` deep (objects and arrays in turn)."""
    value: Any = 0
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def nested_text(depth: int) -> str:
    """The JSON text of ``nested(depth)``, however deep."""
    text = "0"
    for i in range(depth):
        text = "[" + text + "]" if i % 2 else '{"k":' + text + "}"
    return text


# --------------------------------------------------------------------------
# 10. Validation does not depend on what ran before in the process

ORDER_SCRIPT = r"""
import json, sys
from pathlib import Path
from pydantic import ValidationError
import acp_types.v1 as v1, acp_types.v2 as v2
from acp_types._runtime import AcpModel

order = sys.argv[1]
apis = {"v1": v1, "v2": v2}
probes = json.loads(Path(sys.argv[2]).read_text("utf-8"))
if order == "models-first":
    # build every model class on its own before any union payload builds it
    for m in (v1, v2):
        for obj in vars(m.models).values():
            if isinstance(obj, type) and issubclass(obj, AcpModel):
                try:
                    obj.model_validate({})
                except ValidationError:
                    pass
if order == "reversed":
    probes = probes[::-1]
out = {}
for key, version, method, which, payload in probes:
    spec = apis[version].METHODS[method]
    try:
        model = spec.validate_params(payload) if which == "params" else spec.validate_result(payload)
        out[key] = ["ok", model.to_wire() if isinstance(model, AcpModel) else model]  # mcp/message: any value
    except ValidationError as exc:
        out[key] = ["error", sorted({e["type"] for e in exc.errors()})]
print(json.dumps(out, sort_keys=True))
"""


def order_probes() -> list[list[Any]]:
    """Every payload of the fixtures, plus the elicitation ids the audit used, as [key, version, method, which, payload]."""
    from conftest import fixture_files, load_fixture, payload_of

    probes = []
    for path in fixture_files():
        fx = load_fixture(path)
        which, payload = payload_of(fx["message"])
        if which == "error":
            continue
        for version in fx["versions"]:
            if fx["method"] in api(version).METHODS:
                probes.append([f"{version}:{path.name}", version, fx["method"], which, payload])
    for version in VERSIONS:
        for i, rid in enumerate((True, 7.0, "7", 1.5, None, [1])):
            payload = {"mode": "url", "requestId": rid, "elicitationId": "e1", "url": "https://x.test", "message": "m"}
            probes.append([f"{version}:requestId-{i}", version, "elicitation/create", "params", payload])
    return probes


def test_validation_gives_the_same_answer_in_any_order_in_fresh_processes(tmp_path: Any) -> None:
    probes = order_probes()
    assert len(probes) > 100
    (tmp_path / "probes.json").write_text(json.dumps(probes), "utf-8")
    env = {**os.environ, "PYTHONPATH": str(GENERATED)}
    results = {}
    for order in ("file-order", "reversed", "models-first"):
        run = subprocess.run(
            [sys.executable, "-c", ORDER_SCRIPT, order, str(tmp_path / "probes.json")],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=300,
        )
        assert run.returncode == 0, run.stderr
        results[order] = json.loads(run.stdout)
    assert results["file-order"] == results["reversed"] == results["models-first"]
    for version in VERSIONS:
        got = results["file-order"]
        assert got[f"{version}:requestId-0"][0] == "error", "true is not a request id"
        assert got[f"{version}:requestId-3"][0] == "error", "1.5 is not a request id"
        assert got[f"{version}:requestId-1"] == ["ok", {**probes[-1][4], "requestId": 7}], "7.0 is the integer 7"
        assert got[f"{version}:requestId-2"] == ["ok", {**probes[-1][4], "requestId": "7"}]


@pytest.mark.parametrize("version", VERSIONS)
def test_true_is_never_a_request_id_whatever_built_the_model_first(version: str) -> None:
    m = api(version)
    payload = {"mode": "url", "requestId": True, "elicitationId": "e1", "url": "https://x.test", "message": "m"}
    for _ in range(2):
        with pytest.raises(ValidationError):
            m.parse_params("elicitation/create", payload)
        with pytest.raises(ValidationError):
            m.models.ElicitationUrlMode.model_validate(payload, by_name=False)


# --------------------------------------------------------------------------
# 11. Finite numbers only


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("number", ["1e400", "-1e400", "1.5e309", "1" + "0" * 400 + ".0"])
def test_text_numbers_that_overflow_are_refused(version: str, number: str) -> None:
    text = '{"jsonrpc":"2.0","id":3,"method":"_acme/echo","params":{"x":' + number + "}}"
    with pytest.raises(InvalidRequest) as info:
        api(version).parse_message(text)
    assert info.value.code == -32600 and info.value.id == 3 and "finite" in str(info.value)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_decoded_numbers_that_are_not_finite_are_refused(version: str, number: float) -> None:
    m = api(version)
    for params in ({"x": number}, {"sessionId": "s1", "_meta": {"n": [number]}}):
        for method in ("_acme/echo", "session/cancel"):
            assert outcome(version, {**CANCEL, "method": method, "params": params}) == ("error", "InvalidRequest")
            with pytest.raises(ValidationError) as info:
                m.parse_params(method, params)
            assert info.value.errors()[0]["type"] == "json_limit"


@pytest.mark.parametrize("version", VERSIONS)
def test_integers_beyond_the_digit_limit_are_refused_as_text_and_decoded(version: str) -> None:
    fits = 10**MAX_INT_DIGITS - 1
    for n in (fits, -fits):
        assert outcome(version, with_params({"x": n}))[0] == "ok"
        assert outcome(version, json.dumps(with_params({"x": n})))[0] == "ok"
    for digits in (MAX_INT_DIGITS + 1, 4300, 4301, 5000):
        for sign in ("", "-"):
            n = int(sign + "1" + "0" * (digits - 1)) if digits < 4300 else (-1 if sign else 1) * 10 ** (digits - 1)
            assert outcome(version, with_params({"x": n})) == ("error", "InvalidRequest")
            text = (
                '{"jsonrpc":"2.0","id":1,"method":"_acme/echo","params":{"x":' + sign + "1" + "0" * (digits - 1) + "}}"
            )
            assert outcome(version, text) == ("error", "InvalidRequest")


# --------------------------------------------------------------------------
# 12. No name the runtime uses inside changes what a wire value means


@pytest.mark.parametrize("tag", ["zzz", "__acp_default__", UNKNOWN_TAG, "SessionConfigOptionValueId"])
def test_every_unknown_type_of_set_config_option_reads_alike(tag: str) -> None:
    # issue 25 item 8: the bundled schema reads any unknown type as the value-id branch, and so
    # do the models, whatever the tag spells (the runtime's own pydantic tags included)
    params = {"sessionId": "s1", "configId": "c1", "type": tag, "value": "v1"}
    assert validator_for("v1", "SetSessionConfigOptionRequest").is_valid(params)
    assert v1.parse_params("session/set_config_option", params).to_wire() == params
    message = with_params(params, "session/set_config_option")
    assert v1.parse_message(message).to_wire() == message
    assert v1.parse_message(json.dumps(message)).to_wire() == message


@pytest.mark.parametrize("version", VERSIONS)
def test_the_attribute_spelling_of_a_tag_selects_no_branch(version: str) -> None:
    # issue 25 item 9: the wire names the tag sessionUpdate; session_update is an unknown key
    m = api(version)
    # (v2: the state_update branch is itself an open union, keyed by state, whose unknown state
    # is an unknown variant: reached through the attribute spelling, it once read as one)
    kind = "state_update" if version == "v2" else "agent_message_chunk"
    updates = [
        {"session_update": kind, "state": "paused"},
        {"session_update": kind, "state": "idle", "content": {"type": "text", "text": "hi"}},
    ]
    for update in updates:
        _refused_everywhere(m, {"sessionId": "s1", "update": update})


def _refused_everywhere(m: Any, params: dict[str, Any]) -> None:
    assert not validator_for(m.VERSION, m.METHODS["session/update"].params.__name__).is_valid(params)
    message = with_params(params, "session/update", notification=True)
    for data in (message, json.dumps(message), json.dumps(message).encode()):
        with pytest.raises(InvalidParams):
            m.parse_message(data)
    with pytest.raises(ValidationError):
        m.parse_params("session/update", params)


def test_a_default_branch_error_names_no_runtime_tag() -> None:
    # issue 12: an unknown type reads as the untagged value-id branch ("unknown": "default") ...
    params = {"sessionId": "s1", "configId": "c1", "type": "bogus", "value": "v1"}
    read = v1.parse_params("session/set_config_option", params)
    assert read.to_wire() == params
    # ... so a bad value is that branch's error, reported at its wire path without the runtime's tag
    with pytest.raises(InvalidParams) as info:
        v1.parse_message(with_params({**params, "value": 5}, "session/set_config_option"))
    assert "value: Input should be a valid string" in str(info.value)
    assert UNKNOWN_TAG not in str(info.value)


# --------------------------------------------------------------------------
# 13. Documented exceptions only


@pytest.mark.parametrize("version", VERSIONS)
def test_lone_surrogates_are_parse_errors(version: str) -> None:
    m = api(version)
    for data in (
        '{"jsonrpc":"2.0","method":"_x","params":{"a":"\ud800"}}',
        '{"jsonrpc":"2.0","method":"_x","params":{"a":"\\ud800"}}',
        '{"jsonrpc":"2.0","method":"_x","params":{"\udfff":1}}',
        {"jsonrpc": "2.0", "method": "_x", "params": {"a": "x\udc80"}},
        {"jsonrpc": "2.0", "method": "_x", "params": {"\ud800": 1}},
    ):
        with pytest.raises(ParseError):
            m.parse_message(data)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("method", [5, None, b"session/cancel", ["session/cancel"], 1.5])
def test_a_method_that_is_not_a_string_is_unknown(version: str, method: Any) -> None:
    m = api(version)
    with pytest.raises(UnknownMethodError):
        m.parse_params(method, {"sessionId": "s1"})
    with pytest.raises(UnknownMethodError):
        m.parse_result(method, {})


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("bad", [object(), (1, 2), {1, 2}, b"x", {1: "a"}, {("k",): 1}])
def test_decoded_input_that_is_not_json_is_refused(version: str, bad: Any) -> None:
    m = api(version)
    assert outcome(version, with_params({"x": bad})) == ("error", "InvalidRequest")
    assert outcome(version, with_params({"sessionId": "s1", "_meta": {"x": bad}}, "session/cancel")) == (
        "error",
        "InvalidRequest",
    )
    with pytest.raises(ValidationError):
        m.parse_params("_acme/echo", {"x": bad})
    with pytest.raises(ValidationError):
        m.parse_params("session/cancel", {"sessionId": "s1", "x": bad})


# --------------------------------------------------------------------------
# 14. One depth limit for text and decoded input


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 199, 201, 254, 300, 1000])
def test_text_and_decoded_input_share_one_depth_limit(version: str, depth: int) -> None:
    # the message object and params are two levels, so the payload adds depth - 2
    shapes = [
        (lambda x: with_params({"x": x}), 2),
        (lambda x: with_params({"sessionId": "s1", "_meta": {"x": x}}, "session/cancel", notification=True), 3),
        (lambda x: {**with_params({}), "x-trace": x}, 1),
    ]
    for shape, levels in shapes:
        decoded = outcome(version, shape(nested(depth - levels)))
        text = outcome(version, json.dumps(shape("@@")).replace('"@@"', nested_text(depth - levels)))
        assert decoded == text
        assert (decoded[0] == "ok") == (depth <= MAX_DEPTH), (depth, decoded)
        if decoded[0] == "error":
            assert decoded[1] == "InvalidRequest"


# --------------------------------------------------------------------------
# 15. Everything accepted is written back


@pytest.mark.parametrize("version", VERSIONS)
def test_a_params_member_on_a_response_is_kept(version: str) -> None:
    m = api(version)
    for message in (
        {"jsonrpc": "2.0", "id": 1, "result": {}, "params": {"x": 1}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "m"}, "params": [1]},
    ):
        msg = m.parse_message(message, method="session/archive")
        assert msg.extra == {"params": message["params"]}
        assert msg.to_wire() == message and json.loads(msg.to_json()) == message


# --------------------------------------------------------------------------
# 16. Duplicate keys are refused


DUPLICATES = [
    '{"jsonrpc":"2.0","method":"session/cancel","method":"_acme/x","params":{"sessionId":"s1"}}',
    '{"jsonrpc":"2.0","id":1,"id":2,"method":"_acme/x","params":{}}',
    '{"jsonrpc":"2.0","method":"_acme/x","params":{"a":{"b":1,"b":1}}}',
    '{"jsonrpc":"2.0","method":"_acme/x","params":[{"url":"https://a","url":"https://b"}]}',
    '{"jsonrpc":"2.0","method":"session/cancel","\\u006dethod":"_acme/x","params":{"sessionId":"s1"}}',
    '{"jsonrpc":"2.0","method":"_acme/x","params":{"a:b":1,"a:b":2}}',
    '{"jsonrpc":"2.0","method":"_acme/x","params":{"a":1,"a":1,"c":"\\u003a"}}',
    '{"jsonrpc":"2.0","method":"_acme/x","params":{"a":"x:y","a":"x:y"}}',
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("text", DUPLICATES)
def test_a_key_twice_in_one_object_is_refused(version: str, text: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        api(version).parse_message(text)
    assert "twice" in str(info.value) and info.value.data is None


@pytest.mark.parametrize("version", VERSIONS)
def test_colons_and_escapes_without_duplicates_are_fine(version: str) -> None:
    for params in (
        {"a": "https://x.test:8080/p?q=a:b", "b:c": "::", "d": {"e:": ":f"}},
        {"a": "\u003a", "\u003a": "x", "a2": [":", {"::": ""}]},
    ):
        for text in (json.dumps(with_params(params)), json.dumps(with_params(params), ensure_ascii=True)):
            assert outcome(version, text) == ("ok", with_params(params))


# --------------------------------------------------------------------------
# 17. 1.0 is an integer, as JSON Schema and jsonschema count it


@pytest.mark.parametrize("version", VERSIONS)
def test_an_integral_float_is_an_integer_where_one_is_expected(version: str) -> None:
    m = api(version)
    definition = m.METHODS["initialize"].params.__name__
    minimal = {"v1": {}, "v2": {"info": {"name": "zed", "version": "1"}, "capabilities": {}}}[version]
    for number, ok in ((1.0, True), (1, True), (1.5, False), (True, False)):
        params = {**minimal, "protocolVersion": number}
        by_schema = validator_for(version, definition).is_valid(params)
        try:
            parsed = m.parse_params("initialize", params)
        except ValidationError:
            parsed = None
        assert (parsed is not None) == by_schema == ok, number
        if parsed is not None:
            assert parsed.to_wire()["protocolVersion"] == 1 and type(parsed.to_wire()["protocolVersion"]) is int
    # a float elsewhere keeps its notation
    parsed = m.parse_params("initialize", {"protocolVersion": 1.0, **minimal, "x-ext": 2.0})
    assert json.loads(parsed.to_json()) == {"protocolVersion": 1, **minimal, "x-ext": 2.0}
    assert parsed.to_json().startswith('{"protocolVersion":1,') and parsed.to_json().endswith('"x-ext":2.0}')
    err = m.parse_message('{"jsonrpc":"2.0","id":1,"error":{"code":-32002.0,"message":"gone"}}')
    assert err.to_wire()["error"] == {"code": -32002, "message": "gone"}


# --------------------------------------------------------------------------
# 18. Memory in proportion to the message

MEMORY_SCRIPT = r"""
import json, resource, sys
import acp_types.v1 as v1, acp_types.v2 as v2
shape, n = sys.argv[1], int(sys.argv[2])
items = ",".join(['{"a":12}'] * n)
if shape == "skip-array":       # a tolerant array whose items are all invalid
    text = '{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s","configOptions":[' + items + ']}}'
    method = "session/new"
else:                           # a strict array whose items are all invalid
    text = '{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[' + items + ']}}'
    method = None
v1.parse_message('{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}', method="session/new")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    v1.parse_message(text, method=method)
except v1.MessageError:
    pass
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"size": len(text), "grown": (after - before) * 1024}))
"""

MEMORY_FACTOR = 40
"""Peak growth allowed while reading one message, in multiples of its size."""


@pytest.mark.parametrize("shape", ["skip-array", "strict-array"])
def test_a_message_costs_memory_in_proportion_to_its_size(shape: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(GENERATED)}
    run = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT, shape, "200000"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    figures = json.loads(run.stdout)
    assert figures["grown"] <= MEMORY_FACTOR * figures["size"], figures


def test_a_tolerant_array_keeps_every_valid_item_among_many_invalid_ones() -> None:
    good = [
        {
            "id": f"o{i}",
            "name": "Option",
            "type": "select",
            "currentValue": "a",
            "options": [{"value": "a", "name": "A"}],
        }
        for i in range(3)
    ]
    bad = [{"a": 12}, 5, {"id": "x", "type": "select"}, None]
    items = [good[0], bad[0], bad[1], good[1], bad[2], bad[3], good[2], bad[0]]
    result = {"sessionId": "s1", "configOptions": items}
    for parsed in (
        v1.parse_result("session/new", result),
        v1.parse_message({"jsonrpc": "2.0", "id": 1, "result": result}, method="session/new").result,
    ):
        assert parsed.to_wire() == {"sessionId": "s1", "configOptions": good}
