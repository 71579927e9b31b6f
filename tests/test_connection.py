"""The connection layer: pairs over in-memory streams, raw lines from a scripted peer, and ends.

Every test runs under a bounded timeout (``run``), so a hang fails instead of blocking the suite.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from acp_types import connection, v1, v2
from acp_types.connection import (
    AgentConnection,
    CapabilityNotAdvertised,
    ClientConnection,
    ConnectionClosed,
    RequestError,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
from echo_handler import EchoAgent  # noqa: E402

TIMEOUT = 10.0


def run(coro_fn: Callable[[], Awaitable[Any]], timeout: float = TIMEOUT) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro_fn(), timeout)

    return asyncio.run(bounded())


class MemoryWriter:
    """The writing end of an in-memory stream: what is written is fed to the other side's reader."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader
        self.closed = False

    def write(self, data: bytes) -> None:
        if not self.closed:
            self.reader.feed_data(data)

    async def drain(self) -> None:
        await asyncio.sleep(0)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.reader.feed_eof()


def pipe() -> tuple[asyncio.StreamReader, MemoryWriter]:
    reader = asyncio.StreamReader()
    return reader, MemoryWriter(reader)


def pair(
    agent: Any,
    client: Any = None,
    *,
    agent_versions: tuple[str, ...] = ("v1", "v2"),
    client_versions: tuple[str, ...] = ("v2", "v1"),
    **kw: Any,
) -> tuple[AgentConnection, ClientConnection]:
    to_agent_r, to_agent_w = pipe()
    to_client_r, to_client_w = pipe()
    a = AgentConnection(to_agent_r, to_client_w, agent, versions=agent_versions)
    c = ClientConnection(to_client_r, to_agent_w, client, versions=client_versions, **kw)
    a.start()
    c.start()
    return a, c


