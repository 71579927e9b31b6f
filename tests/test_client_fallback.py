"""A v2 client falling back to a v1 agent keeps its client capabilities.

A v2 ``initialize`` has no ``clientCapabilities`` (v2 has no ``fs`` or
``terminal`` methods), so a v1 agent that answered one knows nothing of what
the client serves. The client connection then sends ``initialize`` again in
v1, with the client's info and the capability of each v1 client method its
handler implements; the agent reads the client's buffer.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from acp_types import client, connection, v1, v2

ROOT = Path(__file__).resolve().parents[1]
V1_AGENT = f"""
import asyncio, json, sys
sys.path.insert(0, {str(ROOT / "generated")!r})
from acp_types import agent

class Reads(agent.App):
    async def prompt(self, turn):
        init = turn.session.connection.peer_initialize.to_wire()
        text = await turn.read_file('/some/file')
        await turn.text(json.dumps({{"init": init, "read": text}}))
        return 'end_turn'

asyncio.run(agent.serve_stdio(Reads(), versions=('v1',)))
"""
INFO = {"name": "editor", "version": "2.0"}


class Editor(client.SessionClient):
    async def fs_read_text_file(self, params: v1.ReadTextFileRequest) -> v1.ReadTextFileResponse:
        return v1.ReadTextFileResponse(content="the unsaved buffer")


async def _what_the_agent_saw(handler: Any, **initialize: Any) -> Any:
    async with connection.spawn_agent([sys.executable, "-c", V1_AGENT], handler) as conn:
        answer = await conn.initialize(v2.InitializeRequest(protocol_version=2, info=INFO), **initialize)
        assert (conn.version, type(answer)) == ("v1", v1.InitializeResponse)
        acp = conn.handler
        session_id = await acp.new_session("/tmp")
        await acp.prompt(session_id, "go")
        return json.loads(acp.states[session_id].messages[-1].text)


def test_the_v1_initialize_of_the_fallback_carries_the_capabilities_the_handler_serves() -> None:
    seen = asyncio.run(asyncio.wait_for(_what_the_agent_saw(Editor), 60))
    assert seen["init"] == {
        "protocolVersion": 1,
        "clientInfo": INFO,
        "clientCapabilities": {"fs": {"readTextFile": True}},
    }
    assert seen["read"] == "the unsaved buffer"


def test_a_handler_without_fs_methods_advertises_none() -> None:
    seen = asyncio.run(asyncio.wait_for(_what_the_agent_saw(client.SessionClient), 60))
    assert seen["init"]["clientCapabilities"] == {}
    assert seen["read"] is None


def test_an_explicit_fallback_request_is_sent_as_given() -> None:
    fallback = v1.InitializeRequest(
        protocol_version=1,
        client_info={"name": "mine", "version": "1"},
        client_capabilities=v1.ClientCapabilities(terminal=True),
    )
    seen = asyncio.run(asyncio.wait_for(_what_the_agent_saw(Editor, fallback=fallback), 60))
    assert seen["init"] == fallback.to_wire()
    assert seen["read"] is None  # the request given says nothing of fs


STRICT_AGENT = f"""
import asyncio, sys
sys.path.insert(0, {str(ROOT / "generated")!r})
from acp_types import connection, v1

class Agent:
    def __init__(self, conn):
        self.conn = conn
    async def initialize(self, params):
        return v1.InitializeResponse(protocol_version=1)
    async def session_new(self, params):
        return v1.NewSessionResponse(session_id="s")
    async def session_prompt(self, params):
        try:
            await self.conn.peer.fs_read_text_file(v1.ReadTextFileRequest(session_id="s", path="/x"))
            said = "sent"
        except connection.CapabilityNotAdvertised as exc:
            said = type(exc).__name__
        chunk = v1.AgentMessageChunk(content=v1.TextContent(text=said))
        await self.conn.peer.session_update(v1.SessionNotification(session_id="s", update=chunk))
        return v1.PromptResponse(stop_reason="end_turn")

asyncio.run(connection.serve_stdio(Agent, versions=("v1",), {{strict}}))
"""


def _said(serve_options: str) -> str:
    async def main() -> str:
        code = STRICT_AGENT.replace("{strict}", serve_options)
        async with connection.spawn_agent([sys.executable, "-c", code], Editor, versions=("v1",)) as conn:
            await conn.initialize(v1.InitializeRequest(protocol_version=1))  # no fs advertised
            acp = conn.handler
            session_id = await acp.new_session("/tmp")
            await acp.prompt(session_id, "go")
            return acp.states[session_id].messages[-1].text

    return asyncio.run(asyncio.wait_for(main(), 60))


def test_strict_capabilities_is_an_option_of_serve_stdio() -> None:
    assert _said("strict_capabilities=True") == "CapabilityNotAdvertised"
    assert _said("strict_capabilities=False") == "sent"
