"""What acp_types.v1 and acp_types.v2 expose, used as a consumer would."""

from __future__ import annotations

import inspect
import json
import re
import typing

import pytest
from conftest import FIXTURES, VERSIONS, api, load_fixture
from pydantic import ValidationError

import acp_types
from acp_types import v1, v2


def test_v2_says_it_is_the_draft() -> None:
    assert v2.IS_DRAFT is True and v2.STATUS == "draft"
    assert "draft" in (v2.__doc__ or "").lower()
    assert v1.IS_DRAFT is False and v1.STATUS == "stable"
    assert (v1.PROTOCOL_VERSION, v2.PROTOCOL_VERSION) == (1, 2)
    assert acp_types.VERSIONS == ["v1", "v2"]


@pytest.mark.parametrize("version", VERSIONS)
def test_method_table_rows(version: str) -> None:
    m = api(version)
    archive = m.METHODS["session/archive"]
    assert archive.side == "agent" and archive.kind == "request"
    assert archive.errors == (-32002,)
    assert archive.stability == "unstable"  # published in the unstable schemas since November 2026
    assert archive.params is m.ArchiveSessionRequest and archive.result is m.ArchiveSessionResponse
    expected = {
        "v1": ("agentCapabilities", "sessionCapabilities", "archive"),
        "v2": ("capabilities", "session", "archive"),
    }[version]
    assert archive.capability == expected
    cancel = m.METHODS["session/cancel"]
    assert cancel.kind == "notification" and cancel.result is None
    update = m.METHODS["session/update"]
    assert update.side == "client"
    assert m.METHODS["initialize"].capability is None
    assert list(m.METHODS) == sorted(m.METHODS)


@pytest.mark.parametrize("version", VERSIONS)
def test_parse_params_and_result_bind_to_the_method(version: str) -> None:
    m = api(version)
    params = m.parse_params("session/list", {"cwd": "/home/user/project", "archived": "only"})
    assert isinstance(params, m.ListSessionsRequest)
    assert params.cwd == "/home/user/project"
    assert m.parse_result("session/archive", {}) == m.ArchiveSessionResponse()
    with pytest.raises(ValidationError):
        m.parse_params("session/new", {"cwd": 42, "mcpServers": []})
    with pytest.raises(ValidationError):
        m.parse_params("session/archive", {"cwd": "/home/user/project"})


@pytest.mark.parametrize("version", VERSIONS)
def test_unknown_and_extension_methods(version: str) -> None:
    m = api(version)
    with pytest.raises(m.UnknownMethodError) as info:
        m.parse_params("session/teleport", {})
    assert info.value.method == "session/teleport"
    assert not isinstance(info.value, ValidationError)
    payload = {"anything": [1, {"goes": True}]}
    assert m.parse_params("_zed/custom", payload) is payload
    assert m.parse_result("_zed/custom", payload) is payload
    with pytest.raises(m.NotARequestError):
        m.parse_result("session/cancel", {})


@pytest.mark.parametrize("version", VERSIONS)
def test_models_take_either_name_and_write_wire_names(version: str) -> None:
    m = api(version)
    by_attr = m.SessionInfo(session_id="sess_1", cwd="/p", updated_at="2025-10-29T14:22:15Z")
    by_wire = m.SessionInfo(sessionId="sess_1", cwd="/p", updatedAt="2025-10-29T14:22:15Z")
    assert by_attr == by_wire
    assert by_attr.session_id == "sess_1"
    assert by_attr.to_wire() == {"sessionId": "sess_1", "cwd": "/p", "updatedAt": "2025-10-29T14:22:15Z"}
    meta = m.SessionInfo.model_validate({"sessionId": "s", "cwd": "/p", "_meta": {"k": 1}})
    assert meta.meta == {"k": 1}