class Collector:
    """A client handler that records the text of every agent_message_chunk, in order."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.text: list[str] = []

    async def session_update(self, params: Any) -> None:
        await asyncio.sleep(0.001)  # slow on purpose: the prompt's answer must still wait for it
        self.text.append(params.update.content.text)


def init_params(version: str) -> Any:
    if version == "v1":
        return v1.InitializeRequest(protocol_version=1, client_info={"name": "t", "version": "1"})
    return v2.InitializeRequest(protocol_version=2, info={"name": "t", "version": "1"})


async def echo_session(c: ClientConnection, ask: str, prompt: str) -> str:
    await c.initialize(init_params(ask))
    m: Any = v1 if c.version == "v1" else v2
    peer = c.peer
    assert isinstance(peer, m.AgentPeer)
    session = await peer.session_new(m.NewSessionRequest(cwd="/tmp", mcp_servers=[]))
    await peer.session_prompt(m.PromptRequest(session_id=session.session_id, prompt=[m.TextContent(text=prompt)]))
    return "".join(c.handler.text)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "agent_versions, ask, settled",
    [
        (("v1", "v2"), "v2", "v2"),
        (("v1", "v2"), "v1", "v1"),
        (("v1",), "v2", "v1"),  # a client asking v2 accepts a v1 answer
        (("v2",), "v1", None),  # a v1-only client refuses a v2 answer
    ],
)
def test_version_negotiation_and_streamed_echo(agent_versions: tuple[str, ...], ask: str, settled: str | None) -> None:
    async def main() -> None:
        client_versions = ("v2", "v1") if ask == "v2" else ("v1",)
        a, c = pair(EchoAgent, Collector, agent_versions=agent_versions, client_versions=client_versions)
        if settled is None:
            with pytest.raises(connection.UnsupportedVersion, match="protocolVersion 2"):
                await c.initialize(init_params(ask))
            await c.close()
            return
        text = await echo_session(c, ask, "one two three four")
        assert text == "one two three four"  # every chunk was handled before the prompt returned
        assert c.version == a.version == settled
        assert type(c.peer_initialize).__module__ == f"acp_types.{settled}.models"
        await c.close()
        await a.wait_closed()

    run(main)


def test_unimplemented_methods_answer_32601_never_success() -> None:
    class Partial(v1.Agent):  # inherits every other stub
        async def initialize(self, params: v1.InitializeRequest) -> v1.InitializeResponse:
            return v1.InitializeResponse(protocol_version=1)

    class Bare:
        pass

    async def main() -> None:
        for handler in (Partial(), Bare()):
            a, c = pair(handler, client_versions=("v1",))
            if isinstance(handler, Partial):
                await c.initialize(init_params("v1"))
            for method, params in (("session/list", {}), ("_acme/thing", {"x": 1})):
                with pytest.raises(RequestError) as info:
                    await c.request(method, params)
                assert info.value.code == v1.METHOD_NOT_FOUND
            await c.close()

    run(main)


def test_protocol_errors_extension_methods_and_internal_errors(caplog: pytest.LogCaptureFixture) -> None:
    class Agent(EchoAgent):
        async def ext_method(self, method: str, params: Any) -> Any:
            return {"echo": params, "method": method}

        async def session_delete(self, params: Any) -> Any:
            raise RuntimeError("secret detail in a traceback")

    async def main() -> None:
        a, c = pair(Agent, client_versions=("v1",))
        await c.initialize(init_params("v1"))
        with pytest.raises(RequestError) as info:
            await c.peer.session_archive(v1.ArchiveSessionRequest(session_id="nope"))
        assert info.value.code == v1.RESOURCE_NOT_FOUND == -32002
        assert await c.request("_acme/ping", {"n": 1}) == {"echo": {"n": 1}, "method": "_acme/ping"}
        await c.notify("_acme/note", {"ignored": True})  # no ext_notification: dropped quietly
        with pytest.raises(RequestError) as info:
            await c.peer.session_delete(v1.DeleteSessionRequest(session_id="s"))
        assert info.value.code == v1.INTERNAL_ERROR
        assert "secret" not in info.value.message and info.value.data is None
        await c.close()

    with caplog.at_level(logging.ERROR, logger="acp_types.connection"):
        run(main)
    assert "secret detail in a traceback" in caplog.text


def test_archive_list_and_unarchive_v2() -> None:
    async def main() -> None:
        a, c = pair(EchoAgent, Collector)
        await c.initialize(init_params("v2"))
        peer = c.peer
        s = await peer.session_new(v2.NewSessionRequest(cwd="/tmp"))
        await peer.session_archive(v2.ArchiveSessionRequest(session_id=s.session_id))
        assert (await peer.session_list(v2.ListSessionsRequest())).sessions == []
        only = await peer.session_list(v2.ListSessionsRequest(archived="only"))
        assert [x.session_id for x in only.sessions] == [s.session_id]
        await peer.session_unarchive(v2.UnarchiveSessionRequest(session_id=s.session_id))
        assert len((await peer.session_list(v2.ListSessionsRequest())).sessions) == 1
        await c.close()

    run(main)


class Raw:
    """A scripted peer: writes raw lines to an agent connection and reads its answers."""

    def __init__(self, handler: Any, versions: tuple[str, ...] = ("v1", "v2"), **kw: Any) -> None:
        self.to_agent_r, self.to_agent_w = pipe()
        self.from_agent_r, from_agent_w = pipe()
        self.conn = AgentConnection(self.to_agent_r, from_agent_w, handler, versions=versions, **kw)
        self.conn.start()

    def send(self, line: bytes | str | dict[str, Any]) -> None:
        if isinstance(line, dict):
            line = json.dumps(line)
        if isinstance(line, str):
            line = line.encode()
        self.to_agent_w.write(line + b"\n")

    async def answer(self) -> dict[str, Any]:
        line = await asyncio.wait_for(self.from_agent_r.readline(), 5)
        assert line, "the agent closed the connection"
        out: dict[str, Any] = json.loads(line)
        return out

    async def initialize(self, version: str = "v1") -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init_params(version).to_wire()})
        return await self.answer()


def test_malformed_lines_get_their_json_rpc_answer_and_never_stop_the_loop() -> None:
    async def main() -> None:
        raw = Raw(EchoAgent)
        assert (await raw.initialize("v1"))["result"]["protocolVersion"] == 1
        cases: list[tuple[Any, int | None, Any]] = [
            ("this is not json", -32700, None),
            ("5", -32600, None),
            ('[{"jsonrpc":"2.0","id":7,"method":"session/list","params":{}}]', -32600, None),  # v1: no batches
            ({"jsonrpc": "1.0", "id": 3, "method": "session/list", "params": {}}, -32600, 3),
            ({"jsonrpc": "2.0", "id": 4, "method": "session/new", "params": {"cwd": 42}}, -32602, 4),
            ({"jsonrpc": "2.0", "id": 5, "method": "no/such", "params": {}}, -32601, 5),
            ({"jsonrpc": "2.0", "id": None, "method": "no/such", "params": {}}, -32601, None),
        ]
        for line, code, rid in cases:
            raw.send(line)
            got = await raw.answer()
            assert got["error"]["code"] == code and got["id"] == rid, (line, got)
        # never answered: broken notifications, responses to unknown ids, an invalid response
        raw.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": 5}})
        raw.send({"jsonrpc": "2.0", "method": "no/such/notification"})
        raw.send({"jsonrpc": "2.0", "id": 999, "result": {}})
        raw.send({"jsonrpc": "2.0", "id": 998, "error": {"code": 1, "message": "x"}})
        raw.send({"jsonrpc": "2.0", "id": 997, "result": {}, "error": {"code": 1, "message": "x"}})
        raw.send({"jsonrpc": "2.0", "id": 8, "method": "session/list", "params": {}})
        assert (await raw.answer()) == {"jsonrpc": "2.0", "id": 8, "result": {"sessions": []}}
        assert not raw.conn.closed

    run(main)


def test_v2_batches_are_handled_entry_by_entry() -> None:
    async def main() -> None:
        raw = Raw(EchoAgent)
        await raw.initialize("v2")
        raw.send(
            json.dumps(
                [
                    {"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}},
                    {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": 1}},
                ]
            )
        )
        line = await asyncio.wait_for(raw.from_agent_r.readline(), 5)
        answers = {a["id"]: a for a in json.loads(line)}  # one array answers the batch
        assert answers[1]["result"] == {"sessions": []}
        assert answers[2]["error"]["code"] == -32602
        raw.send(json.dumps([{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}]))
        raw.send({"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}})
        assert (await raw.answer())["id"] == 3  # a batch of notifications gets no answer

    run(main)


def test_oversized_lines_are_skipped_unbuffered_and_answered() -> None:
    async def main() -> None:
        raw = Raw(EchoAgent, max_line_size=1000)
        await raw.initialize()
        raw.send(b'{"jsonrpc":"2.0","id":1,"method":"_x","params":{"pad":"' + b"x" * 200_000 + b'"}}')
        got = await raw.answer()
        # its id is in the line's first bytes: the answer names it
        assert got["id"] == 1 and got["error"]["code"] == -32600 and "1000 bytes" in got["error"]["message"]
        raw.send(b'{"jsonrpc":"2.0","method":"_x","params":{"pad":"' + b"x" * 200_000 + b'"},"id":"end"}')
        assert (await raw.answer())["id"] == "end"  # or in its last bytes
        raw.send({"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}})
        assert (await raw.answer())["id"] == 2

    run(main)


def test_duplicate_request_ids_and_requests_in_their_own_tasks() -> None:
    release = asyncio.Event

    class Slow(EchoAgent):
        gate: asyncio.Event

        async def session_list(self, params: Any) -> Any:
            if params.cursor == "wait":
                await self.gate.wait()
            else:
                self.gate.set()  # the second request frees the first: they must run concurrently
            return v1.ListSessionsResponse(sessions=[])

    async def main() -> None:
        Slow.gate = release()
        raw = Raw(Slow)
        await raw.initialize()
        raw.send({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {"cursor": "wait"}})
        raw.send({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}})
        dup = await raw.answer()
        assert dup["id"] == 1 and dup["error"]["code"] == -32600 and "already in use" in dup["error"]["message"]
        raw.send({"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}})
        ids = [(await raw.answer())["id"], (await raw.answer())["id"]]
        assert sorted(ids) == [1, 2]

    run(main)


def test_notifications_are_handled_in_arrival_order() -> None:
    class Agent(EchoAgent):
        async def session_prompt(self, params: Any) -> Any:
            for i in range(200):
                await self.conn.notify(
                    "session/update",
                    {
                        "sessionId": params.session_id,
                        "update": {
                            "sessionUpdate": "agent_message_chunk",
                            "content": {"type": "text", "text": f"{i},"},
                        },
                    },
                )
            return v1.PromptResponse(stop_reason="end_turn")

    class Jittery(Collector):
        async def session_update(self, params: Any) -> None:
            n = int(params.update.content.text.rstrip(","))
            await asyncio.sleep(0.002 if n % 7 == 0 else 0)
            self.text.append(params.update.content.text)

    async def main() -> None:
        a, c = pair(Agent, Jittery, client_versions=("v1",))
        text = await echo_session(c, "v1", "x")
        assert text == "".join(f"{i}," for i in range(200))
        await c.close()

    run(main)


class Recording(MemoryWriter):
    """A MemoryWriter that keeps what went through it."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        super().__init__(reader)
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)
        super().write(data)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_cancelling_a_request_sends_cancel_request_only_where_the_version_has_it(version: str) -> None:
    # v2 cancels the peer's handler with $/cancel_request; v1 advertises no support for it (agents
    # answer it with -32601), so only the wait ends and the agent's handler goes on
    seen: list[str] = []

    class Agent(EchoAgent):
        async def session_list(self, params: Any) -> Any:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise
            return v1.ListSessionsResponse(sessions=[])

    async def main() -> None:
        to_agent_r, to_client_r = asyncio.StreamReader(), asyncio.StreamReader()
        to_agent_w = Recording(to_agent_r)
        a = AgentConnection(to_agent_r, MemoryWriter(to_client_r), Agent, versions=(version,))
        c = ClientConnection(to_client_r, to_agent_w, None, versions=(version,))
        a.start()
        await c.initialize(init_params(version))
        task = asyncio.ensure_future(c.request("session/list", {}))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(20):
            if seen:
                break
            await asyncio.sleep(0.01)
        cancels = [w for w in to_agent_w.written if b"$/cancel_request" in w]
        if version == "v1":
            assert (seen, cancels) == ([], [])
            assert list(a._in) == [2]  # the agent's handler goes on
        else:
            assert seen == ["cancelled"] and len(cancels) == 1
        assert c._out == {} and len(c._pending) == 0
        await c.close()
        await a.close()

    run(main)


