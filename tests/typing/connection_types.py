"""What a type checker knows of a connection: its peer, ``initialize`` result, ``peer_initialize`` and handler.

Checked by tests/test_connection_types.py under mypy --strict: every
``assert_type`` holds, each line marked ``# E:`` is an error of that code,
and each ``reveal_type`` marked ``# N:`` reveals that type.
"""

from __future__ import annotations

from typing_extensions import assert_type, reveal_type

from acp_types import client, connection, v1, v2


class Printer:
    def __init__(self, conn: connection.ClientConnection) -> None:
        self.conn = conn

    async def session_update(self, params: v1.SessionNotification) -> None:
        return None


class Echo(v1.Agent):
    def __init__(self, conn: connection.AgentConnection) -> None:
        self.conn = conn

    async def session_prompt(self, params: v1.PromptRequest) -> v1.PromptResponse:
        peer = self.conn.peer  # the agent speaks both versions: the client's peer is either
        assert_type(peer, v1.ClientPeer | v2.ClientPeer)
        await peer.sesion_update(params)  # E: union-attr
        assert isinstance(peer, v1.ClientPeer)
        chunk = v1.AgentMessageChunk(content=v1.TextContent(text="hi"))
        await peer.session_update(v1.SessionNotification(session_id=params.session_id, update=chunk))
        v1_conn = self.conn.as_version("v1")  # the same, once initialize settled v1
        assert_type(v1_conn.peer, v1.ClientPeer)
        assert_type(v1_conn.peer_initialize, v1.InitializeRequest | None)
        await v1_conn.peer.session_update(v2.UpdateSessionNotification(session_id="s", update=chunk))  # E: arg-type
        return v1.PromptResponse(stop_reason="end_turn")


async def one_version(command: list[str]) -> None:
    async with connection.spawn_agent(command, Printer, versions=("v1",)) as conn:
        assert_type(conn, connection.ClientConnection[v1.AgentPeer, v1.InitializeResponse, Printer])
        assert_type(conn.handler, Printer)
        reveal_type(conn.peer)  # N: acp_types.v1.peer.AgentPeer
        init = await conn.initialize(v1.InitializeRequest(protocol_version=1))
        assert_type(init, v1.InitializeResponse)
        assert_type(conn.peer_initialize, v1.InitializeResponse | None)
        session = await conn.peer.session_new(v1.NewSessionRequest(cwd="/", mcp_servers=[]))
        assert_type(session, v1.NewSessionResponse)
        await conn.peer.sesion_new(v1.NewSessionRequest(cwd="/", mcp_servers=[]))  # E: attr-defined
        await conn.peer.session_new(v2.NewSessionRequest(cwd="/"))  # E: arg-type
        await conn.handler.sesion_update(v1.SessionNotification.model_validate({}))  # E: attr-defined


def misspelled_option(command: list[str]) -> None:
    connection.spawn_agent(command, Printer, versions=("v1",), max_line_sise=1)  # E: call-overload


async def both_versions(command: list[str]) -> None:
    async with connection.spawn_agent(command, client.SessionClient) as conn:
        assert_type(conn.handler, client.SessionClient)
        info = v2.Implementation(name="c", version="1")
        init = await conn.initialize(v2.InitializeRequest(protocol_version=2, info=info))
        assert_type(init, v1.InitializeResponse | v2.InitializeResponse)
        print(init.capabilities)  # E: union-attr
        if isinstance(init, v2.InitializeResponse):
            v2_conn = conn.as_version("v2")
            assert_type(v2_conn.peer, v2.AgentPeer)
            await v2_conn.peer.session_new(v2.NewSessionRequest(cwd="/"))
        await conn.peer.session_new(v2.NewSessionRequest(cwd="/"))  # E: arg-type
        conn.as_version("v3")  # E: call-overload


async def v2_agent(reader: connection.Reader, writer: connection.Writer) -> None:
    conn = connection.AgentConnection(reader, writer, Echo, versions=("v2",))
    assert_type(conn.peer, v2.ClientPeer)
    assert_type(conn.handler, Echo)
    assert_type(conn.peer_initialize, v2.InitializeRequest | None)
    print(conn.peer_initialize.capabilities)  # E: union-attr
    echo = Echo(conn)  # a v2 connection is a connection of either version: covariant
    plain = connection.AgentConnection(reader, writer, echo)
    assert_type(plain.handler, Echo)
    assert_type(plain.peer, v1.ClientPeer | v2.ClientPeer)
