"""The server: one ASGI application serving both profiles of the RFD on one endpoint.

Streamable HTTP: a POST carries one client message (``initialize`` without ``Acp-Connection-Id``
is answered 200 with the agent's answer and the new connection's id; every other message 202, its
answer coming on a stream); a GET with ``Accept: text/event-stream`` opens the connection's stream
(no ``Acp-Session-Id``) or a session's (with it), one receiver each; DELETE ends the connection.
WebSocket: a GET with ``Upgrade: websocket`` on the same path, one JSON-RPC message per text frame,
``Acp-Connection-Id`` on the 101 answer.

Which output goes to which stream, the status codes and the header names follow the TypeScript
SDK 2.4.0's ``AcpServer``: the answer to a request goes where the request came from (the session's
stream when the POST named a session, except ``session/load``, answered on the connection's
stream); an agent request or notification whose params name a ``sessionId`` goes to that session's
stream (kept, buffered, until its GET comes), anything else to the connection's stream.

Hand-written: the source is runtime/remote/_server.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import re
import uuid
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import urlsplit

from .. import _wire
from .. import connection as _connection
from .._connection.transport import HEAD_SIZE, TAIL_SIZE
from ._limits import HEADER_CONNECTION_ID, HEADER_SESSION_ID, PATH, Limits, host_of, is_loopback

log = logging.getLogger("acp_types.remote")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

# the methods whose POST must name its session (the TypeScript SDK's list)
_SESSION_METHODS = frozenset(
    {
        "session/cancel",
        "session/close",
        "session/delete",
        "session/fork",
        "session/load",
        "session/prompt",
        "session/resume",
        "session/set_config_option",
        "session/set_mode",
        "session/set_model",
    }
)
_KEEP_ALIVE = 15.0  # seconds between SSE comments on an idle stream
_ROUTE_CONNECTION = ""  # a route: "" is the connection's stream, anything else a session's


class _LimitBroken(Exception):
    """A peer went past a :class:`Limits` value."""


def _id_key(rid: Any) -> tuple[str, Any] | None:
    """A request id as a key that keeps ``1`` and ``"1"`` (and ``True``) apart."""
    if isinstance(rid, str):
        return ("s", rid)
    if isinstance(rid, int) and not isinstance(rid, bool):
        return ("n", rid)
    if rid is None:
        return ("null", None)
    return None


# The start of a session's notification as the agent's connection writes one (core.Connection.notify:
# no "id" before "method", the params' model first writes its sessionId). The routing of such a
# message reads only this, not the whole message again: the most a turn sends is notifications.
_SESSION_NOTIFICATION = re.compile(rb'\{"jsonrpc":"2\.0","method":"[^"\\]*","params":\{"sessionId":"([^"\\]*)"')


def _session_in(params: Any) -> str | None:
    if isinstance(params, dict):
        sid = params.get("sessionId")
        if isinstance(sid, str):
            return sid
    return None


def _principal(token: str) -> str:
    """A stable name for who holds ``token`` that does not reveal it."""
    return "token:" + hashlib.sha256(token.encode()).hexdigest()[:16]


_T = TypeVar("_T")


# -- one connection ----------------------------------------------------------------------------


class _Fifo(Generic[_T]):
    """A first-in first-out queue on two lists: empty it costs two empty lists, where a ``deque`` holds
    a 64-slot block (about 760 bytes) from the start; a connection holds three, mostly empty."""

    __slots__ = ("_in", "_out")

    def __init__(self) -> None:
        self._in: list[_T] = []
        self._out: list[_T] = []  # reversed: its last item is the oldest

    def __len__(self) -> int:
        return len(self._in) + len(self._out)

    def append(self, item: _T) -> None:
        self._in.append(item)

    def popleft(self) -> _T:
        if not self._out:
            if not self._in:
                raise IndexError("pop from an empty _Fifo")
            self._in.reverse()
            self._in, self._out = [], self._in
        return self._out.pop()


class _Flag:
    """``asyncio.Event``'s API without its deque: a connection holds several, and idle ones cost nothing."""

    __slots__ = ("_set", "_waiters")

    def __init__(self) -> None:
        self._set = False
        self._waiters: list[asyncio.Future[None]] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        waiters, self._waiters = self._waiters, None
        for waiter in waiters or ():
            if not waiter.done():
                waiter.set_result(None)

    def clear(self) -> None:
        self._set = False

    def future(self) -> asyncio.Future[None]:
        """A future done once the flag is set (a waiter for ``asyncio.wait`` that costs no task)."""
        waiter = asyncio.get_running_loop().create_future()
        if self._set:
            waiter.set_result(None)
            return waiter
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        return waiter

    async def wait(self) -> None:
        if self._set:
            return
        waiter = self.future()
        try:
            await waiter
        finally:
            if self._waiters is not None and waiter in self._waiters:
                self._waiters.remove(waiter)