def test_a_received_cancel_request_answers_32800() -> None:
    class Agent(EchoAgent):
        async def session_list(self, params: Any) -> Any:
            await asyncio.sleep(30)

    async def main() -> None:
        raw = Raw(Agent)
        await raw.initialize()
        raw.send({"jsonrpc": "2.0", "id": "r1", "method": "session/list", "params": {}})
        await asyncio.sleep(0.05)
        raw.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "r1"}})
        got = await raw.answer()
        assert got["id"] == "r1" and got["error"]["code"] == v1.REQUEST_CANCELLED == -32800

    run(main)


def test_outgoing_messages_are_checked_before_anything_is_written() -> None:
    async def main() -> None:
        a, c = pair(EchoAgent, Collector, client_versions=("v1",))
        await c.initialize(init_params("v1"))
        written: list[bytes] = []
        original = a._writer.write
        a._writer.write = lambda data: (written.append(data), original(data))  # type: ignore[method-assign]
        with pytest.raises(TypeError, match="v1.SessionNotification, not v1.PromptResponse"):
            await a.notify("session/update", v1.PromptResponse(stop_reason="end_turn"))
        with pytest.raises(Exception, match="sessionId"):
            await a.notify("session/update", {"update": {}})
        with pytest.raises(ValueError, match="handled by the agent"):
            await a.request("session/new", {"cwd": "/", "mcpServers": []})
        with pytest.raises(ValueError, match="not a method of ACP v1"):
            await c.request("auth/login", {})
        assert written == []
        await c.close()

    run(main)


