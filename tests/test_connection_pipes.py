"""The connection's fast paths: lines read straight off OS pipes, handlers started eagerly, backpressure.

Connections made with ``connection.pipe_streams`` read through a ``PipeReader``, which hands every
chunk to the connection as the transport delivers it; a request's handler runs at once until it
first suspends, and only then gets a task of its own. These tests check that nothing the rest of
the suite relies on changes on that path (order, concurrency, cancellation both ways), and that a
peer that does not read our answers stops being read from instead of filling memory.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_types import connection, v1
from acp_types.connection import AgentConnection, ClientConnection, PipeReader

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
from echo_handler import EchoAgent  # noqa: E402
from test_connection import Collector, echo_session, init_params, run  # noqa: E402


async def os_pipe() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    r, w = os.pipe()
    return await connection.pipe_streams(os.fdopen(r, "rb", 0), os.fdopen(w, "wb", 0))


async def pipe_pair(agent: Any, client: Any = None, **kw: Any) -> tuple[AgentConnection, ClientConnection]:
    (a_in, c_out), (c_in, a_out) = await os_pipe(), await os_pipe()
    assert isinstance(a_in, PipeReader) and isinstance(c_in, PipeReader)
    a = AgentConnection(a_in, a_out, agent)
    c = ClientConnection(c_in, c_out, client, **kw)
    a.start()
    c.start()
    return a, c


class RawPipe:
    """A scripted peer over OS pipes: raw lines to an agent connection, its answers read back."""

    async def open(self, handler: Any) -> RawPipe:
        (a_in, self.to_agent), (self.from_agent, a_out) = await os_pipe(), await os_pipe()
        self.conn = AgentConnection(a_in, a_out, handler, versions=("v1",))
        self.conn.start()
        return self

    def send(self, *messages: dict[str, Any]) -> None:
        """Write every message in one write, so the agent reads them as one chunk."""
        self.to_agent.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))

    async def answer(self) -> dict[str, Any]:
        line = await asyncio.wait_for(self.from_agent.readline(), 5)
        assert line, "the agent closed the connection"
        out: dict[str, Any] = json.loads(line)
        return out


def request(rid: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


@pytest.mark.parametrize("ask", ["v1", "v2"])
def test_an_echo_session_over_os_pipes_through_pipe_readers(ask: str) -> None:
    async def main() -> None:
        a, c = await pipe_pair(EchoAgent, Collector)
        text = await echo_session(c, ask, "one two three")
        assert text == "one two three"  # every streamed chunk was handled before the prompt returned
        assert c.version == a.version == ask
        await c.close()
        await a.wait_closed()

    run(main)


def test_eager_handlers_still_run_concurrently_and_answer_in_completion_order() -> None:
    class Agent(EchoAgent):
        gate: asyncio.Event

        async def session_list(self, params: Any) -> Any:
            if params.cursor == "wait":
                await self.gate.wait()  # suspends: goes on in a task of its own
            else:
                self.gate.set()  # answered at once, and frees the first
            return v1.ListSessionsResponse(sessions=[], next_cursor=params.cursor)

    async def main() -> None:
        Agent.gate = asyncio.Event()
        raw = await RawPipe().open(Agent)
        raw.send(request(0, "initialize", init_params("v1").to_wire()))
        assert (await raw.answer())["id"] == 0
        # one chunk: the suspended first request must not hold up the second
        raw.send(request(1, "session/list", {"cursor": "wait"}), request(2, "session/list", {"cursor": "now"}))
        first, second = await raw.answer(), await raw.answer()
        assert (first["id"], second["id"]) == (2, 1)
        assert raw.conn._in == {}  # the finished task is forgotten
        await raw.conn.close()

    run(main)


def test_a_cancel_request_in_the_same_chunk_cancels_a_suspended_handler() -> None:
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
        raw = await RawPipe().open(Agent)
        raw.send(request(0, "initialize", init_params("v1").to_wire()))
        await raw.answer()
        # the cancel arrives before the handler's task has taken even one step
        raw.send(
            request("r1", "session/list", {}),
            {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "r1"}},
        )
        got = await raw.answer()
        assert got["id"] == "r1" and got["error"]["code"] == -32800
        # 3.12+ starts the handler eagerly, so it sees the cancellation; before, it never starts
        assert seen == (["cancelled"] if sys.version_info >= (3, 12) else [])
        await raw.conn.close()

    run(main)


def test_a_handler_that_suspends_later_is_cancelled_where_it_waits() -> None:
    seen: list[str] = []

    class Agent(EchoAgent):
        async def session_list(self, params: Any) -> Any:
            await asyncio.sleep(0)  # one trip through the loop, then a long wait
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise
            return v1.ListSessionsResponse(sessions=[])

    async def main() -> None:
        raw = await RawPipe().open(Agent)
        raw.send(request(0, "initialize", init_params("v1").to_wire()))
        await raw.answer()
        raw.send(request(7, "session/list", {}))
        await asyncio.sleep(0.05)
        assert list(raw.conn._in) == [7]
        raw.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 7}})
        got = await raw.answer()
        assert (got["id"], got["error"]["code"], seen) == (7, -32800, ["cancelled"])
        await raw.conn.close()

    run(main)


def test_a_handler_runs_in_a_task_of_its_own_after_its_first_suspension() -> None:
    tasks: list[Any] = []

    class Agent(EchoAgent):
        async def session_list(self, params: Any) -> Any:
            await asyncio.sleep(0)
            tasks.append(asyncio.current_task())
            return v1.ListSessionsResponse(sessions=[])

    async def main() -> None:
        raw = await RawPipe().open(Agent)
        raw.send(request(0, "initialize", init_params("v1").to_wire()))
        await raw.answer()
        raw.send(request(1, "session/list", {}), request(2, "session/list", {}))
        assert {(await raw.answer())["id"], (await raw.answer())["id"]} == {1, 2}
        reading = raw.conn._reading
        assert len(tasks) == 2 and None not in tasks
        assert tasks[0] is not tasks[1] and reading not in tasks and raw.conn._worker not in tasks
        await raw.conn.close()

    run(main)


def test_a_peer_that_does_not_read_its_answers_is_not_read_from() -> None:
    big = "x" * 20_000
    calls = [0]

    class Agent(EchoAgent):
        async def ext_method(self, method: str, params: Any) -> Any:
            calls[0] += 1
            return {"echo": big}

    async def main() -> None:
        raw = await RawPipe().open(Agent)
        raw.send(request(0, "initialize", init_params("v1").to_wire()))
        await raw.answer()
        count = 500  # 10 MB of answers if every request were handled at once
        raw.send(*(request(i, "_big", {}) for i in range(1, count + 1)))
        await asyncio.sleep(0.3)
        transport = raw.conn._writer.transport  # type: ignore[attr-defined]
        buffered = transport.get_write_buffer_size()
        # nothing new starts while the writer is full: what is buffered is at most the answers of
        # the requests already running
        bound = connection.WRITE_HIGH_WATER + raw.conn.max_in_flight * 20_100
        assert buffered < bound, f"{buffered} bytes of answers buffered for a peer that reads none"
        assert calls[0] < 2 * raw.conn.max_in_flight, f"{calls[0]} requests handled for a peer that reads none"
        # once the peer reads, every request is answered, in order
        ids = [(await raw.answer())["id"] for _ in range(count)]
        assert ids == list(range(1, count + 1))
        await raw.conn.close()

    run(main)


def test_data_that_arrived_before_the_connection_started_is_not_lost() -> None:
    async def main() -> None:
        (a_in, to_agent), (from_agent, a_out) = await os_pipe(), await os_pipe()
        to_agent.write(json.dumps(request(0, "initialize", init_params("v1").to_wire())).encode() + b"\n")
        await asyncio.sleep(0.05)  # buffered in the reader, nobody attached yet
        conn = AgentConnection(a_in, a_out, EchoAgent, versions=("v1",))
        conn.start()
        line = await asyncio.wait_for(from_agent.readline(), 5)
        assert json.loads(line)["result"]["protocolVersion"] == 1
        to_agent.close()
        await asyncio.wait_for(conn.wait_closed(), 5)

    run(main)


def test_a_handler_runs_as_its_own_task_from_its_first_line() -> None:
    # asyncio.timeout() and task groups act on the current task, and context variables belong to it:
    # from its first line on, on every interpreter, a handler runs as a task of its own (3.12+:
    # asyncio's eager start; before, the same by hand), never as the task that reads the connection,
    # never outside any task, and what it sets in a context variable stays its own
    import contextvars

    from test_connection import Raw

    started: list[Any] = []
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")

    class Agent(EchoAgent):
        async def session_list(self, params: Any) -> Any:
            started.append((asyncio.current_task(), marker.get()))
            marker.set("set by a handler")
            if sys.version_info >= (3, 11):
                async with asyncio.timeout(5):
                    return v1.ListSessionsResponse(sessions=[])
            return v1.ListSessionsResponse(sessions=[])

    async def main() -> None:
        raw = Raw(Agent)  # a plain StreamReader: the connection's own task reads it
        await raw.initialize()
        for rid in (1, 2):
            raw.send(request(rid, "session/list", {}))
            assert (await raw.answer())["id"] == rid
        (first, seen_first), (second, seen_second) = started
        for task in (first, second):
            assert isinstance(task, asyncio.Task)
            assert task is not raw.conn._reading and task is not raw.conn._worker
        assert first is not second
        assert (seen_first, seen_second) == ("unset", "unset"), "a handler's context leaked into the next"
        assert marker.get() == "unset"
        await raw.conn.close()

    run(main)