class _Mailbox:
    """One stream's queue of JSON texts, held until its one receiver takes them."""

    __slots__ = ("_owner", "finished", "queue", "receiver", "size", "wake")

    def __init__(self, owner: _Remote) -> None:
        self._owner = owner
        self.queue: _Fifo[str] = _Fifo()
        self.size = 0
        self.receiver = False  # a GET is sending this stream: what it holds is unsent, not unclaimed
        self.finished = False
        self.wake = _Flag()

    def push(self, text: str) -> None:
        if self.finished:
            return
        self.queue.append(text)
        self.size += len(text)
        self._owner.buffered += len(text)
        if self.receiver:
            self._owner.unsent += len(text)
        self.wake.set()

    def take(self) -> str:
        text = self.queue.popleft()
        self.size -= len(text)
        self._owner.buffered -= len(text)
        if self.receiver:
            self._owner.unsent -= len(text)
        self._owner.progress()
        return text

    def attach(self) -> None:
        """A GET starts sending this stream."""
        self.receiver = True
        self._owner.unsent += self.size

    def detach(self) -> None:
        """The GET sending this stream ended; what it did not send waits for the next one."""
        self.receiver = False
        self._owner.unsent -= self.size

    def finish(self) -> None:
        self.finished = True
        self.wake.set()

    def drop(self) -> None:
        while self.queue:
            self.take()
        self.finish()


class _ServerTransport:
    """The agent's side of one remote connection (a ``connection.Transport``): what the peer sent comes
    in through :meth:`feed` (one whole message each, from a POST body or a text frame), what the
    agent sends goes out by the profile's :meth:`send`; backpressure is the connection's bound on
    unread output (``Limits.max_buffered_bytes``)."""

    def __init__(self, owner: _Remote) -> None:
        self._owner = owner
        self.max_line_size = owner.limits.max_message_size
        self.messages: _Fifo[bytes | _connection.Oversized] = _Fifo()
        self.size = 0
        self.eof = False
        self.ready = _Flag()
        self.room = _Flag()
        self.room.set()

    def feed(self, data: bytes) -> None:
        """One whole message from the peer (the profile checked its size; a longer one is an ``Oversized``)."""
        limit = self.max_line_size
        item: bytes | _connection.Oversized = data
        if len(data) > limit:
            item = _connection.Oversized(data[:HEAD_SIZE], data[-TAIL_SIZE:], limit)
            data = item.head + item.tail
        self.messages.append(item)
        self.size += len(data)
        if self.size > self._owner.limits.max_buffered_bytes:
            self.room.clear()
        self.ready.set()

    def end(self) -> None:
        self.eof = True
        self.ready.set()
        self.room.set()

    async def receive(self) -> bytes | _connection.Oversized | None:
        while not self.messages:
            if self.eof:
                return None
            self.ready.clear()
            await self.ready.wait()
        item = self.messages.popleft()
        self.size -= len(item) if isinstance(item, bytes) else len(item.head) + len(item.tail)
        if self.size <= self._owner.limits.max_buffered_bytes:
            self.room.set()
        return item

    def send(self, message: bytes) -> None:
        raise NotImplementedError

    def buffered(self) -> int:
        # The connection waits in drain() while this is above WRITE_HIGH_WATER. A stream's pump (the
        # WebSocket's, an SSE GET's) is a task of its own, which runs only when the agent yields, and an
        # agent that streams need never yield: it would queue its whole turn before the first byte left.
        # So what the pumps have yet to send counts, as a pipe's buffer does on stdio, and the peer reads
        # while the agent writes. What waits for a GET that has not come counts only at our bound.
        owner = self._owner
        return max(owner.unsent, owner.buffered if owner.buffered >= owner.limits.max_buffered_bytes else 0)

    async def drain(self) -> None:
        await self._owner.wait_for_room()
        if self._owner.closed:
            raise ConnectionResetError(self._owner.close_reason)

    async def close(self) -> None:
        self._owner.agent_done()


