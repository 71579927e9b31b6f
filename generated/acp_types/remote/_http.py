"""The Streamable HTTP profile of the remote server: POST bodies in, SSE streams out.

A POST carries one client message (``initialize`` without ``Acp-Connection-Id`` is answered 200 with
the agent's answer and the new connection's id; every other message 202, its answer coming on a
stream); a GET with ``Accept: text/event-stream`` opens the connection's stream (no
``Acp-Session-Id``) or a session's (with it), one receiver each; DELETE ends the connection.

Which output goes to which stream, the status codes and the header names follow the TypeScript
SDK 2.4.0's ``AcpServer``: the answer to a request goes where the request came from (the session's
stream when the POST named a session, except ``session/load``, answered on the connection's
stream); an agent request or notification whose params name a ``sessionId`` goes to that session's
stream (kept, buffered, until its GET comes), anything else to the connection's stream.

Hand-written: the source is runtime/remote/_http.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import TYPE_CHECKING, Any

from .. import _wire
from ._asgi import Headers, Receive, Scope, Send, disconnected, read_body, send_empty, send_json, send_raw, send_text
from ._limits import HEADER_CONNECTION_ID, HEADER_SESSION_ID
from ._queues import Fifo, Flag
from ._remote import LimitBroken, Remote, ServerTransport, id_key, session_in

if TYPE_CHECKING:
    from ._server import AcpAsgiApp

# the methods whose POST must name its session (the TypeScript SDK's list)
SESSION_METHODS = frozenset(
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
KEEP_ALIVE = 15.0  # seconds between SSE comments on an idle stream
ROUTE_CONNECTION = ""  # a route: "" is the connection's stream, anything else a session's

# The start of a session's notification as the agent's connection writes one (core.Connection.notify:
# no "id" before "method", the params' model first writes its sessionId). The routing of such a
# message reads only this, not the whole message again: the most a turn sends is notifications.
SESSION_NOTIFICATION = re.compile(rb'\{"jsonrpc":"2\.0","method":"[^"\\]*","params":\{"sessionId":"([^"\\]*)"')


class Mailbox:
    """One stream's queue of JSON texts, held until its one receiver takes them."""

    __slots__ = ("_owner", "finished", "queue", "receiver", "size", "wake")

    def __init__(self, owner: Remote) -> None:
        self._owner = owner
        self.queue: Fifo[str] = Fifo()
        self.size = 0
        self.receiver = False  # a GET is sending this stream: what it holds is unsent, not unclaimed
        self.finished = False
        self.wake = Flag()

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


class HttpTransport(ServerTransport):
    """Streamable HTTP: messages from POST bodies in; out to the connection's stream or a session's (routed)."""

    _owner: HttpRemote

    def send(self, message: bytes) -> None:
        if not self._owner.closed:
            self._owner.outbound(message)


class HttpRemote(Remote):
    """A Streamable HTTP connection: the agent's output routed to the connection's stream or a session's."""

    def __init__(self, server: AcpAsgiApp) -> None:
        super().__init__(server)
        self.stream = Mailbox(self)
        self.sessions: dict[str, Mailbox] = {}
        self.buffering_sessions = 0
        self.pending_routes: dict[tuple[str, Any], str] = {}
        self.client_routes: dict[tuple[str, Any], str] = {}
        self.initial: asyncio.Future[tuple[bytes, Any]] | None = None
        self.last_active = asyncio.get_running_loop().time()

    def make_transport(self) -> ServerTransport:
        return HttpTransport(self)

    def finish_output(self) -> None:
        self.stream.finish()
        for box in self.sessions.values():
            box.finish()
        if self.initial is not None and not self.initial.done():
            self.initial.set_exception(ConnectionResetError("the agent closed before it answered initialize"))

    def drop_output(self) -> None:
        self.stream.drop()
        for box in self.sessions.values():
            box.drop()
        self.sessions.clear()
        self.pending_routes.clear()
        self.client_routes.clear()

    def idle_past(self, now: float) -> bool:
        if now - self.last_active <= self.limits.idle_timeout:
            return False
        return not self.stream.receiver and not any(box.receiver for box in self.sessions.values())

    def outbound(self, line: bytes) -> None:
        if self.initial is not None and not self.initial.done():
            self.initial.set_result((line, json.loads(line)))
            return
        text = line.decode()
        fast = SESSION_NOTIFICATION.match(line)
        if fast is not None:
            try:
                self.deliver(fast.group(1).decode(), text)
            except LimitBroken as exc:
                self.close(str(exc))
            return
        message = json.loads(line)
        if not isinstance(message, dict):  # a batch's answers (never asked here: batches are refused)
            self.stream.push(text)
            return
        try:
            if "method" not in message:  # a response
                key = id_key(message.get("id"))
                route = self.pending_routes.pop(key, ROUTE_CONNECTION) if key is not None else ROUTE_CONNECTION
                result = message.get("result")
                sid = session_in(result)
                if sid is not None:
                    self.check_id("Session ID", sid)
                self.deliver(route, text)
                return
            sid = session_in(message.get("params"))
            route = sid if sid is not None else ROUTE_CONNECTION
            if "id" in message:
                key = id_key(message["id"])
                if key is not None:
                    self.client_routes[key] = route
            self.deliver(route, text)
        except LimitBroken as exc:
            self.close(str(exc))

    def deliver(self, route: str, text: str) -> None:
        if route == ROUTE_CONNECTION:
            self.stream.push(text)
            return
        box = self.sessions.get(route)
        if box is None:
            self.check_id("Session ID", route)
            if self.buffering_sessions >= self.limits.max_session_streams:
                raise LimitBroken(f"Connection exceeds maxBufferedSessionStreams ({self.limits.max_session_streams})")
            box = self.sessions[route] = Mailbox(self)
            self.buffering_sessions += 1
        box.push(text)


