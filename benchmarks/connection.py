"""Connection benchmark: ours against the official SDK's connection, over an OS pipe pair.

Both sides of each connection run in one event loop, joined by two ``os.pipe()``
pairs (agent -> client, client -> agent), so every message really crosses the
kernel. Two figures, each the median of ``repeats`` runs, ours and the SDK's
interleaved: an agent streaming 1,000 ``agent_message_chunk`` notifications to a
client (counted when the client's handler has seen the last one), and
sequential ``session/new`` round trips. ``make bench`` and ``python -m benchmarks.connection``
add a reference row: the round-trip rate of bare asyncio protocols over the
same pipes (``_floor``), the most any asyncio connection could reach on the
machine at the time, against the SDK's round trips. Ours talks through ``connection.pipe_streams`` (the
transport of ``serve_stdio`` and ``spawn_agent``), the SDK through the
``asyncio.StreamReader`` / ``StreamWriter`` pair its connections take.
``run(repeats)`` returns ``[(name, ours, baseline, unit)]``;
``benchmarks/__main__.py`` prints them. ``python -m benchmarks.connection
--big-line [ITEMS]`` measures what one big line costs a connection instead.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

CHUNKS = 1000
ROUND_TRIPS = 300


async def _pipe() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """One OS pipe as asyncio streams, as the SDK's connections take them."""
    loop = asyncio.get_running_loop()
    r_fd, w_fd = os.pipe()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(r_fd, "rb", 0))
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, os.fdopen(w_fd, "wb", 0))
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, writer


async def _our_pipe() -> tuple[Any, Any]:
    """One OS pipe through ``connection.pipe_streams``, the transport of our stdio and spawn helpers."""
    from acp_types import connection

    r_fd, w_fd = os.pipe()
    return await connection.pipe_streams(os.fdopen(r_fd, "rb", 0), os.fdopen(w_fd, "wb", 0))


async def _ours() -> tuple[
    Callable[[], Awaitable[float]], Callable[[], Awaitable[float]], Callable[[], Awaitable[None]]
]:
    from acp_types import connection, v1

    class Agent:
        async def initialize(self, params: Any) -> Any:
            return v1.InitializeResponse(protocol_version=1)

        async def session_new(self, params: Any) -> Any:
            return v1.NewSessionResponse(session_id="s1")

    class Client:
        def __init__(self) -> None:
            self.count = 0
            self.done = asyncio.Event()

        async def session_update(self, params: Any) -> None:
            self.count += 1
            if self.count == CHUNKS:
                self.done.set()

    (a_in, c_out), (c_in, a_out) = await _our_pipe(), await _our_pipe()
    agent = connection.AgentConnection(a_in, a_out, Agent(), versions=("v1",))
    client_handler = Client()
    client = connection.ClientConnection(c_in, c_out, client_handler, versions=("v1",))
    agent.start()
    client.start()
    await client.initialize(v1.InitializeRequest(protocol_version=1))
    peer = agent.peer

    async def stream() -> float:
        client_handler.count = 0
        client_handler.done.clear()
        t0 = time.perf_counter()
        for i in range(CHUNKS):
            chunk = v1.AgentMessageChunk(content=v1.TextContent(text=f"chunk {i} "))
            await peer.session_update(v1.SessionNotification(session_id="s1", update=chunk))
        await client_handler.done.wait()
        return CHUNKS / (time.perf_counter() - t0)

    async def round_trips() -> float:
        t0 = time.perf_counter()
        cpeer = client.peer
        for _ in range(ROUND_TRIPS):
            await cpeer.session_new(v1.NewSessionRequest(cwd="/tmp", mcp_servers=[]))
        return ROUND_TRIPS / (time.perf_counter() - t0)

    async def close() -> None:
        await client.close()
        await agent.close()

    return stream, round_trips, close


async def _sdk() -> tuple[
    Callable[[], Awaitable[float]], Callable[[], Awaitable[float]], Callable[[], Awaitable[None]]
]:
    import acp
    from acp import InitializeResponse, NewSessionResponse, text_block, update_agent_message

    class Agent(acp.Agent):
        async def initialize(self, protocol_version: int, **kw: Any) -> Any:
            return InitializeResponse(protocol_version=1)

        async def new_session(self, cwd: str, mcp_servers: Any = None, **kw: Any) -> Any:
            return NewSessionResponse(session_id="s1")

    class Client:
        def __init__(self) -> None:
            self.count = 0
            self.done = asyncio.Event()

        async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
            self.count += 1
            if self.count == CHUNKS:
                self.done.set()

    (a_in, c_out), (c_in, a_out) = await _pipe(), await _pipe()
    agent = acp.AgentSideConnection(Agent(), a_out, a_in, listening=False)
    listen = asyncio.ensure_future(agent.listen())
    client_handler = Client()
    client = acp.ClientSideConnection(client_handler, c_out, c_in)
    await client.initialize(protocol_version=1)

    async def stream() -> float:
        client_handler.count = 0
        client_handler.done.clear()
        t0 = time.perf_counter()
        for i in range(CHUNKS):
            await agent.session_update(session_id="s1", update=update_agent_message(text_block(f"chunk {i} ")))
        await client_handler.done.wait()
        return CHUNKS / (time.perf_counter() - t0)

    async def round_trips() -> float:
        t0 = time.perf_counter()
        for _ in range(ROUND_TRIPS):
            await client.new_session(cwd="/tmp", mcp_servers=[])
        return ROUND_TRIPS / (time.perf_counter() - t0)

    async def close() -> None:
        await client.close()
        await agent.close()
        listen.cancel()

    return stream, round_trips, close


