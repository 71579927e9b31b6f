"""Stable and unstable surface: markers, the stable-only bundle, the method helpers, and the checks that keep
the stable protocol self-contained."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import ROOT, VERSIONS, api, fixture_files, load_fixture, payload_of
from test_diff import base_doc, load, method, obj, ref, write_version

from generator.errors import SchemaError

# The unstable methods of the published protocol, per version (facts read from its unstable schema).
UNSTABLE_METHODS = {
    "session/fork",
    "providers/list",
    "providers/set",
    "providers/disable",
    "mcp/message",
    "session/archive",
    "session/unarchive",
    "auth/status",
    "auth/status_update",
    "session/status",
    "session/set_title",
    "proxy/initialize",
    "proxy/successor",
}


def _bundles(version: str) -> tuple[dict[str, Any], dict[str, Any]]:
    m = api(version)
    full = json.loads(m.SCHEMA_PATH.read_text("utf-8"))
    stable = json.loads(m.STABLE_SCHEMA_PATH.read_text("utf-8"))
    return full, stable


def _refs(node: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out.add(v.removeprefix("#/$defs/"))
            else:
                out |= _refs(v)
    elif isinstance(node, list):
        for v in node:
            out |= _refs(v)
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_unstable_methods_are_listed_and_marked(version: str) -> None:
    m = api(version)
    unstable = {name for name, spec in m.METHODS.items() if spec.stability == "unstable"}
    assert unstable == UNSTABLE_METHODS
    assert m.METHODS["auth/status_update"].side == "client"
    assert m.METHODS["mcp/message"].side == "protocol"
    assert m.METHODS["auth/status_update"].kind == "notification" and m.METHODS["auth/status_update"].result is None
    stable = m.stable_methods()
    assert set(stable) == {n for n, s in m.METHODS.items() if s.stability == "stable"}
    assert not set(stable) & UNSTABLE_METHODS
    assert "session/new" in stable and "session/archive" not in stable
    assert all(f.stability == "stable" for f in m.stable_features().values())
    assert m.FEATURES["mcp.acp"].stability == "unstable" and "mcp.acp" not in m.stable_features()


@pytest.mark.parametrize("version", VERSIONS)
def test_stubs_carry_unstable_methods_and_say_so(version: str) -> None:
    m = api(version)
    for name in UNSTABLE_METHODS:
        spec = m.METHODS[name]
        sides = (
            [m.Agent, m.Client]
            if spec.side == "protocol"
            else [{"agent": m.Agent, "client": m.Client, "proxy": m.Proxy}[spec.side]]
        )
        stub = name.replace("/", "_")
        stub = "".join("_" + c.lower() if c.isupper() else c for c in stub)
        for proto in sides:
            doc = getattr(proto, stub).__doc__ or ""
            assert "unstable" in doc and "UNSTABLE" in doc, (name, proto)
    doc = m.Agent.session_new.__doc__ or ""
    assert "UNSTABLE" not in doc


def _stub_name(method: str) -> str:
    stub = method.replace("/", "_")
    return "".join("_" + c.lower() if c.isupper() else c for c in stub)


@pytest.mark.parametrize("version", VERSIONS)
def test_peers_carry_unstable_methods_and_say_so(version: str) -> None:
    """The connection layer's typed calls: one per method the other side handles, unstable ones marked."""
    import importlib

    peer = importlib.import_module(f"acp_types.{version}.peer")
    m = api(version)
    for name, spec in m.METHODS.items():
        if spec.side == "proxy":
            continue  # proxy/* go between a conductor and its proxies: acp_types.proxy sends them, no peer does
        peers = (
            [peer.AgentPeer, peer.ClientPeer]
            if spec.side == "protocol"
            else [peer.AgentPeer if spec.side == "agent" else peer.ClientPeer]
        )
        for cls in peers:
            if name == "initialize" or name.startswith("$/"):
                continue  # the connection sends these itself (ClientConnection.initialize, cancelling a call)
            fn = getattr(cls, _stub_name(name), None)
            assert fn is not None, (name, cls.__name__)
            head = (fn.__doc__ or "").strip().splitlines()[0]
            assert head.startswith(f"`{name}` ({spec.kind}, {spec.stability})"), (name, head)


@pytest.mark.parametrize("version", VERSIONS)
def test_capability_table_gives_each_method_its_stability(version: str) -> None:
    """generated/docs/capabilities.md: every method's row says its stability in this version."""
    column = VERSIONS.index(version)
    table = (ROOT / "generated" / "docs" / "capabilities.md").read_text("utf-8")
    rows = table.split("## Methods", 1)[1].split("## ", 1)[0]
    stability: dict[str, str] = {}
    for line in rows.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[column].startswith("`"):
            stability[cells[column].strip("`")] = cells[5].split(" / ")[column]
    m = api(version)
    assert stability == {name: spec.stability for name, spec in m.METHODS.items()}
    assert {n for n, s in stability.items() if s == "unstable"} == UNSTABLE_METHODS