def test_strict_mode_refuses_methods_the_agent_did_not_advertise() -> None:
    async def main() -> None:
        for strict in (True, False):
            a, c = pair(EchoAgent, Collector, client_versions=("v1",), strict_capabilities=strict)
            await c.initialize(init_params("v1"))
            # the echo agent advertises list and archive, but not delete
            assert (await c.peer.session_list(v1.ListSessionsRequest())).sessions == []
            if strict:
                with pytest.raises(CapabilityNotAdvertised) as info:
                    await c.peer.session_delete(v1.DeleteSessionRequest(session_id="s"))
                assert info.value.capability == "agentCapabilities.sessionCapabilities.delete"
            else:
                with pytest.raises(RequestError) as err:
                    await c.peer.session_delete(v1.DeleteSessionRequest(session_id="s"))
                assert err.value.code == -32601
            await c.close()

    run(main)


def test_the_end_of_input_fails_pending_requests_clearly() -> None:
    class Agent(EchoAgent):
        async def session_list(self, params: Any) -> Any:
            self.conn._writer.close()  # the agent goes away mid-request
            await asyncio.sleep(30)

    async def main() -> None:
        a, c = pair(Agent, client_versions=("v1",))
        await c.initialize(init_params("v1"))
        with pytest.raises(ConnectionClosed, match="end of input.*session/list"):
            await c.request("session/list", {})
        await c.wait_closed()
        with pytest.raises(ConnectionClosed):
            await c.request("session/list", {})

    run(main)