async def _floor() -> Callable[[], Awaitable[float]]:
    """Round trips of bare asyncio protocols over the same kind of pipes: no JSON-RPC, no parsing.

    The client writes a ``session/new`` line and awaits a future; the agent's
    ``data_received`` writes the answer line back at once; the client's
    ``data_received`` resolves the future. Three event-loop iterations per
    round trip, the least any asyncio connection over pipes needs, so this
    rate is the ceiling of both libraries' round trips.
    """
    loop = asyncio.get_running_loop()
    line = b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}\n'
    answer = b'{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}\n'
    waiting: list[asyncio.Future[None]] = []

    class Side(asyncio.Protocol):
        def __init__(self, on_data: Callable[[bytes], None]) -> None:
            self.on_data = on_data

        def data_received(self, data: bytes) -> None:
            self.on_data(data)

    (a_r, c_w), (c_r, a_w) = os.pipe(), os.pipe()
    to_client, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(a_w, "wb", 0))
    to_agent, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(c_w, "wb", 0))
    await loop.connect_read_pipe(lambda: Side(lambda data: to_client.write(answer)), os.fdopen(a_r, "rb", 0))
    await loop.connect_read_pipe(lambda: Side(lambda data: waiting.pop().set_result(None)), os.fdopen(c_r, "rb", 0))

    async def round_trips() -> float:
        t0 = time.perf_counter()
        for _ in range(ROUND_TRIPS):
            future = loop.create_future()
            waiting.append(future)
            to_agent.write(line)
            await future
        return ROUND_TRIPS / (time.perf_counter() - t0)

    return round_trips


async def _measure(repeats: int, reference: bool = False) -> list[tuple[str, float, float, str]]:
    # Every pipe read asks os.read for 256 KiB (asyncio's transport). glibc serves such a buffer
    # with mmap (about 25 us here instead of 2) until the process has freed one block that
    # large; a long-lived process has. Free one first, so that whichever side runs first
    # does not pay for it alone and every figure is the steady state.
    block = bytes(4 << 20)
    del block
    ours, theirs, floor = await _ours(), await _sdk(), await _floor()
    rates: dict[str, dict[str, list[float]]] = {"stream": {"ours": [], "sdk": []}, "rt": {"ours": [], "sdk": []}}
    floors: list[float] = []
    for _side, (stream, rt, _close) in (("ours", ours), ("sdk", theirs)):  # warm up both
        await stream()
        await rt()
    await floor()
    for _ in range(repeats):
        for side, (stream, rt, _close) in (("ours", ours), ("sdk", theirs)):
            rates["stream"][side].append(await stream())
            rates["rt"][side].append(await rt())
        floors.append(await floor())
    for _s, _r, close in (ours, theirs):
        await close()
    med = {k: {s: statistics.median(v) for s, v in d.items()} for k, d in rates.items()}
    return [
        (
            "connection: 1,000 agent_message_chunk notifications over a pipe",
            med["stream"]["ours"],
            med["stream"]["sdk"],
            "msg/s",
        ),
        ("connection: request round trips (session/new) over a pipe", med["rt"]["ours"], med["rt"]["sdk"], "msg/s"),
    ] + (
        [
            (
                "connection: reference, bare asyncio protocols echoing the same lines (no JSON-RPC), against the SDK",
                statistics.median(floors),
                med["rt"]["sdk"],
                "msg/s",
            )
        ]
        if reference
        else []
    )


def run(repeats: int, reference: bool = False) -> list[tuple[str, float, float, str]]:
    """Each figure as (name, ours, the SDK's, unit), medians of ``repeats`` interleaved runs.

    ``reference=True`` adds the bare-protocol round trips (``_floor``) as a
    third row: no target, the bound of the round trips (``make bench`` and
    running this module both print it).
    """
    return asyncio.run(_measure(repeats, reference))


async def _big_line(items: int) -> str:
    """One line of a tolerant array of ``items`` invalid items into an agent connection over a pipe.

    What it costs: the time to the answer, the longest the event loop went
    without a turn meanwhile (the line is parsed in a worker thread), and the
    process's peak memory growth against the line's size.
    """
    import resource

    from acp_types import connection, v1

    class Agent:
        def __init__(self, conn: Any) -> None:
            pass

        async def session_new(self, params: Any) -> Any:
            return v1.NewSessionResponse(session_id="s1")

    line = (
        b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":['
        + b",".join([b'{"x":1}'] * items)
        + b"]}}\n"
    )
    a_in, c_out = await _our_pipe()
    c_in, a_out = await _our_pipe()
    conn = connection.AgentConnection(a_in, a_out, Agent, versions=("v1",))
    conn.start()
    gaps = [0.0]
    done = False

    async def tick() -> None:
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = asyncio.ensure_future(tick())
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    c_out.write(line)
    answer = await c_in.readline()  # type: ignore[attr-defined]
    took = time.perf_counter() - start
    done = True
    await ticker
    growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - base
    await conn.close()
    assert b'"result"' in answer
    return (
        f"a {len(line) / 2**20:.1f} MiB line, a tolerant array of {items:,} invalid items: answered in "
        f"{took:.1f} s, longest event-loop wait {max(gaps):.2f} s, peak memory growth "
        f"{growth / 2**20:.0f} MiB ({growth / len(line):.0f}x the line)"
    )


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--big-line"]:
        print(asyncio.run(_big_line(int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000)))
        raise SystemExit
    for name, ours, sdk, unit in run(7, reference=True):
        print(f"{name}: ours {ours:,.0f} {unit}, sdk {sdk:,.0f} {unit}, ratio {ours / sdk:.2f}x")