@pytest.mark.parametrize("version", VERSIONS)
def test_stable_bundle_leaves_out_exactly_the_unstable_surface(version: str) -> None:
    full, stable = _bundles(version)
    unstable_defs = {n for n, d in full["$defs"].items() if d.get("x-acp-stability") == "unstable"}
    assert unstable_defs, "the full bundle carries the unstable definitions"
    assert set(stable["$defs"]) == set(full["$defs"]) - unstable_defs
    assert _refs(stable) <= set(stable["$defs"]), "every reference of the stable bundle resolves in it"
    assert 'x-acp-stability": "unstable' not in json.dumps(stable)
    assert set(stable["x-acp-methods"]) == {n for n, s in full["x-acp-methods"].items() if s["stability"] == "stable"}
    assert stable["$id"] == full["$id"] + ":stable"
    # unstable fields of stable definitions are in the full bundle only
    assert "fork" in full["$defs"]["SessionCapabilities"]["properties"]
    assert "fork" not in stable["$defs"]["SessionCapabilities"]["properties"]
    branches = {rule["then"]["$ref"] for rule in stable["$defs"]["SessionUpdate"]["allOf"]}
    assert "#/$defs/PlanRemoved" not in branches
    assert "#/$defs/PlanRemoved" in {rule["then"]["$ref"] for rule in full["$defs"]["SessionUpdate"]["allOf"]}


def test_v1_stable_bundle_rejects_unstable_branches() -> None:
    """v1 unions are closed: an unstable branch passes the full schema and fails the stable one."""
    full, stable = _bundles("v1")
    notice = {"sessionUpdate": "plan_removed", "planId": "plan_1"}
    defs_full = dict(full, **{"$ref": "#/$defs/SessionUpdate"})
    defs_stable = dict(stable, **{"$ref": "#/$defs/SessionUpdate"})
    assert not list(jsonschema.Draft202012Validator(defs_full).iter_errors(notice))
    assert list(jsonschema.Draft202012Validator(defs_stable).iter_errors(notice))


@pytest.mark.parametrize("version", VERSIONS)
def test_stable_fixtures_validate_against_the_stable_bundle(version: str) -> None:
    """The valid fixtures of stable methods, other than those written for the unstable surface, hold strictly."""
    full, stable = _bundles(version)
    checked = 0
    for path in fixture_files():
        fx = load_fixture(path)
        if version not in fx["versions"] or not fx["valid"] or "(unstable)" in fx["description"]:
            continue
        spec = stable["x-acp-methods"].get(fx["method"])
        if spec is None:
            continue
        part, payload = payload_of(fx["message"])
        if part == "error":
            continue
        if "reads" in fx:  # a tolerated fixture breaks the sender's rules; what the receiver reads holds
            payload = fx["reads"]
        name = spec["params"] if part == "params" else spec["result"]
        validator = jsonschema.Draft202012Validator(dict(stable, **{"$ref": "#/$defs/" + name}))
        errors = list(validator.iter_errors(payload))
        assert not errors, (path.name, errors[0].message)
        checked += 1
    assert checked > 50


# ---------------------------------------------------------------- the semantic checks


def _fails(tmp_path: Path, doc: dict[str, Any], needle: str) -> str:
    with pytest.raises(SchemaError) as info:
        load(write_version(doc, tmp_path / "v"), "t")
    text = "\n".join(f"{p.file}#{p.pointer}: {p.message}" for p in info.value.problems)
    assert needle in text, text
    return text


def _unstable_def(doc: dict[str, Any], name: str = "Extra") -> None:
    doc["defs"][name] = dict(
        obj({"kind": {"type": "string", "const": "extra"}}, ("kind",)), **{"x-acp-stability": "unstable"}
    )


def test_a_stable_field_cannot_use_an_unstable_type(tmp_path: Path) -> None:
    doc = base_doc()
    _unstable_def(doc)
    doc["defs"]["Payload"]["properties"]["extra"] = ref("Extra")
    text = _fails(tmp_path, doc, "stable property refers to the unstable definition 'Extra'")
    assert "/$defs/Payload/properties/extra" in text
    doc["defs"]["Payload"]["properties"]["extra"]["x-acp-stability"] = "unstable"
    proto = load(write_version(doc, tmp_path / "fixed"), "t")  # marking the field unstable is the fix
    assert "extra" in proto.bundle["$defs"]["Payload"]["properties"] and "Extra" in proto.bundle["$defs"]
    assert "extra" not in proto.stable_bundle["$defs"]["Payload"]["properties"]
    assert "Extra" not in proto.stable_bundle["$defs"]


def test_an_unstable_field_cannot_be_required(tmp_path: Path) -> None:
    doc = base_doc()
    doc["defs"]["Payload"]["properties"]["name"]["x-acp-stability"] = "unstable"
    _fails(tmp_path, doc, "an unstable property of a stable definition cannot be required")


