"""Each limit of the connection exactly at its edge, through the transport interface.

Every test runs once per transport factory in ``TRANSPORTS``: a factory puts a
connection (agent or client side) on the transport under test and hands back
the other end as a :class:`RawPeer` that sends and receives whole frames. A new
transport joins every test here by one line in ``TRANSPORTS`` (a factory with
the signature of :func:`over_pipes`).

At each edge the message (or batch, or count) exactly at the limit is taken,
and one more is refused or waits; one short of it too where an off-by-one
could hide (a line one byte short of the limit).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import pytest

from acp_types import connection
from acp_types._connection.transport import HEAD_SIZE, TAIL_SIZE
from acp_types.connection import AgentConnection, ClientConnection, ResponseTooLarge, StdioTransport

TIMEOUT = 30.0
SMALL = 10_000  # a message limit above the 4 KiB an oversized message's head keeps


def run(coro_fn: Callable[[], Awaitable[Any]]) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro_fn(), TIMEOUT)

    return asyncio.run(bounded())


class RawPeer(Protocol):
    """The far end of the transport under test: whole frames out and in."""

    conn: Any

    async def send(self, frame: bytes) -> None: ...

    async def receive(self) -> bytes: ...


Factory = Callable[..., contextlib.AbstractAsyncContextManager[RawPeer]]


# -- the stdio transport over OS pipes, and over in-memory asyncio streams --------------


class _Lines:
    """A raw peer speaking newline-delimited JSON over a reader/writer pair."""

    def __init__(self, conn: Any, reader: Any, writer: Any) -> None:
        self.conn = conn
        self._reader = reader
        self._writer = writer

    async def send(self, frame: bytes) -> None:
        self._writer.write(frame + b"\n")
        await self._writer.drain()

    async def receive(self) -> bytes:
        line: bytes = await self._reader.readline()
        assert line.endswith(b"\n"), "the connection closed"
        return line[:-1]


def _connect(side: str, transport: Any, handler: Any, options: dict[str, Any]) -> Any:
    cls = AgentConnection if side == "agent" else ClientConnection
    conn = cls.on_transport(transport, handler, versions=("v2",), **{"close_timeout": 1.0, **options})
    conn.start()
    return conn


@contextlib.asynccontextmanager
async def over_pipes(
    side: str, handler: Any, max_message_size: int = connection.DEFAULT_MAX_LINE_SIZE, **options: Any
) -> AsyncIterator[RawPeer]:
    """The stdio transport over two OS pipes (what ``serve_stdio`` and ``spawn_agent`` use)."""

    async def os_pipe() -> tuple[Any, Any]:
        r, w = os.pipe()
        return await connection.pipe_streams(os.fdopen(r, "rb", 0), os.fdopen(w, "wb", 0))

    (conn_in, peer_out), (peer_in, conn_out) = await os_pipe(), await os_pipe()
    conn = _connect(side, StdioTransport(conn_in, conn_out, max_message_size), handler, options)
    try:
        yield _Lines(conn, peer_in, peer_out)
    finally:
        peer_out.close()
        await conn.close()


class _MemoryWriter:
    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader

    def write(self, data: bytes) -> None:
        self.reader.feed_data(data)

    async def drain(self) -> None:
        await asyncio.sleep(0)

    def close(self) -> None:
        self.reader.feed_eof()


@contextlib.asynccontextmanager
async def over_streams(
    side: str, handler: Any, max_message_size: int = connection.DEFAULT_MAX_LINE_SIZE, **options: Any
) -> AsyncIterator[RawPeer]:
    """The stdio transport over in-memory ``asyncio.StreamReader`` pairs."""
    to_conn, to_peer = asyncio.StreamReader(limit=1 << 26), asyncio.StreamReader(limit=1 << 26)
    peer_out = _MemoryWriter(to_conn)
    conn = _connect(side, StdioTransport(to_conn, _MemoryWriter(to_peer), max_message_size), handler, options)
    try:
        yield _Lines(conn, to_peer, peer_out)
    finally:
        peer_out.close()
        await conn.close()


class MemoryTransport:
    """A message transport with no framing at all (as WebSocket text frames are): whole frames in queues.

    ``limit`` bounds a frame; ``taken`` is set each time the peer takes one,
    and :meth:`buffered` counts the bytes sent that the peer has not taken.
    """

    def __init__(self, inbox: asyncio.Queue[bytes | None], outbox: asyncio.Queue[bytes | None], limit: int) -> None:
        self.inbox, self.outbox, self.limit = inbox, outbox, limit
        self.unread = 0
        self.taken = asyncio.Event()
        self.peer: MemoryTransport | None = None
        self.closed = False

    async def receive(self) -> bytes | connection.Oversized | None:
        frame = await self.inbox.get()
        if self.peer is not None and frame is not None:
            self.peer.unread -= len(frame)
            self.peer.taken.set()
        if frame is not None and len(frame) > self.limit:
            return connection.Oversized(frame[:HEAD_SIZE], frame[-TAIL_SIZE:], self.limit)
        return frame

    def send(self, message: bytes) -> None:
        if not self.closed:
            self.unread += len(message)
            self.outbox.put_nowait(message)

    def buffered(self) -> int:
        return self.unread

    async def drain(self) -> None:
        while self.unread > connection.WRITE_HIGH_WATER and not self.closed:
            self.taken.clear()
            await self.taken.wait()

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.outbox.put_nowait(None)


def memory_pair(limit: int = connection.DEFAULT_MAX_LINE_SIZE) -> tuple[MemoryTransport, MemoryTransport]:
    """Two ends of one in-memory message connection."""
    one: asyncio.Queue[bytes | None] = asyncio.Queue()
    two: asyncio.Queue[bytes | None] = asyncio.Queue()
    a, b = MemoryTransport(one, two, limit), MemoryTransport(two, one, limit)
    a.peer, b.peer = b, a
    return a, b


class _Frames:
    """A raw peer on the far end of a :class:`MemoryTransport`."""

    def __init__(self, conn: Any, end: MemoryTransport) -> None:
        self.conn = conn
        self._end = end

    async def send(self, frame: bytes) -> None:
        self._end.send(frame)

    async def receive(self) -> bytes:
        frame = await self._end.receive()
        assert isinstance(frame, bytes), "the connection closed"
        return frame


@contextlib.asynccontextmanager
async def over_memory(
    side: str, handler: Any, max_message_size: int = connection.DEFAULT_MAX_LINE_SIZE, **options: Any
) -> AsyncIterator[RawPeer]:
    """A transport of whole messages with no framing (the interface alone, as a WebSocket uses it)."""
    mine, theirs = memory_pair(max_message_size)
    theirs.limit = 1 << 30  # the raw peer reads whatever comes
    conn = _connect(side, mine, handler, options)
    try:
        yield _Frames(conn, theirs)
    finally:
        await theirs.close()
        await conn.close()


class _Socket:
    """A stand-in for a ``websockets`` client socket: text frames in and out through queues."""

    close_code: int | None = None
    close_reason = ""
    response = None

    def __init__(self) -> None:
        self.incoming: asyncio.Queue[str | None] = asyncio.Queue()
        self.outgoing: asyncio.Queue[bytes] = asyncio.Queue()

    def __aiter__(self) -> _Socket:
        return self

    async def __anext__(self) -> str:
        text = await self.incoming.get()
        if text is None:
            raise StopAsyncIteration
        return text

    async def send(self, text: str) -> None:
        self.outgoing.put_nowait(text.encode())

    async def close(self) -> None:
        self.incoming.put_nowait(None)


class _QueuePeer:
    def __init__(
        self, conn: Any, put: Callable[[bytes], Awaitable[None]], take: Callable[[], Awaitable[bytes]]
    ) -> None:
        self.conn = conn
        self._put = put
        self._take = take

    async def send(self, frame: bytes) -> None:
        await self._put(frame)

    async def receive(self) -> bytes:
        return await self._take()


@contextlib.asynccontextmanager
async def _server_side(profile: Any, handler: Any, max_message_size: int, options: Any) -> AsyncIterator[RawPeer]:
    """An agent on the remote server's transport of ``profile``, fed as the server's ASGI handlers feed it."""
    from acp_types.remote import Limits
    from acp_types.remote._http import HttpRemote
    from acp_types.remote._server import AcpAsgiApp
    from acp_types.remote._websocket import WebSocketRemote

    app = AcpAsgiApp(handler, limits=Limits(max_message_size=max_message_size))
    remote = app.new_remote(WebSocketRemote if profile == "websocket" else HttpRemote)
    assert remote is not None
    server = remote.transport
    out: asyncio.Queue[bytes] = asyncio.Queue()
    if isinstance(remote, WebSocketRemote):
        remote.transport.on_message = out.put_nowait
        take = out.get
    else:
        assert isinstance(remote, HttpRemote)
        stream = remote.stream  # the connection's SSE stream: every answer here names no session

        async def take() -> bytes:
            while not stream.queue:
                stream.wake.clear()
                await stream.wake.wait()
            return stream.take().encode()

    async def feed(frame: bytes) -> None:
        await server.room.wait()
        server.feed(frame)

    conn = _connect("agent", server, handler, options)
    try:
        yield _QueuePeer(conn, feed, take)
    finally:
        server.end()
        await conn.close()
        remote.close()


@contextlib.asynccontextmanager
async def over_http(
    side: str, handler: Any, max_message_size: int = connection.DEFAULT_MAX_LINE_SIZE, **options: Any
) -> AsyncIterator[RawPeer]:
    """The remote server's Streamable HTTP transport: messages as POST bodies in, SSE events out.

    Agent side only (not in ``CLIENT_TRANSPORTS``): the client's HTTP transport posts to a real server,
    tested in tests/test_remote.py.
    """
    assert side == "agent", side
    async with _server_side("http", handler, max_message_size, options) as peer:
        yield peer


@contextlib.asynccontextmanager
async def over_websocket(
    side: str, handler: Any, max_message_size: int = connection.DEFAULT_MAX_LINE_SIZE, **options: Any
) -> AsyncIterator[RawPeer]:
    """The remote profile's WebSocket transports: the server's for an agent, the client's for a client.

    The server's takes the frames its socket handler reads (``feed``, after waiting for room) and
    gives what the agent sends to the socket's queue; the client's reads a socket object (here one
    on queues, with no size limit of its own, so the transport's limit is the one at work).
    """
    from acp_types.remote._client import _WebSocketTransport as ClientSide

    if side == "agent":
        async with _server_side("websocket", handler, max_message_size, options) as peer:
            yield peer
        return
    socket = _Socket()

    async def reopen() -> Any:
        raise AssertionError("no second initialize here")

    client = ClientSide(socket, reopen, max_message_size)

    async def deliver(frame: bytes) -> None:
        socket.incoming.put_nowait(frame.decode())

    conn = _connect(side, client, handler, options)
    try:
        yield _QueuePeer(conn, deliver, socket.outgoing.get)
    finally:
        await socket.close()
        await conn.close()
        client.reading.cancel()


TRANSPORTS = [
    pytest.param(over_pipes, id="stdio-pipes"),
    pytest.param(over_streams, id="stdio-streams"),
    pytest.param(over_memory, id="memory"),
    pytest.param(over_websocket, id="websocket"),
    pytest.param(over_http, id="http"),
]
transports = pytest.mark.parametrize("factory", TRANSPORTS)
# the tests of a client's side: every transport but the server's Streamable HTTP one
CLIENT_TRANSPORTS = [p for p in TRANSPORTS if p.id != "http"]
client_transports = pytest.mark.parametrize("factory", CLIENT_TRANSPORTS)


# -- helpers -------------------------------------------------------------------------------


def sized(size: int, rid: int, *, id_last: bool = False, method: str = "_pad") -> bytes:
    """A request of exactly ``size`` bytes (its padding in ``params.pad``)."""
    if id_last:
        shell = b'{"jsonrpc":"2.0","method":"%s","params":{"pad":"%s"},"id":%d}'
    else:
        shell = b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":{"pad":"%s"}}'
    empty = shell % ((method.encode(), b"", rid) if id_last else (rid, method.encode(), b""))
    pad = b"x" * (size - len(empty))
    frame = shell % ((method.encode(), pad, rid) if id_last else (rid, method.encode(), pad))
    assert len(frame) == size
    return frame


def request(rid: int, method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params if params is not None else {}}


def note(method: str, params: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params if params is not None else {}}


def dumps(message: Any) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode()


class Agent:
    """Extension methods only: ``_pad`` answers the padding's length, ``_block`` waits for ``gate``."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.gate = asyncio.Event()
        self.marker = asyncio.Event()
        self.busy = asyncio.Event()  # the notification handler has started on n=0
        self.started: list[Any] = []
        self.notes: list[Any] = []

    async def ext_method(self, method: str, params: Any) -> Any:
        self.started.append(method)
        if method == "_block":
            await self.gate.wait()
        return {"size": len(params.get("pad", ""))}

    async def ext_notification(self, method: str, params: Any) -> None:
        if method == "_marker":
            self.marker.set()
            return
        self.notes.append(params["n"])
        if params["n"] == 0:
            self.busy.set()
            await self.gate.wait()


# -- the size of one message ---------------------------------------------------------------


@transports
@pytest.mark.parametrize("limit", [SMALL, connection.DEFAULT_MAX_LINE_SIZE])
def test_a_request_at_the_size_limit_is_handled_and_one_byte_more_is_refused(factory: Factory, limit: int) -> None:
    async def main() -> None:
        async with factory("agent", Agent, max_message_size=limit) as peer:
            for rid, size in ((1, limit - 1), (2, limit)):
                frame = sized(size, rid)
                await peer.send(frame)
                answer = json.loads(await peer.receive())
                padding = len(json.loads(frame)["params"]["pad"])
                assert answer == {"jsonrpc": "2.0", "id": rid, "result": {"size": padding}}, size
            for rid, id_last in ((3, False), (4, True)):  # the id in the kept head, or in the tail
                await peer.send(sized(limit + 1, rid, id_last=id_last))
                answer = json.loads(await peer.receive())
                assert answer["id"] == rid and answer["error"]["code"] == -32600
                assert str(limit) in answer["error"]["message"]
            await peer.send(sized(limit, 5))  # the connection goes on reading
            assert json.loads(await peer.receive())["id"] == 5

    run(main)


@client_transports
def test_a_response_at_the_size_limit_is_read_and_one_byte_more_fails_its_request(factory: Factory) -> None:
    async def main() -> None:
        async with factory("client", None, max_message_size=SMALL) as peer:
            conn = peer.conn
            for size in (SMALL - 1, SMALL, SMALL + 1):
                task = asyncio.ensure_future(conn.request("_big", {}))
                rid = json.loads(await peer.receive())["id"]
                shell = b'{"jsonrpc":"2.0","id":%d,"result":{"pad":"%s"}}'
                pad = b"x" * (size - len(shell % (rid, b"")))
                await peer.send(shell % (rid, pad))
                if size <= SMALL:
                    assert len((await task)["pad"]) == len(pad)
                else:
                    with pytest.raises(ResponseTooLarge) as info:
                        await task
                    assert (info.value.id, info.value.limit) == (rid, SMALL)

    run(main)


# -- batches -------------------------------------------------------------------------------


@transports
@pytest.mark.parametrize("max_batch", [1, 7, connection.DEFAULT_MAX_BATCH])
def test_a_batch_of_max_batch_entries_is_handled_and_one_more_is_refused_whole(
    factory: Factory, max_batch: int
) -> None:
    async def main() -> None:
        async with factory("agent", Agent, max_batch=max_batch) as peer:
            handler = peer.conn.handler
            # nested arrays in the entries count as nothing: entries are counted at the top only
            entries = [request(i, "_pad", {"pad": "", "list": [[1], [2, 3]]}) for i in range(1, max_batch + 1)]
            await peer.send(b" " + dumps(entries))
            answers = json.loads(await peer.receive())
            assert sorted(a["id"] for a in answers) == list(range(1, max_batch + 1))
            assert all("result" in a for a in answers)
            started = len(handler.started)
            await peer.send(dumps([*entries, request(max_batch + 1, "_pad")]))
            answer = json.loads(await peer.receive())
            assert answer["id"] is None and answer["error"]["code"] == -32600
            assert str(max_batch) in answer["error"]["message"]
            assert len(handler.started) == started  # no entry of it was handled

    run(main)


# -- requests and notifications waiting for room -------------------------------------------


@transports
@pytest.mark.parametrize("max_in_flight", [1, 3])
def test_max_in_flight_handlers_run_at_once_and_the_next_request_waits_unstarted(
    factory: Factory, max_in_flight: int
) -> None:
    async def main() -> None:
        async with factory("agent", Agent, max_in_flight=max_in_flight) as peer:
            handler = peer.conn.handler
            for rid in range(1, max_in_flight + 2):
                await peer.send(dumps(request(rid, "_block")))
            await peer.send(dumps(note("_marker")))  # read after every request above
            await handler.marker.wait()
            assert len(handler.started) == max_in_flight
            handler.gate.set()
            ids = [json.loads(await peer.receive())["id"] for _ in range(max_in_flight + 1)]
            assert sorted(ids) == list(range(1, max_in_flight + 2)) and ids[-1] == max_in_flight + 1
            assert len(handler.started) == max_in_flight + 1

    run(main)


@transports
@pytest.mark.parametrize("max_queued", [1, 4])
def test_max_queued_notifications_wait_in_the_queue_and_the_next_waits_outside_it(
    factory: Factory, max_queued: int
) -> None:
    async def main() -> None:
        async with factory("agent", Agent, max_queued=max_queued) as peer:
            conn, handler = peer.conn, peer.conn.handler
            await peer.send(dumps(note("_n", {"n": 0})))  # its handler waits for the gate
            await handler.busy.wait()  # so the next ones queue behind it
            count = max_queued + 1
            for n in range(1, count + 1):
                await peer.send(dumps(note("_n", {"n": n})))
            await peer.send(dumps(request(2, "_pad")))  # requests are not held behind notifications
            assert json.loads(await peer.receive())["id"] == 2  # so every notification above was read
            assert (conn._queued, len(conn._held_notes)) == (max_queued, 1)
            handler.gate.set()
            await peer.send(dumps(note("_marker")))
            await handler.marker.wait()
            assert handler.notes == list(range(count + 1))  # in order, none lost

    run(main)


@transports
@pytest.mark.parametrize("over", [0, 1])
def test_reading_goes_on_until_the_waiting_messages_hold_more_than_hold_limit(factory: Factory, over: int) -> None:
    limit = connection.HOLD_LIMIT
    part = limit // 4

    async def main() -> None:
        async with factory("agent", Agent, max_in_flight=1) as peer:
            handler = peer.conn.handler
            await peer.send(dumps(request(1, "_block")))  # runs; the rest wait for room
            for rid in range(2, 6):
                await peer.send(sized(part + (over if rid == 5 else 0), rid, method="_block"))
            await peer.send(dumps(note("_marker")))
            if not over:  # exactly HOLD_LIMIT bytes wait: the marker is read
                await handler.marker.wait()
            else:  # one byte more: reading has paused before the marker
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(handler.marker.wait(), 0.3)
                handler.gate.set()
                await handler.marker.wait()
            handler.gate.set()
            assert sorted([json.loads(await peer.receive())["id"] for _ in range(5)]) == [1, 2, 3, 4, 5]

    run(main)


# -- where a message is parsed --------------------------------------------------------------


@transports
def test_a_message_of_off_loop_above_bytes_is_parsed_on_the_loop_and_one_byte_more_in_a_thread(
    factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = connection.OFF_LOOP_ABOVE
    threads: list[bool] = []

    async def main() -> None:
        async with factory("agent", Agent) as peer:
            version = peer.conn._version
            parse = version.parse

            def recording(message: Any, **kw: Any) -> Any:
                threads.append(threading.current_thread() is threading.main_thread())
                return parse(message, **kw)

            monkeypatch.setattr(version, "parse", recording)
            await peer.send(sized(size, 1))
            await peer.send(sized(size + 1, 2))
            assert [json.loads(await peer.receive())["id"] for _ in range(2)] == [1, 2]
            assert threads == [True, False]

    run(main)


# -- agent.serve on a transport ------------------------------------------------------------


def test_agent_serve_runs_an_app_on_a_transport_and_detaches_its_sessions_at_the_end() -> None:
    from acp_types import agent

    class Echo(agent.App):
        async def prompt(self, turn: agent.Turn) -> agent.StopReason:
            await turn.text(turn.prompt_text)
            return "end_turn"

    async def main() -> None:
        app = Echo()
        ours, theirs = memory_pair()
        served = asyncio.ensure_future(agent.serve(app, transport=ours, versions=("v2",), principal="token:x"))

        async def call(rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
            theirs.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode())
            while True:
                frame = await theirs.receive()
                assert isinstance(frame, bytes), "the agent closed"
                message: dict[str, Any] = json.loads(frame)
                if message.get("id") == rid and "method" not in message:
                    return message

        init = await call(1, "initialize", {"protocolVersion": 2, "info": {"name": "t", "version": "1"}})
        assert init["result"]["protocolVersion"] == 2
        sid = (await call(2, "session/new", {"cwd": "/tmp", "mcpServers": []}))["result"]["sessionId"]
        session = app.sessions[sid]
        assert session._conn is not None
        await theirs.close()  # end of input: serve returns
        await served
        assert session._conn is None

    run(main)


def test_agent_serve_takes_a_reader_and_writer_or_a_transport_not_both() -> None:
    from acp_types import agent

    class Quiet(agent.App):
        async def prompt(self, turn: agent.Turn) -> agent.StopReason:
            return "end_turn"

    async def main() -> None:
        ours, _ = memory_pair()
        reader = asyncio.StreamReader()
        with pytest.raises(TypeError, match="not both"):
            await agent.serve(Quiet(), reader, _MemoryWriter(reader), transport=ours)
        with pytest.raises(TypeError, match="or a transport"):
            await agent.serve(Quiet(), reader)

    run(main)