class _HttpTransport(_ServerTransport):
    """Streamable HTTP: messages from POST bodies in; out to the connection's stream or a session's (routed)."""

    def send(self, message: bytes) -> None:
        if not self._owner.closed:
            self._owner.outbound(message)


class _WebSocketTransport(_ServerTransport):
    """WebSocket: one message per text frame each way; out through the socket's queue (``on_message``)."""

    on_message: Callable[[bytes], None] | None = None

    def send(self, message: bytes) -> None:
        if not self._owner.closed and self.on_message is not None:
            self.on_message(message)


class _Remote:
    """One ACP connection of either profile: the agent's connection, its streams and routes."""

    def __init__(self, server: AcpAsgiApp, profile: Literal["http", "websocket"]) -> None:
        self.server = server
        self.limits = server.limits
        self.profile = profile
        self.id = str(uuid.uuid4())
        self.transport: _ServerTransport = _HttpTransport(self) if profile == "http" else _WebSocketTransport(self)
        self.buffered = 0  # bytes of the agent's output queued here, sent or not (bounded by max_buffered_bytes)
        self.unsent = 0  # of those, what a running pump (the WebSocket's, an SSE GET's) has yet to send
        self._progress = _Flag()
        self.closed = False
        self.close_reason = "the connection is closed"
        self.ended = _Flag()  # the agent's connection has finished
        self.stopped = _Flag()  # ended or closed: nothing more will be written
        # Streamable HTTP
        self.stream = _Mailbox(self)
        self.sessions: dict[str, _Mailbox] = {}
        self.buffering_sessions = 0
        self.pending_routes: dict[tuple[str, Any], str] = {}
        self.client_routes: dict[tuple[str, Any], str] = {}
        self.initial: asyncio.Future[tuple[bytes, Any]] | None = None
        self.last_active = asyncio.get_running_loop().time()
        self.task: asyncio.Task[None] | None = None

    # the agent side

    def start(self, principal: str | None) -> None:
        self.task = asyncio.ensure_future(self._run(principal))

    async def _run(self, principal: str | None) -> None:
        try:
            await self.server.run_agent(self.transport, principal)
        except Exception:
            log.exception("ACP connection %s: the agent failed", self.id)
        finally:
            self.agent_done()

    def agent_done(self) -> None:
        """The agent's connection wrote its last message: every stream ends once it is read."""
        self.ended.set()
        self.stopped.set()
        self.stream.finish()
        for box in self.sessions.values():
            box.finish()
        if self.initial is not None and not self.initial.done():
            self.initial.set_exception(ConnectionResetError("the agent closed before it answered initialize"))
        self.progress()

    def outbound(self, line: bytes) -> None:
        if self.initial is not None and not self.initial.done():
            self.initial.set_result((line, json.loads(line)))
            return
        text = line.decode()
        fast = _SESSION_NOTIFICATION.match(line)
        if fast is not None:
            try:
                self.deliver(fast.group(1).decode(), text)
            except _LimitBroken as exc:
                self.close(str(exc))
            return
        message = json.loads(line)
        if not isinstance(message, dict):  # a batch's answers (never asked here: batches are refused)
            self.stream.push(text)
            return
        try:
            if "method" not in message:  # a response
                key = _id_key(message.get("id"))
                route = self.pending_routes.pop(key, _ROUTE_CONNECTION) if key is not None else _ROUTE_CONNECTION
                result = message.get("result")
                sid = _session_in(result)
                if sid is not None:
                    self.check_id("Session ID", sid)
                self.deliver(route, text)
                return
            sid = _session_in(message.get("params"))
            route = sid if sid is not None else _ROUTE_CONNECTION
            if "id" in message:
                key = _id_key(message["id"])
                if key is not None:
                    self.client_routes[key] = route
            self.deliver(route, text)
        except _LimitBroken as exc:
            self.close(str(exc))

    def deliver(self, route: str, text: str) -> None:
        if route == _ROUTE_CONNECTION:
            self.stream.push(text)
            return
        box = self.sessions.get(route)
        if box is None:
            self.check_id("Session ID", route)
            if self.buffering_sessions >= self.limits.max_session_streams:
                raise _LimitBroken(f"Connection exceeds maxBufferedSessionStreams ({self.limits.max_session_streams})")
            box = self.sessions[route] = _Mailbox(self)
            self.buffering_sessions += 1
        box.push(text)

    def check_id(self, label: str, value: str) -> None:
        if len(value) > self.limits.max_id_length:
            raise _LimitBroken(f"{label} exceeds maxIdLength ({self.limits.max_id_length})")

    # flow

    def progress(self) -> None:
        self._progress.set()

    def full(self) -> bool:
        """The agent waits: its pumps have more than ``WRITE_HIGH_WATER`` to send, or ``max_buffered_bytes`` wait."""
        return self.unsent > _connection.WRITE_HIGH_WATER or self.buffered >= self.limits.max_buffered_bytes

    async def wait_for_room(self) -> None:
        """Wait while :meth:`full`; close the connection if the peer reads none of it for ``output_stall``."""
        while not self.closed and self.full():
            self._progress.clear()
            try:
                await asyncio.wait_for(self._progress.wait(), self.limits.output_stall)
            except asyncio.TimeoutError:
                self.close(f"Connection output stalled for maxOutputStallMs ({int(self.limits.output_stall * 1000)})")

    def close(self, reason: str | None = None) -> None:
        """End the connection now: the agent sees end of input, queued output is dropped."""
        if self.closed:
            return
        if reason is not None:
            log.warning("closing ACP connection %s: %s", self.id, reason)
            self.close_reason = reason
        self.closed = True
        self.stopped.set()
        self.transport.end()
        self.stream.drop()
        for box in self.sessions.values():
            box.drop()
        self.sessions.clear()
        self.pending_routes.clear()
        self.client_routes.clear()
        self.progress()
        self.server.forget(self)