def test_typed_discoverable_api() -> None:
    assert {
        "parse_message",
        "PendingRequests",
        "MessageError",
        "Notification",
        "Request",
        "Response",
        "AgentPeer",
        "RESOURCE_NOT_FOUND",
    } <= set(v1.__all__)
    assert v1.Notification is v1.messages.Notification and v2.Batch is v2.messages.Batch
    assert (v1.AUTH_REQUIRED, v1.RESOURCE_NOT_FOUND, v1.REQUEST_CANCELLED) == (-32000, -32002, -32800)
    assert v2.ERRORS[-32002] == "resource_not_found"
    assert v1.TextContent(text="hi").to_wire() == {"type": "text", "text": "hi"}
    assert v2.TextContent(text="hi").to_json() == '{"type":"text","text":"hi"}'
    with pytest.raises(Exception, match="type"):  # on the wire the tag stays required
        v1.parse_params("session/prompt", {"sessionId": "s", "prompt": [{"text": "hi"}]})
    assert all(spec.handler for spec in v1.METHODS.values())
    assert v2.METHODS["$/cancel_request"].handler == "cancel_request"


@pytest.mark.parametrize(
    "line, kind, has_id, rid",
    [
        ('{"jsonrpc":"2.0","method":"session/new","params":{}}', "notification", False, None),
        ('{"jsonrpc":"2.0","id":null,"method":"session/new","params":{}}', "request", True, None),
        ('{"jsonrpc":"2.0","id":3,"method":"session/new","params":{}}', "request", True, 3),
        ('{"jsonrpc":"2.0","id":3}', None, True, 3),
        ('{"jsonrpc":"2.0","result":{}}', "response", False, None),
        ('{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}', "error", True, 1),
        ("[1]", "batch", False, None),
        ("nope", None, False, None),
    ],
)
def test_message_error_says_what_failed(line: str, kind: str | None, has_id: bool, rid: Any) -> None:
    with pytest.raises(v1.MessageError) as info:
        v1.parse_message(line)
    assert (info.value.kind, info.value.has_id, info.value.id) == (kind, has_id, rid)
    assert info.value.answerable == (kind in (None, "request", "batch"))


