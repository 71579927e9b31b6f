"""A connection on a transport of whole messages (no newlines, no byte streams): the interface alone.

``MemoryTransport`` (tests/test_transport_limits.py) passes messages through
queues, as a WebSocket passes text frames. Over it: version negotiation and a
streamed prompt turn with the typed peers, both versions; backpressure from
``buffered()``; the end of input, a failed read and ``close()``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_types import connection, v1, v2
from acp_types.connection import AgentConnection, ClientConnection, ConnectionClosed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
from echo_handler import EchoAgent  # noqa: E402
from test_connection import Collector, echo_session, init_params, run  # noqa: E402
from test_transport_limits import MemoryTransport, memory_pair  # noqa: E402


@pytest.mark.parametrize(
    "agent_versions, ask, settled",
    [(("v1", "v2"), "v2", "v2"), (("v1", "v2"), "v1", "v1"), (("v1",), "v2", "v1")],
)
def test_a_prompt_turn_over_a_message_transport(agent_versions: tuple[str, ...], ask: str, settled: str) -> None:
    async def main() -> None:
        a_end, c_end = memory_pair()
        agent = AgentConnection.on_transport(a_end, EchoAgent, versions=agent_versions)
        client = ClientConnection.on_transport(c_end, Collector, versions=("v2", "v1") if ask == "v2" else ("v1",))
        assert agent.transport is a_end and agent.max_line_size is None
        async with agent, client:
            assert await echo_session(client, ask, "one two three") == "one two three"
            assert client.version == agent.version == settled
        assert a_end.closed and c_end.closed  # close() closed each side's transport

    run(main)


def test_serve_transport_runs_an_agent_until_the_input_ends() -> None:
    async def main() -> None:
        a_end, c_end = memory_pair()
        served = asyncio.ensure_future(connection.serve_transport(a_end, EchoAgent, versions=("v2",)))
        client = ClientConnection.on_transport(c_end, Collector, versions=("v2",))
        async with client:
            answer = await client.initialize(init_params("v2"))
            assert isinstance(answer, v2.InitializeResponse)
        await asyncio.wait_for(served, 5)  # the client's close is the agent's end of input

    run(main)


def test_a_peer_that_takes_no_messages_is_not_read_from() -> None:
    # buffered() above WRITE_HIGH_WATER pauses reading: nothing new is started for a peer that reads nothing
    calls = [0]
    big = "x" * 10_000

    class Agent(EchoAgent):
        async def ext_method(self, method: str, params: Any) -> Any:
            calls[0] += 1
            return {"echo": big}

    async def main() -> None:
        mine, theirs = memory_pair()
        agent = AgentConnection.on_transport(mine, Agent, versions=("v1",))
        agent.start()
        count = 200  # 2 MB of answers if every one were handled
        for rid in range(1, count + 1):
            theirs.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "_big", "params": {}}).encode())
        for _ in range(50):  # let the agent run as far as it can
            await asyncio.sleep(0)
        bound = connection.WRITE_HIGH_WATER + agent.max_in_flight * 10_100
        assert mine.buffered() < bound
        assert calls[0] <= connection.WRITE_HIGH_WATER // 10_000 + 1 + agent.max_in_flight
        ids = []
        for _ in range(count):  # once the peer takes them, every request is answered, in order
            frame = await theirs.receive()
            assert isinstance(frame, bytes)
            ids.append(json.loads(frame)["id"])
        assert ids == list(range(1, count + 1))
        await agent.close()

    run(main)


class _Failing(MemoryTransport):
    async def receive(self) -> bytes | connection.Oversized | None:
        frame = await super().receive()
        if frame == b"fail":
            raise ConnectionResetError("the socket went away")
        return frame


def test_a_failed_read_ends_the_connection_and_fails_pending_requests() -> None:
    async def main() -> None:
        _, theirs = memory_pair()
        mine = _Failing(theirs.outbox, theirs.inbox, 1 << 20)
        client = ClientConnection.on_transport(mine, None, versions=("v1",))
        client.start()
        pending = asyncio.ensure_future(client.request("session/list", {}))
        assert json.loads(await theirs.receive() or b"")["method"] == "session/list"
        theirs.send(b"fail")
        with pytest.raises(ConnectionClosed, match="reading failed: the socket went away"):
            await pending
        await client.wait_closed()
        assert mine.closed

    run(main)


def test_the_end_of_input_fails_pending_requests_and_later_ones() -> None:
    async def main() -> None:
        mine, theirs = memory_pair()
        client = ClientConnection.on_transport(mine, None, versions=("v1",))
        client.start()
        pending = asyncio.ensure_future(client.request("session/list", {}))
        await theirs.receive()
        await theirs.close()  # the peer ends: receive() returns None
        with pytest.raises(ConnectionClosed, match="end of input"):
            await pending
        await client.wait_closed()
        with pytest.raises(ConnectionClosed):
            await client.peer.session_list(v1.ListSessionsRequest())

    run(main)