class StreamableHttp:
    """The Streamable HTTP profile of one server: its POST, GET and DELETE requests."""

    def __init__(self, app: AcpAsgiApp) -> None:
        self.app = app
        self.limits = app.limits

    async def _named(self, headers: Headers, send: Send) -> HttpRemote | None:
        """The open connection the request names by ``Acp-Connection-Id``; else answered 400 or 404, and None."""
        cid = headers.get(HEADER_CONNECTION_ID.lower())
        if not cid:
            await send_text(send, 400, "Missing Acp-Connection-Id")
            return None
        remote = self.app.find(cid)
        if not isinstance(remote, HttpRemote) or remote.closed:
            await send_text(send, 404, "Unknown Acp-Connection-Id")
            return None
        return remote

    async def handle(self, scope: Scope, receive: Receive, send: Send, headers: Headers) -> None:
        method = scope["method"]
        if method == "POST":
            await self._post(receive, send, headers)
        elif method == "GET":
            await self._get(receive, send, headers)
        elif method == "DELETE":
            remote = await self._named(headers, send)
            if remote is None:
                return
            remote.close()
            await send_empty(send, 202)
        else:
            await send_text(send, 405, "Method Not Allowed", [(b"allow", b"GET, POST, DELETE")])

    async def _post(self, receive: Receive, send: Send, headers: Headers) -> None:
        ctype = (headers.get("content-type") or "").split(";", 1)[0].strip().lower()
        if ctype != "application/json":
            await send_text(send, 415, "Unsupported Media Type")
            return
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.limits.max_message_size:
            await send_text(send, 413, f"Payload Too Large: at most {self.limits.max_message_size} bytes")
            return
        try:
            body = await asyncio.wait_for(read_body(receive, self.limits.max_message_size), self.limits.request_timeout)
        except asyncio.TimeoutError:
            await send_text(send, 408, f"Request Timeout: the body took over {self.limits.request_timeout} s")
            return
        if body is None:
            await send_text(send, 413, f"Payload Too Large: at most {self.limits.max_message_size} bytes")
            return
        try:
            value = _wire.decode(body)
        except _wire.JsonLimitError:
            await send_text(send, 400, "Invalid JSON")
            return
        if isinstance(value, list):
            error = {"code": -32600, "message": "Invalid request", "data": "JSON-RPC batches are not supported"}
            await send_json(send, 400, {"jsonrpc": "2.0", "id": None, "error": error})
            return
        if not isinstance(value, dict):
            await send_text(send, 400, "Invalid JSON-RPC message")
            return
        if value.get("method") == "initialize" and "id" in value and value.get("jsonrpc") == "2.0":
            if headers.get(HEADER_CONNECTION_ID.lower()):
                await send_text(send, 400, "Initialize not allowed on existing connection")
                return
            await self._initialize(body, value, send)
            return
        remote = await self._named(headers, send)
        if remote is None:
            return
        remote.last_active = asyncio.get_running_loop().time()
        sid = headers.get(HEADER_SESSION_ID.lower())
        try:
            problem = await self._forward(remote, value, body, sid)
        except LimitBroken as exc:
            await send_text(send, 400, str(exc))
            return
        if remote.closed:
            await send_text(send, 404, "Unknown Acp-Connection-Id")
        elif problem is not None:
            await send_text(send, 400, problem)
        else:
            await send_empty(send, 202)

    async def _forward(self, remote: HttpRemote, message: dict[str, Any], body: bytes, sid: str | None) -> str | None:
        if "method" not in message:  # the client's answer to the agent's request
            key = id_key(message.get("id"))
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
        params_sid = session_in(message.get("params"))
        if (message.get("method") in SESSION_METHODS or params_sid is not None) and not sid:
            return "Missing Acp-Session-Id"
        if sid and params_sid is not None and sid != params_sid:
            return "Mismatched Acp-Session-Id"
        route = sid or params_sid or ROUTE_CONNECTION
        if route:
            remote.check_id("Session ID", route)
        if "id" in message:
            rid = message["id"]
            if isinstance(rid, str):
                remote.check_id("Request ID", rid)
            await remote.wait_for_room()  # a client that reads nothing cannot make the agent write more
            key = id_key(rid)
            if key is not None:
                remote.pending_routes[key] = ROUTE_CONNECTION if message.get("method") == "session/load" else route
        await self._feed(remote, body)
        return None

    async def _feed(self, remote: HttpRemote, body: bytes) -> None:
        await remote.transport.room.wait()
        if not remote.closed:
            remote.transport.feed(body)

    async def _initialize(self, body: bytes, message: dict[str, Any], send: Send) -> None:
        if message.get("id") is None:
            await send_text(send, 400, "Initialize request must include an ID")
            return
        remote = self.app.new_remote(HttpRemote)
        if remote is None:
            await send_text(send, 503, f"Service Unavailable: at most {self.limits.max_connections} connections")
            return
        remote.initial = asyncio.get_running_loop().create_future()
        remote.start(self.app.principal)
        remote.transport.feed(body)
        try:
            line, answer = await remote.initial
        except ConnectionResetError as exc:
            remote.close()
            error = {"code": -32603, "message": "Initialize failed", "data": str(exc)}
            await send_json(send, 500, {"jsonrpc": "2.0", "id": message["id"], "error": error})
            return
        if "method" in answer or answer.get("id") != message["id"]:
            remote.close()
            error = {"code": -32603, "message": "Initialize failed", "data": "Expected initialize response from agent"}
            await send_json(send, 500, {"jsonrpc": "2.0", "id": message["id"], "error": error})
            return
        await send_raw(
            send, 200, line, [(b"content-type", b"application/json"), (b"acp-connection-id", remote.id.encode())]
        )

    async def _get(self, receive: Receive, send: Send, headers: Headers) -> None:
        if (headers.get("upgrade") or "").lower() == "websocket":
            await send_text(send, 426, "WebSocket upgrade is not implemented")
            return
        if "text/event-stream" not in (headers.get("accept") or "").lower():
            await send_text(send, 406, "Not Acceptable")
            return
        remote = await self._named(headers, send)
        if remote is None:
            return
        sid = headers.get(HEADER_SESSION_ID.lower())
        if sid:
            if len(sid) > self.limits.max_id_length:
                await send_text(send, 400, f"Session ID exceeds maxIdLength ({self.limits.max_id_length})")
                return
            box = remote.sessions.get(sid)
            if box is None:
                if remote.ended.is_set():
                    await send_text(send, 404, "Unknown Acp-Connection-Id")
                    return
                box = remote.sessions[sid] = Mailbox(remote)
            elif not box.receiver:
                remote.buffering_sessions -= 1
        else:
            box = remote.stream
        if box.receiver:
            await send_text(send, 409, "Outbound stream already has an active receiver")
            return
        box.attach()
        try:
            await stream_out(box, receive, send)
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


async def stream_out(box: Mailbox, receive: Receive, send: Send) -> None:
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
    gone = asyncio.ensure_future(disconnected(receive))
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
            done, _ = await asyncio.wait({waiter, gone}, timeout=KEEP_ALIVE, return_when=asyncio.FIRST_COMPLETED)
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
