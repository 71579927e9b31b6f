"""parse_message: whole JSON-RPC messages, with params and results bound to their method."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import VERSIONS, api, fixture_cases, fixture_files, load_fixture

from acp_types import _jsonrpc, v1, v2
from acp_types._jsonrpc import (
    Batch,
    ErrorResponse,
    InvalidParams,
    InvalidRequest,
    InvalidResult,
    MessageError,
    MethodNotFound,
    Notification,
    ParseError,
    Request,
    Response,
)
from acp_types._runtime import UnknownMethodError

CWD = "/home/user/project"
LIST_REQUEST = {"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {"cwd": CWD}}
LIST_RESULT = {"jsonrpc": "2.0", "id": 1, "result": {"sessions": [{"sessionId": "s1", "cwd": CWD}]}}
CANCEL = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}}
NOT_FOUND = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32002, "message": "Session not found"}}


def encodings(message: Any) -> list[Any]:
    text = json.dumps(message)
    return [message, text, text.encode("utf-8"), bytearray(text.encode("utf-8"))]


# --------------------------------------------------------------------------
# The four kinds of message


@pytest.mark.parametrize("version", VERSIONS)
def test_request_params_are_bound_to_the_method(version: str) -> None:
    m = api(version)
    for data in encodings(LIST_REQUEST):
        msg = m.parse_message(data)
        assert isinstance(msg, Request) and msg.kind == "request"
        assert msg.id == 1 and msg.method == "session/list"
        assert isinstance(msg.params, m.ListSessionsRequest) and msg.params.cwd == CWD
        assert msg.to_wire() == LIST_REQUEST
        assert json.loads(msg.to_json()) == LIST_REQUEST and "\n" not in msg.to_json()


@pytest.mark.parametrize("version", VERSIONS)
def test_notification(version: str) -> None:
    m = api(version)
    msg = m.parse_message(CANCEL)
    assert isinstance(msg, Notification) and msg.kind == "notification"
    assert msg.method == "session/cancel" and msg.params.session_id == "s1"
    assert msg.to_wire() == CANCEL


@pytest.mark.parametrize("version", VERSIONS)
def test_response_with_method_argument(version: str) -> None:
    m = api(version)
    msg = m.parse_message(json.dumps(LIST_RESULT), method="session/list")
    assert isinstance(msg, Response) and msg.kind == "response"
    assert msg.id == 1 and msg.method == "session/list"
    assert isinstance(msg.result, m.ListSessionsResponse)
    assert msg.result.sessions[0].session_id == "s1"
    assert msg.to_wire() == LIST_RESULT


@pytest.mark.parametrize("version", VERSIONS)
def test_response_method_from_pending_requests(version: str) -> None:
    m = api(version)
    pending = m.PendingRequests()
    request = pending.request("session/list", m.ListSessionsRequest(cwd=CWD))
    assert request.id in pending and len(pending) == 1 and pending.method_of(request.id) == "session/list"
    assert request.to_wire() == {"jsonrpc": "2.0", "id": request.id, "method": "session/list", "params": {"cwd": CWD}}
    answer = {**LIST_RESULT, "id": request.id}
    msg = m.parse_message(answer, pending=pending)
    assert isinstance(msg, Response) and isinstance(msg.result, m.ListSessionsResponse)
    assert request.id not in pending and len(pending) == 0
    # a second answer to the same id has no method any more
    with pytest.raises(InvalidRequest, match="method is unknown"):
        m.parse_message(answer, pending=pending)


@pytest.mark.parametrize("version", VERSIONS)
def test_pending_requests_track_string_and_integer_ids(version: str) -> None:
    m = api(version)
    pending = m.PendingRequests()
    pending.track({"jsonrpc": "2.0", "id": "req-a", "method": "session/list", "params": {}})
    pending.track(Request(7, "session/archive", {"sessionId": "s"}))
    pending.add(None, "session/delete")
    assert set(pending) == {"req-a", 7, None}
    with pytest.raises(ValueError, match="already pending"):
        pending.add(7, "session/list")
    with pytest.raises(TypeError):
        pending.add(True, "session/list")
    with pytest.raises(TypeError):
        pending.add(1.0, "session/list")
    assert True not in pending and 7 in pending
    msg = m.parse_message({"jsonrpc": "2.0", "id": 7, "result": {}}, pending=pending)
    assert isinstance(msg.result, m.ArchiveSessionResponse)
    msg = m.parse_message({"jsonrpc": "2.0", "id": "req-a", "result": {"sessions": []}}, pending=pending)
    assert isinstance(msg.result, m.ListSessionsResponse)
    assert pending.pop("nope") is None and set(pending) == {None}
    fresh = m.PendingRequests()
    ids = [fresh.request("session/list", {}).id for _ in range(3)]
    assert ids == [1, 2, 3]


@pytest.mark.parametrize("version", VERSIONS)
def test_method_argument_wins_over_pending(version: str) -> None:
    m = api(version)
    pending = m.PendingRequests()
    pending.add(1, "session/archive")
    msg = m.parse_message(LIST_RESULT, method="session/list", pending=pending)
    assert isinstance(msg.result, m.ListSessionsResponse)
    assert 1 not in pending


@pytest.mark.parametrize("version", VERSIONS)
def test_success_response_without_a_method_is_an_error(version: str) -> None:
    m = api(version)
    with pytest.raises(InvalidRequest) as info:
        m.parse_message(LIST_RESULT)
    assert info.value.id == 1 and "PendingRequests" in str(info.value)
    with pytest.raises(InvalidRequest, match="notification"):
        m.parse_message({"jsonrpc": "2.0", "id": 1, "result": {}}, method="session/cancel")
    with pytest.raises(MethodNotFound):
        m.parse_message({"jsonrpc": "2.0", "id": 1, "result": {}}, method="session/teleport")


@pytest.mark.parametrize("version", VERSIONS)
def test_error_responses_need_no_method(version: str) -> None:
    m = api(version)
    msg = m.parse_message(NOT_FOUND)
    assert isinstance(msg, ErrorResponse) and msg.kind == "error" and msg.method is None
    assert isinstance(msg.error, m.Error) and msg.error.code == -32002 and msg.error.message == "Session not found"
    assert msg.to_wire() == NOT_FOUND
    pending = m.PendingRequests()
    pending.add(1, "session/archive")
    msg = m.parse_message(NOT_FOUND, pending=pending)
    assert msg.method == "session/archive" and len(pending) == 0
    parse_error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error", "data": {"at": 3}}}
    msg = m.parse_message(parse_error)
    assert msg.id is None and msg.error.data == {"at": 3} and msg.to_wire() == parse_error


# --------------------------------------------------------------------------
# Extension and unknown methods


@pytest.mark.parametrize("version", VERSIONS)
def test_extension_methods_pass_through(version: str) -> None:
    m = api(version)
    request = {"jsonrpc": "2.0", "id": "x1", "method": "_zed/ping", "params": {"any": [1, {"shape": None}]}}
    msg = m.parse_message(request)
    assert isinstance(msg, Request) and msg.params == request["params"] and msg.to_wire() == request
    bare = {"jsonrpc": "2.0", "method": "_zed/tick"}
    msg = m.parse_message(bare)
    assert isinstance(msg, Notification) and msg.params is None and msg.to_wire() == bare
    positional = {"jsonrpc": "2.0", "method": "_zed/args", "params": [1, 2]}
    assert m.parse_message(positional).to_wire() == positional
    answer = {"jsonrpc": "2.0", "id": "x1", "result": ["anything"]}
    msg = m.parse_message(answer, method="_zed/ping")
    assert isinstance(msg, Response) and msg.result == ["anything"] and msg.to_wire() == answer


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_method(version: str) -> None:
    m = api(version)
    with pytest.raises(MethodNotFound) as info:
        m.parse_message({"jsonrpc": "2.0", "id": 9, "method": "session/teleport", "params": {}})
    exc = info.value
    assert exc.code == -32601 and exc.id == 9 and exc.method == "session/teleport"
    assert isinstance(exc, UnknownMethodError) and isinstance(exc, m.MessageError) and exc.version == version
    assert exc.to_error() == {"code": -32601, "message": str(exc)}


def test_methods_of_the_other_version_are_unknown() -> None:
    with pytest.raises(MethodNotFound):
        v2.parse_message({"jsonrpc": "2.0", "id": 1, "method": "session/load", "params": {}})
    with pytest.raises(MethodNotFound):
        v1.parse_message({"jsonrpc": "2.0", "id": 1, "method": "auth/login", "params": {}})


# --------------------------------------------------------------------------
# Params and results


@pytest.mark.parametrize("version", VERSIONS)
def test_invalid_params(version: str) -> None:
    m = api(version)
    bad = {"jsonrpc": "2.0", "id": 4, "method": "session/list", "params": {"cwd": 42}}
    with pytest.raises(InvalidParams) as info:
        m.parse_message(bad)
    exc = info.value
    assert exc.code == -32602 and exc.id == 4 and exc.method == "session/list" and exc.data == bad
    assert exc.validation_error is not None and exc.validation_error.errors()[0]["loc"] == ("cwd",)
    assert "cwd" in str(exc)
    with pytest.raises(InvalidParams, match="needs params"):
        m.parse_message({"jsonrpc": "2.0", "id": 4, "method": "session/list"})
    with pytest.raises(InvalidParams):
        m.parse_message({"jsonrpc": "2.0", "id": 4, "method": "session/list", "params": [CWD]})
    with pytest.raises(InvalidParams):
        m.parse_message({"jsonrpc": "2.0", "method": "session/cancel", "params": {}})


@pytest.mark.parametrize("version", VERSIONS)
def test_invalid_result(version: str) -> None:
    m = api(version)
    with pytest.raises(InvalidResult) as info:
        m.parse_message({"jsonrpc": "2.0", "id": 2, "result": {}}, method="session/list")
    assert info.value.id == 2 and info.value.validation_error is not None and "sessions" in str(info.value)
    with pytest.raises(InvalidResult):
        m.parse_message({"jsonrpc": "2.0", "id": 2, "result": None}, method="session/archive")


def test_params_must_fit_the_method_not_any_type() -> None:
    # the published root schema lets this through; bound to its method it fails
    with pytest.raises(InvalidParams):
        v2.parse_message({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": 42}})
    with pytest.raises(InvalidParams):
        v1.parse_message({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": 42, "mcpServers": []}})


@pytest.mark.parametrize("version", VERSIONS)
def test_request_and_notification_kinds_are_checked(version: str) -> None:
    m = api(version)
    with pytest.raises(InvalidRequest, match="notification"):
        m.parse_message({**CANCEL, "id": 3})
    with pytest.raises(InvalidRequest, match='needs an "id"'):
        m.parse_message({k: v for k, v in LIST_REQUEST.items() if k != "id"})


# --------------------------------------------------------------------------
# Malformed envelopes


MALFORMED = [
    ({"id": 1, "method": "session/list", "params": {}}, "jsonrpc"),
    ({"jsonrpc": "1.0", "id": 1, "method": "session/list", "params": {}}, "jsonrpc"),
    ({"jsonrpc": 2.0, "id": 1, "method": "session/list", "params": {}}, "jsonrpc"),
    ({"jsonrpc": None, "id": 1, "result": {}}, "jsonrpc"),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "session/list", "params": {}}, "id"),
    ({"jsonrpc": "2.0", "id": 1.0, "method": "session/list", "params": {}}, "id"),
    ({"jsonrpc": "2.0", "id": True, "method": "session/list", "params": {}}, "id"),
    ({"jsonrpc": "2.0", "id": {"n": 1}, "result": {}}, "id"),
    ({"jsonrpc": "2.0", "id": [1], "error": {"code": 1, "message": "x"}}, "id"),
    ({"jsonrpc": "2.0", "id": 1, "method": 5, "params": {}}, "method"),
    ({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": "cwd"}, "params"),
    ({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": None}, "params"),
    ({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}, "result": {}}, "both"),
    ({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}, "error": {"code": 1, "message": "x"}}, "both"),
    ({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}}, "not both"),
    ({"jsonrpc": "2.0", "id": 1}, "neither"),
    ({"jsonrpc": "2.0"}, "neither"),
    ({"jsonrpc": "2.0", "result": {}}, "id"),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": "bad", "message": "x"}}, "error object"),
    ({"jsonrpc": "2.0", "id": 1, "error": {"code": 1}}, "error object"),
    ({"jsonrpc": "2.0", "id": 1, "error": "boom"}, "error object"),
    (5, "object"),
    ("just a string", "object"),
    (None, "object"),
]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("message, why", MALFORMED, ids=[f"{i}-{w}" for i, (_, w) in enumerate(MALFORMED)])
def test_malformed_envelopes_are_rejected(version: str, message: Any, why: str) -> None:
    m = api(version)
    # a str is always JSON text, so a bare string message is only tried encoded
    for data in (message, json.dumps(message)) if not isinstance(message, str) else (json.dumps(message),):
        with pytest.raises(InvalidRequest) as info:
            m.parse_message(data, method="session/list")
        assert info.value.code == -32600
        assert why.split()[-1] in str(info.value) or why == "object"


@pytest.mark.parametrize("version", VERSIONS)
def test_text_that_is_not_json(version: str) -> None:
    m = api(version)
    for data in (
        '{"jsonrpc": "2.0", "id": 1,',
        "",
        "NaN",
        '{"jsonrpc":"2.0","id":1,"result":{"x":Infinity}}',
        b"\xff\xfe{}",
        '{"jsonrpc":"2.0"} trailing',
    ):
        with pytest.raises(ParseError) as info:
            m.parse_message(data, method="session/list")
        assert info.value.code == -32700 and isinstance(info.value, MessageError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_envelope_members_are_kept(version: str) -> None:
    m = api(version)
    message = {**LIST_REQUEST, "x-trace": {"span": 1}}
    msg = m.parse_message(message)
    assert msg.extra == {"x-trace": {"span": 1}} and msg.to_wire() == message
    note = {**CANCEL, "x": 1}
    assert m.parse_message(note).to_wire() == note
    answer = {**NOT_FOUND, "x": [1]}
    assert m.parse_message(answer).to_wire() == answer


def test_message_error_fields() -> None:
    with pytest.raises(InvalidParams) as info:
        v2.parse_message({"jsonrpc": "2.0", "id": "a", "method": "session/archive", "params": {}})
    exc = info.value
    assert exc.to_error() == {"code": -32602, "message": exc.message}
    assert exc.id == "a" and exc.method == "session/archive"
    assert v2.MessageError is _jsonrpc.MessageError and v1.PendingRequests is _jsonrpc.PendingRequests


# --------------------------------------------------------------------------
# Batches: v2 only


def test_v1_rejects_batches() -> None:
    assert v1.messages.BATCHES is False
    for data in ([LIST_REQUEST, CANCEL], json.dumps([LIST_REQUEST]), []):
        with pytest.raises(InvalidRequest, match="batch"):
            v1.parse_message(data)


def test_v2_accepts_batches_with_invalid_entries_in_place() -> None:
    assert v2.messages.BATCHES is True
    bad_params = {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {"cwd": 1}}
    batch_data = [LIST_REQUEST, CANCEL, bad_params, 7, {"jsonrpc": "2.0", "method": "nope/nope"}, [LIST_REQUEST]]
    batch = v2.parse_message(json.dumps(batch_data))
    assert isinstance(batch, Batch) and batch.kind == "batch" and len(batch) == 6
    first, second, third, fourth, fifth, sixth = batch
    assert isinstance(first, Request) and isinstance(first.params, v2.ListSessionsRequest)
    assert isinstance(second, Notification)
    assert isinstance(third, InvalidParams) and third.id == 2
    assert isinstance(fourth, InvalidRequest) and fourth.id is None
    assert isinstance(fifth, MethodNotFound)
    assert isinstance(sixth, InvalidRequest)
    assert batch.messages == (first, second)
    assert batch.errors == (third, fourth, fifth, sixth)
    assert batch.to_wire() == batch_data


def test_v2_batch_of_responses_uses_pending() -> None:
    pending = v2.PendingRequests()
    a = pending.request("session/list", {})
    b = pending.request("session/archive", {"sessionId": "s"})
    answers = [{"jsonrpc": "2.0", "id": b.id, "result": {}}, {"jsonrpc": "2.0", "id": a.id, "result": {"sessions": []}}]
    batch = v2.parse_message(answers, pending=pending)
    assert [type(r.result) for r in batch] == [v2.ArchiveSessionResponse, v2.ListSessionsResponse]
    assert len(pending) == 0 and batch.to_wire() == answers


def test_v2_rejects_an_empty_batch() -> None:
    for data in ([], "[]"):
        with pytest.raises(InvalidRequest, match="empty"):
            v2.parse_message(data)


# --------------------------------------------------------------------------
# Every fixture, through parse_message


@pytest.mark.parametrize("path, version", fixture_cases())
def test_fixtures_through_parse_message(path: Any, version: str) -> None:
    fixture = load_fixture(path)
    m = api(version)
    message = fixture["message"]
    if fixture["valid"]:
        msg = m.parse_message(json.dumps(message), method=fixture["method"])
        assert msg.method in (fixture["method"], None)
        if "reads" in fixture:  # a tolerant receiver reads it as `reads`
            part = "result" if "result" in message else "params"
            assert msg.to_wire() == {**message, part: fixture["reads"]}
        else:
            assert msg.to_wire() == message
    else:
        with pytest.raises(MessageError):
            m.parse_message(json.dumps(message), method=fixture["method"])


def test_a_response_to_send_needs_no_method() -> None:
    """The method of a response never goes on the wire, so building one to send does not ask for it."""
    from acp_types import v1

    result = v1.NewSessionResponse(session_id="s1")
    response = v1.Response(7, result)
    assert response.method is None
    assert json.loads(response.to_json()) == {"jsonrpc": "2.0", "id": 7, "result": {"sessionId": "s1"}}


def _shape(fixture: dict[str, Any]) -> str:
    message = fixture["message"]
    if isinstance(message, list):
        shape = "batch"
    elif "method" in message:
        shape = "request" if "id" in message else "notification"
    else:
        shape = "error" if "error" in message else "response"
    return shape + (" read tolerantly" if "reads" in fixture else "")


def _one_valid_fixture_per_shape() -> list[Any]:
    """Pickling and copying depend on a message's shape, not on its payload: the first valid fixture of each."""
    cases: dict[tuple[str, str], Any] = {}
    for case in fixture_cases():
        path, version = case.values
        fixture = load_fixture(path)
        if fixture["valid"]:
            cases.setdefault((version, _shape(fixture)), case)
    return list(cases.values())