def test_extension_notifications_reach_ext_notification_in_order_and_are_never_answered() -> None:
    got: list[tuple[str, Any]] = []

    class Agent(EchoAgent):
        async def ext_notification(self, method: str, params: Any) -> None:
            got.append((method, params))

    async def main() -> None:
        for handler in (Agent, EchoAgent):  # with a catch-all, and without one (dropped)
            got.clear()
            raw = Raw(handler)
            await raw.initialize()
            for i in range(3):
                raw.send({"jsonrpc": "2.0", "method": f"_acme/n{i}", "params": {"i": i}})
            raw.send({"jsonrpc": "2.0", "id": 9, "method": "session/list", "params": {}})
            assert (await raw.answer())["id"] == 9  # the first answer: nothing answered the notifications
            for _ in range(100):
                if len(got) == 3 or handler is EchoAgent:
                    break
                await asyncio.sleep(0.01)
            expected = [(f"_acme/n{i}", {"i": i}) for i in range(3)] if handler is Agent else []
            assert got == expected
            await raw.conn.close()

    run(main)


@pytest.mark.parametrize("params", [v1.ListSessionsRequest(cursor=None), {"cursor": None}])
def test_an_explicit_null_in_outbound_params_reaches_the_wire(params: Any) -> None:
    # the write-back keeps what was set, nulls included (a writer with exclude_none would drop it)
    async def main() -> None:
        to_agent_r, to_client_r = asyncio.StreamReader(), asyncio.StreamReader()
        to_agent_w = Recording(to_agent_r)
        a = AgentConnection(to_agent_r, MemoryWriter(to_client_r), EchoAgent, versions=("v1",))
        c = ClientConnection(to_client_r, to_agent_w, None, versions=("v1",))
        a.start()
        await c.initialize(init_params("v1"))
        await c.request("session/list", params)
        sent = json.loads(to_agent_w.written[-1])
        assert sent["method"] == "session/list" and sent["params"] == {"cursor": None}
        await c.close()
        await a.close()

    run(main)


def test_request_error_str_shows_its_data_compactly_and_bounded() -> None:
    err = RequestError(-32603, "Internal error", {"message": "stream disconnected before completion"})
    assert str(err) == 'Internal error (code -32603): {"message":"stream disconnected before completion"}'
    assert str(RequestError(-32603, "Internal error")) == "Internal error (code -32603)"
    long = str(RequestError(1, "m", "x" * 10_000))
    assert long.startswith('m (code 1): "xxx') and len(long) < 400 and long.endswith("\u2026")
    assert "{1, 2}" in str(RequestError(1, "m", {1, 2}))  # not JSON: shown anyway, never a failure