# -- the application ---------------------------------------------------------------------------


class AcpAsgiApp:
    """The ASGI application of a remote agent: mount it anywhere, or run it with :func:`serve`.

    ``target``: an ``acp_types.agent.App`` (class or instance; one instance serves every
    connection, so its sessions are shared and a client that reconnects resumes them) or a
    connection handler factory (called once per connection, as by ``connection.serve``).
    ``token``: the bearer token every request must carry (checked in constant time); without one,
    only a loopback ``Host`` is served (against DNS rebinding) unless ``allowed_hosts`` lists more.
    ``allowed_origins``: browser origins accepted besides loopback pages. ``options`` go to each
    agent connection (``versions``, ``strict_capabilities``, its limits).
    """

    def __init__(
        self,
        target: Any,
        *,
        token: str | None = None,
        allowed_origins: Sequence[str] = (),
        allowed_hosts: Sequence[str] = (),
        limits: Limits | None = None,
        path: str = PATH,
        **options: Any,
    ) -> None:
        from ..agent import App

        if "max_line_size" in options:
            raise TypeError(
                "max_line_size is the stdio transport's: a remote message is bounded by Limits.max_message_size"
            )
        if isinstance(target, type) and issubclass(target, App):
            target = target()
        self._app: App | None = target if isinstance(target, App) else None
        if self._app is not None:
            from ..agent import check

            check(
                self._app, options.get("versions", ("v1", "v2"))
            )  # a broken promise stops the start, not a connection
        elif not callable(target):
            raise TypeError(f"an App or a connection handler factory is needed, not {target!r}")
        self._factory = target
        self._token = token.encode() if token is not None else None
        self._principal = _principal(token) if token is not None else "remote:anonymous"
        self._origins = {o.rstrip("/").lower() for o in allowed_origins}
        self._hosts = {h.lower() for h in allowed_hosts}
        self.limits = limits if limits is not None else Limits()
        self.path = path
        self._options = options
        self._connections: dict[str, _Remote] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self.stopping = False

    @property
    def connections(self) -> int:
        """The connections open now, of both profiles."""
        return len(self._connections)

    async def run_agent(self, transport: _ServerTransport, principal: str | None) -> None:
        if self._app is not None:
            from ..agent import serve as serve_app

            await serve_app(self._app, transport=transport, principal=principal, **self._options)
        else:
            await _connection.serve_transport(transport, self._factory, **self._options)

    def forget(self, remote: _Remote) -> None:
        if self._connections.get(remote.id) is remote:
            del self._connections[remote.id]

    async def close(self) -> None:
        """End every connection (what a server shutting down does: WebSockets are closed with 1001)."""
        self.stopping = True
        for remote in list(self._connections.values()):
            remote.close()
        if self._sweeper is not None:
            self._sweeper.cancel()

    # -- ASGI

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind not in ("http", "websocket"):
            return
        headers = _Headers(scope)
        refusal = self._refuse(scope, headers)
        if kind == "websocket":
            del headers  # not kept while the connection lasts
            socket = _WebSocket(self, scope, receive, send)
            await socket.run(refusal)
            return
        if refusal is not None:
            await _text(send, *refusal)
            return
        await self._http(scope, receive, send, headers)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _refuse(self, scope: Scope, headers: _Headers) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        """The status and text a request is refused with before anything else, or None."""
        path = scope.get("path", "")
        root = scope.get("root_path", "")
        if path != self.path and path != root + self.path:
            return 404, f"Not Found: ACP is served on {self.path}", []
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin):
            return 403, "Forbidden: this Origin is not allowed", []
        if self._token is None:
            host = headers.get("host")
            if host is not None and not is_loopback(host_of(host)) and host_of(host).lower() not in self._hosts:
                return 403, "Forbidden: this Host is not served", []
        else:
            scheme, _, given = (headers.get("authorization") or "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self._token):
                return 401, "Unauthorized: a bearer token is required", [(b"www-authenticate", b'Bearer realm="acp"')]
        return None

    def _origin_allowed(self, origin: str) -> bool:
        if origin.rstrip("/").lower() in self._origins:
            return True
        host = urlsplit(origin).hostname
        return host is not None and is_loopback(host)

    def _new(self, profile: Literal["http", "websocket"]) -> _Remote | None:
        if len(self._connections) >= self.limits.max_connections:
            return None
        remote = _Remote(self, profile)
        self._connections[remote.id] = remote
        if profile == "http" and self._sweeper is None:
            self._sweeper = asyncio.ensure_future(self._sweep())
        return remote

    async def _sweep(self) -> None:
        """End the Streamable HTTP connections idle past ``idle_timeout``."""
        loop = asyncio.get_running_loop()
        period = min(self.limits.idle_timeout / 4, 30.0)
        while True:
            await asyncio.sleep(period)
            now = loop.time()
            for remote in list(self._connections.values()):
                if remote.profile == "http" and now - remote.last_active > self.limits.idle_timeout:
                    if not remote.stream.receiver and not any(b.receiver for b in remote.sessions.values()):
                        remote.close(f"idle for {self.limits.idle_timeout} s")

    # -- Streamable HTTP

    async def _http(self, scope: Scope, receive: Receive, send: Send, headers: _Headers) -> None:
        method = scope["method"]
        if method == "POST":
            await self._post(receive, send, headers)
        elif method == "GET":
            await self._get(receive, send, headers)
        elif method == "DELETE":
            cid = headers.get(HEADER_CONNECTION_ID.lower())
            if not cid:
                await _text(send, 400, "Missing Acp-Connection-Id")
                return
            remote = self._connections.get(cid)
            if remote is None:
                await _text(send, 404, "Unknown Acp-Connection-Id")
                return
            remote.close()
            await _empty(send, 202)
        else:
            await _text(send, 405, "Method Not Allowed", [(b"allow", b"GET, POST, DELETE")])

    async def _post(self, receive: Receive, send: Send, headers: _Headers) -> None:
        ctype = (headers.get("content-type") or "").split(";", 1)[0].strip().lower()
        if ctype != "application/json":
            await _text(send, 415, "Unsupported Media Type")
            return
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.limits.max_message_size:
            await _text(send, 413, f"Payload Too Large: at most {self.limits.max_message_size} bytes")
            return
        try:
            body = await asyncio.wait_for(
                _read_body(receive, self.limits.max_message_size), self.limits.request_timeout
            )
        except asyncio.TimeoutError:
            await _text(send, 408, f"Request Timeout: the body took over {self.limits.request_timeout} s")
            return
        if body is None:
            await _text(send, 413, f"Payload Too Large: at most {self.limits.max_message_size} bytes")
            return
        try:
            value = _wire.decode(body)
        except _wire.JsonLimitError:
            await _text(send, 400, "Invalid JSON")
            return
        if isinstance(value, list):
            error = {"code": -32600, "message": "Invalid request", "data": "JSON-RPC batches are not supported"}
            await _json(send, 400, {"jsonrpc": "2.0", "id": None, "error": error})
            return
        if not isinstance(value, dict):
            await _text(send, 400, "Invalid JSON-RPC message")
            return
        cid = headers.get(HEADER_CONNECTION_ID.lower())
        if value.get("method") == "initialize" and "id" in value and value.get("jsonrpc") == "2.0":
            if cid:
                await _text(send, 400, "Initialize not allowed on existing connection")
                return
            await self._initialize(body, value, send)
            return
        if not cid:
            await _text(send, 400, "Missing Acp-Connection-Id")
            return
        remote = self._connections.get(cid)
        if remote is None or remote.closed:
            await _text(send, 404, "Unknown Acp-Connection-Id")
            return
        remote.last_active = asyncio.get_running_loop().time()
        sid = headers.get(HEADER_SESSION_ID.lower())
        try:
            problem = await self._forward(remote, value, body, sid)
        except _LimitBroken as exc:
            await _text(send, 400, str(exc))
            return
        if remote.closed:
            await _text(send, 404, "Unknown Acp-Connection-Id")
        elif problem is not None:
            await _text(send, 400, problem)
        else:
            await _empty(send, 202)

    async def _forward(self, remote: _Remote, message: dict[str, Any], body: bytes, sid: str | None) -> str | None:
        if "method" not in message:  # the client's answer to the agent's request
            key = _id_key(message.get("id"))
            route = remote.client_routes.get(key) if key is not None else None
            if route:
                if not sid:
                    return "Missing Acp-Session-Id"
                if sid != route:
                    return "Mismatched Acp-Session-Id"
            if key is not None:
                remote.client_routes.pop(key, None)
            await self._feed(remote, body)
            return None
        params_sid = _session_in(message.get("params"))
        if (message.get("method") in _SESSION_METHODS or params_sid is not None) and not sid:
            return "Missing Acp-Session-Id"
        if sid and params_sid is not None and sid != params_sid:
            return "Mismatched Acp-Session-Id"
        route = sid or params_sid or _ROUTE_CONNECTION
        if route:
            remote.check_id("Session ID", route)
        if "id" in message:
            rid = message["id"]
            if isinstance(rid, str):
                remote.check_id("Request ID", rid)
            await remote.wait_for_room()  # a client that reads nothing cannot make the agent write more
            key = _id_key(rid)
            if key is not None:
                remote.pending_routes[key] = _ROUTE_CONNECTION if message.get("method") == "session/load" else route
        await self._feed(remote, body)
        return None

    async def _feed(self, remote: _Remote, body: bytes) -> None:
        await remote.transport.room.wait()
        if not remote.closed:
            remote.transport.feed(body)

    async def _initialize(self, body: bytes, message: dict[str, Any], send: Send) -> None:
        if message.get("id") is None:
            await _text(send, 400, "Initialize request must include an ID")
            return
        remote = self._new("http")
        if remote is None:
            await _text(send, 503, f"Service Unavailable: at most {self.limits.max_connections} connections")
            return
        remote.initial = asyncio.get_running_loop().create_future()
        remote.start(self._principal)
        remote.transport.feed(body)
        try:
            line, answer = await remote.initial
        except ConnectionResetError as exc:
            remote.close()
            error = {"code": -32603, "message": "Initialize failed", "data": str(exc)}
            await _json(send, 500, {"jsonrpc": "2.0", "id": message["id"], "error": error})
            return
        if "method" in answer or answer.get("id") != message["id"]:
            remote.close()
            error = {"code": -32603, "message": "Initialize failed", "data": "Expected initialize response from agent"}
            await _json(send, 500, {"jsonrpc": "2.0", "id": message["id"], "error": error})
            return
        await _raw(
            send, 200, line, [(b"content-type", b"application/json"), (b"acp-connection-id", remote.id.encode())]
        )

    async def _get(self, receive: Receive, send: Send, headers: _Headers) -> None:
        if (headers.get("upgrade") or "").lower() == "websocket":
            await _text(send, 426, "WebSocket upgrade is not implemented")
            return
        if "text/event-stream" not in (headers.get("accept") or "").lower():
            await _text(send, 406, "Not Acceptable")
            return
        cid = headers.get(HEADER_CONNECTION_ID.lower())
        if not cid:
            await _text(send, 400, "Missing Acp-Connection-Id")
            return
        remote = self._connections.get(cid)
        if remote is None or remote.closed:
            await _text(send, 404, "Unknown Acp-Connection-Id")
            return
        sid = headers.get(HEADER_SESSION_ID.lower())
        if sid:
            if len(sid) > self.limits.max_id_length:
                await _text(send, 400, f"Session ID exceeds maxIdLength ({self.limits.max_id_length})")
                return
            box = remote.sessions.get(sid)
            if box is None:
                if remote.ended.is_set():
                    await _text(send, 404, "Unknown Acp-Connection-Id")
                    return
                box = remote.sessions[sid] = _Mailbox(remote)
            elif not box.receiver:
                remote.buffering_sessions -= 1
        else:
            box = remote.stream
        if box.receiver:
            await _text(send, 409, "Outbound stream already has an active receiver")
            return
        box.attach()
        try:
            await _stream(box, receive, send)
        finally:
            box.detach()
            remote.last_active = asyncio.get_running_loop().time()
            if sid and not remote.closed and remote.sessions.get(sid) is box:
                if box.queue:
                    remote.buffering_sessions += 1
                    if remote.buffering_sessions > self.limits.max_session_streams and not remote.ended.is_set():
                        remote.close(
                            f"Connection exceeds maxBufferedSessionStreams ({self.limits.max_session_streams})"
                        )
                else:
                    del remote.sessions[sid]


async def _stream(box: _Mailbox, receive: Receive, send: Send) -> None:
    """Send ``box``'s messages as SSE events until the stream ends or the client goes away."""
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/event-stream"),
                (b"cache-control", b"no-cache"),
            ],
        }
    )
    gone = asyncio.ensure_future(_disconnected(receive))
    try:
        while True:
            while box.queue and not gone.done():
                parts = []
                size = 0
                while box.queue and size < 65536:
                    text = box.take()
                    parts.append(f"data: {text}\n\n")
                    size += len(text)
                await send({"type": "http.response.body", "body": "".join(parts).encode(), "more_body": True})
            if gone.done():
                return
            if box.finished:
                break
            box.wake.clear()
            waiter = asyncio.ensure_future(box.wake.wait())
            done, _ = await asyncio.wait({waiter, gone}, timeout=_KEEP_ALIVE, return_when=asyncio.FIRST_COMPLETED)
            if not done:
                waiter.cancel()
                await send({"type": "http.response.body", "body": b":\n\n", "more_body": True})
            elif waiter not in done:
                waiter.cancel()
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except OSError:
        return
    finally:
        gone.cancel()


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


