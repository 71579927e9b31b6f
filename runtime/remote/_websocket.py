"""The WebSocket profile of the remote server: a ``GET`` with ``Upgrade: websocket`` on the same path.

One JSON-RPC message per text frame each way, ``Acp-Connection-Id`` on the 101 answer; the first
frame must be ``initialize``. The agent's output is queued for the socket's pump, a task only while
there is output to send.

Hand-written: the source is runtime/remote/_websocket.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .. import _wire
from ._asgi import Receive, Scope, Send
from ._remote import LimitBroken, Remote, ServerTransport, log, session_in

if TYPE_CHECKING:
    from ._server import AcpAsgiApp


class WebSocketTransport(ServerTransport):
    """WebSocket: one message per text frame each way; out through the socket's queue (``on_message``)."""

    on_message: Callable[[bytes], None] | None = None

    def send(self, message: bytes) -> None:
        if not self._owner.closed and self.on_message is not None:
            self.on_message(message)


class WebSocketRemote(Remote):
    """A WebSocket connection: the agent's output goes out through the socket's queue."""

    transport: WebSocketTransport

    def make_transport(self) -> WebSocketTransport:
        return WebSocketTransport(self)


class WebSocket:
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
        remote = self.app.new_remote(WebSocketRemote)
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

        remote.transport.on_message = queue
        code, reason = 1000, ""
        # The frames are read by a task of their own, which the connection's stop cancels (the agent
        # ended it, a limit closed it, the server is stopping): one task a connection, not one a frame.
        reading = asyncio.ensure_future(self.read(remote, queue))
        stop = remote.stopped.future()
        stop.add_done_callback(lambda _: reading.cancel())
        try:
            code, reason = await reading
        except asyncio.CancelledError:
            if not stop.done():
                raise  # this handler itself is cancelled
            if self.app.stopping:
                code, reason = 1001, "Server shutting down"
            elif remote.closed:  # a limit closed it
                code, reason = 1008, remote.close_reason[:120]
            # else the agent ended the connection: 1000
        finally:
            stop.cancel()
            reading.cancel()
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

    async def pump(self, remote: WebSocketRemote) -> None:
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

    async def read(self, remote: WebSocketRemote, queue: Callable[[bytes], None]) -> tuple[int, str]:
        """Take the peer's frames until it closes; the close code and reason to answer with."""
        initialized = False
        limits = self.app.limits
        while True:
            message = await self.receive()
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
                remote.start(self.app.principal)
            elif value.get("method") == "initialize" and "id" in value:
                error = {"code": -32600, "message": "Initialize not allowed on existing connection"}
                queue(json.dumps({"jsonrpc": "2.0", "id": value["id"], "error": error}).encode())
                continue
            try:
                if "method" in value:
                    sid = session_in(value.get("params"))
                    if sid is not None:
                        remote.check_id("Session ID", sid)
                    if "id" in value:
                        rid = value["id"]
                        if isinstance(rid, str):
                            remote.check_id("Request ID", rid)
                        await remote.wait_for_room()  # a peer that reads nothing cannot make the agent write more
            except LimitBroken as exc:
                remote.close(str(exc))
                return 1008, str(exc)[:120]
            if remote.closed:
                return 1008, remote.close_reason[:120]
            await remote.transport.room.wait()
            remote.transport.feed(data)
            del message, text, data, value  # while it waits, an idle connection keeps no old message