@pytest.mark.parametrize("path, version", _one_valid_fixture_per_shape())
def test_a_parsed_message_survives_pickle_and_copy(path: Any, version: str) -> None:
    # a message read by the fast path shares one empty mapping of unknown
    # members, which pickle cannot write: pickling a message read from a
    # line raised TypeError, and so did copy.deepcopy
    import copy
    import pickle

    fixture = load_fixture(path)
    m = api(version)
    message = fixture["message"]
    for source in (json.dumps(message), message):
        parsed = m.parse_message(source, method=fixture["method"])
        for again in (pickle.loads(pickle.dumps(parsed)), copy.deepcopy(parsed), copy.copy(parsed)):
            assert type(again) is type(parsed)
            assert again == parsed
            assert again.to_json() == parsed.to_json()
            assert dict(again.extra) == dict(parsed.extra)


# --------------------------------------------------------------------------
# A message is bound to the method it names, whatever its params hold

_NAMED_INSIDE = '{"jsonrpc":"2.0","id":1,"params":{"_meta":{"method":"session/list"}},"method":"session/new"}'


def _new_session_params(version: str) -> dict[str, Any]:
    for path in fixture_files():
        fx = load_fixture(path)
        if version in fx["versions"] and fx["valid"] and fx["message"].get("method") == "session/new":
            return dict(fx["message"]["params"])
    raise AssertionError("no valid session/new fixture")