def test_capability_helpers_v1_seed_examples() -> None:
    init = load_fixture(FIXTURES / "seeds" / "000-initialize-result-archive-capability.json")["message"]["result"]
    model = v1.InitializeResponse.model_validate(init)
    for given in (init, model):
        assert v1.method_allowed("session/archive", given)
        assert v1.method_allowed("session/unarchive", given)
        assert v1.method_allowed("session/list", given)
        assert v1.method_allowed("session/delete", given)
        assert not v1.method_allowed("session/load", given)
        assert not v1.method_allowed("session/resume", given)
        assert v1.method_allowed("initialize", given)
        assert v1.method_allowed("_vendor/anything", given)
        assert v1.feature_supported("session.archive", given)
        assert not v1.feature_supported("session.additionalDirectories", given)
    assert not v1.method_allowed("session/archive", {"protocolVersion": 1, "agentCapabilities": {}})
    assert v1.method_allowed("session/load", {"agentCapabilities": {"loadSession": True}})
    assert not v1.method_allowed("session/load", {"agentCapabilities": {"loadSession": False}})
    client = {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": False}}}
    assert v1.method_allowed("fs/read_text_file", client)
    assert not v1.method_allowed("fs/write_text_file", client)
    assert not v1.method_allowed("terminal/create", client)
    with pytest.raises(v1.UnknownMethodError):
        v1.method_allowed("session/teleport", init)


def test_capability_helpers_v2_markers_and_baseline() -> None:
    seeds = [load_fixture(p) for p in (FIXTURES / "seeds").glob("001-*.json")]
    init = next(f["message"]["result"] for f in seeds if f["method"] == "initialize")
    assert v2.feature_supported("mcp.stdio", init) and v2.feature_supported("mcp.http", init)
    assert v2.method_allowed("session/list", init)
    assert v2.method_allowed("session/resume", init)
    assert not v2.method_allowed("session/archive", init)
    assert not v2.feature_supported("session.additionalDirectories", init)
    without = {
        "protocolVersion": 2,
        "capabilities": {"session": {"mcp": {"stdio": None}}},
        "info": {"name": "a", "version": "1"},
    }
    assert not v2.feature_supported("mcp.stdio", without)
    archived = {"capabilities": {"session": {"archive": {}}}}
    assert v2.method_allowed("session/archive", archived)
    assert v2.method_allowed("initialize", {})


@pytest.mark.parametrize("version", VERSIONS)
def test_agent_and_client_stubs(version: str) -> None:
    m = api(version)
    for side, proto in (("agent", m.Agent), ("client", m.Client)):
        expected = {name for name, spec in m.METHODS.items() if spec.side in (side, "protocol")}
        stubs = {name for name, fn in inspect.getmembers(proto, inspect.iscoroutinefunction)}
        # camelCase segments (document/didOpen) become snake_case (document_did_open)
        wanted = {
            re.sub(r"[^0-9a-z]+", "_", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name.removeprefix("$/")).lower()).strip(
                "_"
            ): name
            for name in expected
        }
        assert stubs == set(wanted), stubs ^ set(wanted)
        for name in stubs:
            fn = getattr(proto, name)
            spec = m.METHODS[wanted[name]]
            assert fn.__doc__ and f"`{spec.name}`" in fn.__doc__
            hints = typing.get_type_hints(fn)
            assert hints["params"] is spec.params, (name, hints["params"])
            expected_result = type(None) if spec.result is None else spec.result
            assert hints["return"] is expected_result, (name, hints["return"])


@pytest.mark.parametrize("version", VERSIONS)
def test_no_class_name_is_numbered(version: str) -> None:
    schema = json.loads(api(version).SCHEMA_PATH.read_text("utf-8"))
    for name in api(version).__all__:
        if name[0].isupper() and name[-1].isdigit():
            assert name in schema["$defs"], f"{name} ends in a digit but the schema does not name it so"
    assert set(schema["$defs"]) <= set(api(version).__all__)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_subclass_of_a_model_reads_the_wire_as_the_model_does(version: str) -> None:
    # a tolerant field's default is held on the class; pydantic collected a
    # subclass's copy of such a field from it and lost the wire name, so a
    # subclass read `_meta` by attribute name only and rejected `meta: 5`
    m = api(version)
    checked = 0
    for name in m.models.__all__ if hasattr(m.models, "__all__") else dir(m.models):
        model = getattr(m.models, name)
        if (
            not (isinstance(model, type) and issubclass(model, m.models.AcpModel))
            or model.__module__ != m.models.__name__
        ):
            continue
        mine = type("Mine" + name, (model,), {"__module__": __name__})
        for field, info in model.model_fields.items():
            theirs = mine.model_fields[field]
            assert (theirs.alias, theirs.metadata, theirs.default) == (info.alias, info.metadata, info.default), (
                name,
                field,
            )
        checked += 1
    assert checked > 100
    base = m.NewSessionResponse
    mine = type("MineNewSessionResponse", (base,), {})
    data = {"sessionId": "s", "_meta": {"a": 1}, "meta": 5}
    assert mine.model_validate(data, by_name=False).to_json() == base.model_validate(data, by_name=False).to_json()
    assert mine.model_validate({"sessionId": "s", "_meta": 7}).meta is None  # tolerant: dropped, reads the default


# --------------------------------------------------------------------------
# Mistakes caught in code; unknown keys only from the wire or by extra=


@pytest.mark.parametrize("version", VERSIONS)
def test_a_misspelled_keyword_is_an_error_not_a_key_on_the_wire(version: str) -> None:
    m = api(version)
    tool = "ToolCall" if version == "v1" else "ToolCallUpdate"
    with pytest.raises(TypeError, match=rf"{version}\.{tool} has no field 'stauts'"):
        getattr(m, tool)(tool_call_id="t", title="x", stauts="pending")
    # both spellings of a field are keywords; unknown keys go through extra=
    call = getattr(m, tool)(toolCallId="t", title="x", extra={"x-vendor": 1})
    assert call.to_wire()["x-vendor"] == 1 and call.tool_call_id == "t"
    with pytest.raises(TypeError, match="extra= holds fields"):
        getattr(m, tool)(tool_call_id="t", title="x", extra={"title": "y"})
    # the wire keeps what it does not know, as before
    read = m.models.TextContent.model_validate({"type": "text", "text": "x", "stauts": 1})
    assert read.model_extra == {"stauts": 1}
    assert m.UnknownVariant(type="zz", anything=1).to_wire() == {"type": "zz", "anything": 1}


@pytest.mark.parametrize("version", VERSIONS)
def test_an_error_that_names_a_model_names_its_version(version: str) -> None:
    m = api(version)
    with pytest.raises(ValidationError, match=rf"for {version}\.NewSessionRequest\b"):
        m.parse_params("session/new", {"cwd": 5})
    with pytest.raises(ValidationError, match=rf"for {version}\.NewSessionRequest\b"):
        m.models.NewSessionRequest.model_validate({"cwd": 5})
    with pytest.raises(ValidationError, match=rf"for {version}\.NewSessionRequest\b"):
        m.models.NewSessionRequest(cwd=5)