def test_at_end_of_input_running_handlers_finish_and_are_answered() -> None:
    # a client that half-closes its side may still read: what is running finishes and is answered,
    # within close_timeout; what is still running then is cancelled and answered -32800
    class Agent(EchoAgent):
        async def session_list(self, params: Any) -> Any:
            await asyncio.sleep(0.2 if params.cursor == "soon" else 30)
            return v1.ListSessionsResponse(sessions=[], next_cursor=params.cursor)

    async def main() -> None:
        raw = Raw(Agent, close_timeout=1.0)
        await raw.initialize()
        raw.send({"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {"cursor": "soon"}})
        raw.send({"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {"cursor": "never"}})
        raw.to_agent_w.close()  # end of input
        first, second = await raw.answer(), await raw.answer()
        assert first == {"jsonrpc": "2.0", "id": 1, "result": {"sessions": [], "nextCursor": "soon"}}
        assert second["id"] == 2 and second["error"]["code"] == -32800
        await asyncio.wait_for(raw.conn.wait_closed(), 5)

    run(main)


def test_requests_beyond_max_in_flight_wait_unstarted_and_all_are_answered() -> None:
    running: list[int] = []
    peak = [0]

    class Agent(EchoAgent):
        async def session_list(self, params: Any) -> Any:
            running.append(1)
            peak[0] = max(peak[0], len(running))
            await asyncio.sleep(0.01)
            running.pop()
            return v1.ListSessionsResponse(sessions=[])

    async def main() -> None:
        raw = Raw(Agent, max_in_flight=3)
        await raw.initialize()
        for i in range(1, 21):
            raw.send({"jsonrpc": "2.0", "id": i, "method": "session/list", "params": {}})
        ids = sorted([(await raw.answer())["id"] for _ in range(20)])
        assert ids == list(range(1, 21)) and peak[0] == 3
        await raw.conn.close()

    run(main)


def test_notifications_beyond_max_queued_wait_in_order_and_responses_still_arrive() -> None:
    # the notification handler is stuck until the agent's own request is answered: that answer must
    # be read although the queue is full, or the connection would deadlock
    got: list[int] = []

    class Client:
        def __init__(self, conn: Any) -> None:
            self.conn = conn

        async def ext_notification(self, method: str, params: Any) -> None:
            if params["i"] == 0:
                await self.conn.request("_ask", {})  # answered by the agent only after all 50 are sent
            got.append(params["i"])

    class Agent(EchoAgent):
        async def ext_method(self, method: str, params: Any) -> Any:
            return {}

    async def main() -> None:
        a, c = pair(Agent, Client, client_versions=("v1",))
        c.max_queued = 2
        await c.initialize(init_params("v1"))
        for i in range(50):
            await a.notify("_tick", {"i": i})
        for _ in range(200):
            if len(got) == 50:
                break
            await asyncio.sleep(0.01)
        assert got == list(range(50))
        await c.close()

    run(main)


def test_big_lines_are_parsed_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    threads: list[str] = []

    async def main() -> None:
        raw = Raw(EchoAgent, versions=("v1",))
        await raw.initialize()
        version = raw.conn._version
        parse = version.parse

        def recording(line: Any, **kw: Any) -> Any:
            threads.append(threading.current_thread().name)
            return parse(line, **kw)

        monkeypatch.setattr(version, "parse", recording)
        pad = "x" * (connection.OFF_LOOP_ABOVE + 10)
        raw.send({"jsonrpc": "2.0", "id": 1, "method": "_pad", "params": {"pad": pad}})
        raw.send({"jsonrpc": "2.0", "id": 2, "method": "_pad", "params": {}})
        assert [(await raw.answer())["id"], (await raw.answer())["id"]] == [1, 2]
        main_thread = threading.main_thread().name
        assert threads[0] != main_thread and threads[1] == main_thread

    run(main)


def test_an_answer_queued_behind_a_notification_is_delivered_when_the_connection_closes() -> None:
    # the answer waits for the notification before it (ordering); closing mid-notification must
    # still settle the request instead of leaving its caller waiting forever
    class Agent(EchoAgent):
        async def ext_method(self, method: str, params: Any) -> Any:
            await self.conn.notify("_slow", {})
            return {"done": True}

    class Client:
        def __init__(self, conn: Any) -> None:
            self.conn = conn

        async def ext_notification(self, method: str, params: Any) -> None:
            await asyncio.sleep(30)

    async def main() -> None:
        a, c = pair(Agent, Client, client_versions=("v1",))
        await c.initialize(init_params("v1"))
        task = asyncio.ensure_future(c.request("_x", {}))
        await asyncio.sleep(0.1)
        assert not task.done()  # its answer is queued behind the slow notification
        await c.close()
        assert await asyncio.wait_for(task, 2) == {"done": True}
        await a.close()

    run(main)


def test_help_states_the_limits() -> None:
    doc = connection.__doc__ or ""
    for name in (
        "max_line_size",
        "max_in_flight",
        "max_queued",
        "max_batch",
        "close_timeout",
        "HOLD_LIMIT",
        "WRITE_HIGH_WATER",
        "OFF_LOOP_ABOVE",
        "LOG_BURST",
        "ResponseTooLarge",
        "$/cancel_request",
    ):
        assert name in doc, name