@pytest.mark.parametrize("version", VERSIONS)
def test_a_method_named_inside_the_params_binds_nothing(version: str) -> None:
    m = api(version)
    for data in (_NAMED_INSIDE, _NAMED_INSIDE.encode(), json.loads(_NAMED_INSIDE)):
        with pytest.raises(InvalidParams) as info:
            m.parse_message(data)
        assert info.value.method == "session/new" and "session/new" in info.value.message
    params = {**_new_session_params(version), "_meta": {"method": "session/list"}}
    message = {"jsonrpc": "2.0", "id": 1, "params": params, "method": "session/new"}
    text = json.dumps(message)
    new_session = m.METHODS["session/new"].params
    for data in (text, text.encode(), message, json.dumps(message, separators=(",", ":"))):
        read = m.parse_message(data)
        assert (read.method, type(read.params)) == ("session/new", new_session)
        assert read.to_wire() == message
    assert type(m.parse_params("session/new", params)) is new_session
    if __import__(f"acp_types.{version}.messages", fromlist=["BATCHES"]).BATCHES:
        batch = m.parse_message(json.dumps([message, json.loads(_NAMED_INSIDE)]))
        assert type(batch.entries[0].params) is new_session
        assert isinstance(batch.entries[1], InvalidParams) and batch.entries[1].method == "session/new"