class _Headers:
    """A request's headers by lower-case name (the first of repeated ones)."""

    __slots__ = ("_map",)

    def __init__(self, scope: Scope) -> None:
        self._map: dict[str, str] = {}
        for name, value in scope.get("headers", ()):
            self._map.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))

    def get(self, name: str) -> str | None:
        return self._map.get(name)


async def _raw(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _text(send: Send, status: int, text: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    await _raw(send, status, text.encode(), [(b"content-type", b"text/plain"), *headers])


async def _json(send: Send, status: int, value: Any) -> None:
    await _raw(send, status, json.dumps(value).encode(), [(b"content-type", b"application/json")])


async def _empty(send: Send, status: int) -> None:
    await _raw(send, status, b"", [])


# -- WebSocket ---------------------------------------------------------------------------------


class _WebSocket:
    """One WebSocket connection: the first text frame must be ``initialize``; then frames both ways."""

    def __init__(self, app: AcpAsgiApp, scope: Scope, receive: Receive, send: Send) -> None:
        self.app = app
        self.scope = scope
        self.receive = receive
        self.send = send
        self.out: list[str] = []
        self.pumping: asyncio.Task[None] | None = None  # sending self.out; none while there is nothing to send
        self.closing = False

    async def refuse(self, status: int, text: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
        if "websocket.http.response" in self.scope.get("extensions", {}):
            await self.send(
                {
                    "type": "websocket.http.response.start",
                    "status": status,
                    "headers": [(b"content-type", b"text/plain"), *headers],
                }
            )
            await self.send({"type": "websocket.http.response.body", "body": text.encode()})
        else:
            await self.send({"type": "websocket.close", "code": 1008, "reason": text[:120]})

    async def run(self, refusal: tuple[int, str, list[tuple[bytes, bytes]]] | None) -> None:
        first = await self.receive()
        if first["type"] != "websocket.connect":
            return
        if refusal is not None:
            await self.refuse(*refusal)
            return
        remote = self.app._new("websocket")
        if remote is None:
            await self.refuse(503, f"Service Unavailable: at most {self.app.limits.max_connections} connections")
            return
        await self.send({"type": "websocket.accept", "headers": [(b"acp-connection-id", remote.id.encode())]})

        def queue(line: bytes) -> None:
            text = line.decode()
            self.out.append(text)
            remote.buffered += len(text)
            remote.unsent += len(text)
            if self.pumping is None and not self.closing:
                self.pumping = asyncio.ensure_future(self.pump(remote))

        assert isinstance(remote.transport, _WebSocketTransport)
        remote.transport.on_message = queue
        code, reason = 1000, ""
        try:
            code, reason = await self.read(remote, queue)
        finally:
            flush = code == 1000 and remote.ended.is_set()
            remote.close()
            self.closing = True
            pump = self.pumping
            if pump is not None:
                if flush:  # the agent ended the connection: its last messages go out first
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(asyncio.shield(pump), self.app.limits.output_stall)
                pump.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await pump
            with contextlib.suppress(Exception):
                await self.send({"type": "websocket.close", "code": code, "reason": reason})

    async def pump(self, remote: _Remote) -> None:
        """Send what is queued, in order, then end: an idle connection holds no task for its output."""
        try:
            while self.out:
                batch, self.out = self.out, []
                for text in batch:
                    await self.send({"type": "websocket.send", "text": text})
                    remote.buffered -= len(text)
                    remote.unsent -= len(text)
                    remote.progress()
        finally:
            self.pumping = None

    async def read(self, remote: _Remote, queue: Callable[[bytes], None]) -> tuple[int, str]:
        """Take the peer's frames until it closes; the close code and reason to answer with."""
        initialized = False
        limits = self.app.limits
        stop = remote.stopped.future()
        try:
            while True:
                receiving: asyncio.Future[Any] = asyncio.ensure_future(self.receive())
                await asyncio.wait((receiving, stop), return_when=asyncio.FIRST_COMPLETED)
                if not receiving.done():
                    receiving.cancel()
                    if self.app.stopping:
                        return 1001, "Server shutting down"
                    if remote.closed:  # a limit closed it
                        return 1008, remote.close_reason[:120]
                    return 1000, ""  # the agent ended the connection
                message = receiving.result()
                if message["type"] == "websocket.disconnect":
                    return 1000, ""
                text = message.get("text")
                if text is None:
                    log.warning("ACP connection %s: ignored a binary frame", remote.id)
                    continue
                data = text.encode()
                if len(data) > limits.max_message_size:  # the connection is dropped, as the RFD says
                    return 1009, "Message too big"
                try:
                    value = _wire.decode(text)
                except _wire.JsonLimitError:
                    queue(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}')
                    continue
                if isinstance(value, list):
                    queue(
                        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request",'
                        b'"data":"JSON-RPC batches are not supported"}}'
                    )
                    continue
                if not isinstance(value, dict):
                    queue(b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}}')
                    continue
                if not initialized:
                    if "method" not in value:
                        continue  # a response before anything was asked: dropped, as the TypeScript SDK does
                    if value.get("method") != "initialize" or value.get("id") is None:
                        return 1002, "First message must be initialize"
                    initialized = True
                    remote.start(self.app._principal)
                elif value.get("method") == "initialize" and "id" in value:
                    error = {"code": -32600, "message": "Initialize not allowed on existing connection"}
                    queue(json.dumps({"jsonrpc": "2.0", "id": value["id"], "error": error}).encode())
                    continue
                try:
                    if "method" in value:
                        sid = _session_in(value.get("params"))
                        if sid is not None:
                            remote.check_id("Session ID", sid)
                        if "id" in value:
                            rid = value["id"]
                            if isinstance(rid, str):
                                remote.check_id("Request ID", rid)
                            await remote.wait_for_room()  # a peer that reads nothing cannot make the agent write more
                except _LimitBroken as exc:
                    remote.close(str(exc))
                    return 1008, str(exc)[:120]
                if remote.closed:
                    return 1008, remote.close_reason[:120]
                await remote.transport.room.wait()
                remote.transport.feed(data)
                del receiving, message, text, data, value  # while it waits, an idle connection keeps no old message
        finally:
            stop.cancel()