def test_a_stable_method_cannot_use_unstable_types_or_gates(tmp_path: Path) -> None:
    doc = base_doc()
    doc["defs"]["RunRequest"]["x-acp-stability"] = "unstable"
    _fails(tmp_path / "a", doc, "stable method uses the unstable type 'RunRequest'")
    doc = base_doc()
    doc["defs"]["AgentCapabilities"]["properties"]["run"]["x-acp-stability"] = "unstable"
    _fails(tmp_path / "b", doc, "passes through the unstable field 'run'")
    doc["protocol"]["methods"]["run"]["stability"] = "unstable"
    load(write_version(doc, tmp_path / "fixed"), "t")


def test_a_stable_union_needs_a_stable_branch(tmp_path: Path) -> None:
    doc = base_doc()
    for name in ("Circle", "Square"):
        doc["defs"][name]["x-acp-stability"] = "unstable"
    _fails(tmp_path, doc, "every branch of this stable union is unstable")
    one = base_doc()
    one["defs"]["Square"]["x-acp-stability"] = "unstable"
    proto = load(write_version(one, tmp_path / "one"), "t")
    compiled = proto.stable_bundle["$defs"]["Shape"]["allOf"]
    assert [r["then"]["$ref"] for r in compiled] == ["#/$defs/Circle"]
    assert proto.stable_bundle["$defs"]["Shape"]["properties"]["kind"] == {"enum": ["circle"]}


def test_unknown_stability_is_rejected(tmp_path: Path) -> None:
    doc = base_doc()
    doc["defs"]["Unused"]["x-acp-stability"] = "experimental"
    _fails(tmp_path, doc, "x-acp-stability")


def test_unstable_methods_need_no_stable_anything(tmp_path: Path) -> None:
    doc = base_doc()
    _unstable_def(doc, "ForkRequest")
    doc["protocol"]["methods"]["session/fork"] = method(
        "agent", "ForkRequest", "RunResponse", None, stability="unstable"
    )
    proto = load(write_version(copy.deepcopy(doc), tmp_path / "v"), "t")
    assert [m.name for m in proto.stable_methods()] == ["initialize", "run"]
    assert "session/fork" in proto.bundle["x-acp-methods"]
    assert "session/fork" not in proto.stable_bundle["x-acp-methods"]
    assert "ForkRequest" not in proto.stable_bundle["$defs"]


@pytest.mark.parametrize("version", VERSIONS)
def test_mcp_message_travels_as_request_and_as_notification(version: str) -> None:
    """`mcp/message` is a request that the published protocol also allows as a notification."""
    from acp_types._jsonrpc import Notification, Request

    m = api(version)
    params = {"serverId": "srv_1", "requestId": "mcpreq_1", "method": "tools/list"}
    req = m.parse_message({"jsonrpc": "2.0", "id": 3, "method": "mcp/message", "params": params})
    assert isinstance(req, Request) and type(req.params).__name__ == "MessageMcpRequest"
    note = m.parse_message({"jsonrpc": "2.0", "method": "mcp/message", "params": params})
    assert isinstance(note, Notification) and type(note.params).__name__ == "MessageMcpNotification"
    with pytest.raises(m.MessageError):  # other requests still need an id
        m.parse_message({"jsonrpc": "2.0", "method": "session/fork", "params": {"sessionId": "s", "cwd": "/w"}})
    with pytest.raises(m.MessageError):  # and the notification form is validated too
        m.parse_message({"jsonrpc": "2.0", "method": "mcp/message", "params": {"method": "x"}})


def test_only_requests_may_have_a_notification_form(tmp_path: Path) -> None:
    doc = base_doc()
    doc["protocol"]["methods"]["note"] = dict(
        method("agent", "RunRequest", None, None, kind="notification"), notificationParams="RunRequest"
    )
    _fails(tmp_path, doc, "only a request can also be sent as a notification")


@pytest.mark.parametrize("version", VERSIONS)
def test_mcp_message_goes_both_ways_through_the_typed_peers(version: str) -> None:
    """mcp/message is handled by either side: both peers carry it, and its result is the inner MCP outcome."""
    from test_connection import init_params, pair, run

    m = api(version)

    class Side:
        def __init__(self, conn: Any) -> None:
            self.conn = conn

        async def initialize(self, params: Any) -> Any:
            if version == "v1":
                return m.InitializeResponse(protocol_version=1)
            return m.InitializeResponse(protocol_version=2, info={"name": "a", "version": "1"})

        async def mcp_message(self, params: Any) -> Any:
            return {"result": {"echo": params.method}} if params.method != "scalar" else {"result": 7}

    async def main() -> None:
        a, c = pair(Side, Side, agent_versions=(version,), client_versions=(version,))
        await c.initialize(init_params(version))
        ask = m.MessageMcpRequest(server_id="srv_1", request_id="mcpreq_1", method="tools/list")
        answer = await c.peer.mcp_message(ask)
        assert type(answer).__name__ == "MessageMcpResponseResult" and answer.result == {"echo": "tools/list"}
        scalar = await a.peer.mcp_message({"serverId": "srv_1", "requestId": "mcpreq_2", "method": "scalar"})
        assert scalar.result == 7
        await c.close()

    run(main)