@pytest.mark.parametrize("version", VERSIONS)
def test_a_response_is_bound_to_its_pending_request_whatever_its_result_holds(version: str) -> None:
    m = api(version)
    result = {"sessionId": "s1", "_meta": {"method": "session/list", "id": 2}}
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "result": result})
    for data in (line, line.encode(), json.loads(line)):
        pending = m.PendingRequests()
        pending.add(1, "session/new")
        pending.add(2, "session/list")
        read = m.parse_message(data, pending=pending)
        assert (read.method, type(read.result)) == ("session/new", m.METHODS["session/new"].result)
        assert list(pending) == [2]
        assert type(m.parse_message(data, method="session/new").result) is m.METHODS["session/new"].result


@pytest.mark.parametrize("version", VERSIONS)
def test_each_envelope_takes_its_own_method_only(version: str) -> None:
    # the envelopes' method literal: an envelope never reads another method's message
    from pydantic import TypeAdapter, ValidationError

    envelopes = __import__(f"acp_types.{version}.envelopes", fromlist=["CALLS"])
    names = sorted(envelopes.CALLS)
    checked = 0
    for path in fixture_files():
        fx = load_fixture(path)
        message = fx["message"]
        name = message.get("method")
        if version not in fx["versions"] or not fx["valid"] or name not in envelopes.CALLS:
            continue
        adapter = TypeAdapter(envelopes.CALLS[name])
        try:
            adapter.validate_python(message, strict=True, by_name=False)
        except ValidationError:
            continue  # (a message the envelope path leaves to the member-by-member one)
        other = names[(names.index(name) + 1) % len(names)]
        with pytest.raises(ValidationError):
            adapter.validate_python({**message, "method": other}, strict=True, by_name=False)
        checked += 1
    assert checked > 20, checked


# --------------------------------------------------------------------------
# An integer written 1.0 is an integer, in a tolerant array too


def test_an_integral_float_in_a_tolerant_array_keeps_its_item() -> None:
    # the published schema reads 1.0 as an integer: the second location is valid and stays
    def location(line: Any) -> dict[str, Any]:
        return {"path": f"/src/{line}.py", "line": line}

    update = {
        "sessionUpdate": "tool_call",
        "toolCallId": "t1",
        "title": "Read",
        "locations": [location(0), location(1.0)],
    }
    params = {"sessionId": "s1", "update": update}
    message = {"jsonrpc": "2.0", "method": "session/update", "params": params}
    from conftest import validator_for

    assert validator_for("v1", "SessionNotification").is_valid(params)
    for data in encodings(message):
        read = v1.parse_message(data)
        locations = read.params.update.locations
        assert len(locations) == 2
        assert locations[1].line == 1 and type(locations[1].line) is int
    assert len(v1.parse_params("session/update", params).update.locations) == 2
    model = v1.models.SessionNotification
    assert len(model.model_validate(params).update.locations) == 2
    assert len(model.model_validate_json(json.dumps(params)).update.locations) == 2
    # a fraction is no integer: the optional line alone is dropped (its on-error rule), the item stays
    fraction = {**params, "update": {**update, "locations": [location(0), location(1.5)]}}
    kept = v1.parse_params("session/update", fraction).update.locations
    assert len(kept) == 2 and kept[1].line is None and "line" not in kept[1].model_fields_set
    # and a number field keeps its notation
    assert v1.parse_message(json.dumps(message)).to_wire()["params"]["update"]["locations"][1] == {
        "path": "/src/1.0.py",
        "line": 1,
    }
