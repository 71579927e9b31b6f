"""The client: a ``ClientConnection`` to a remote agent over WebSocket or Streamable HTTP.

Hand-written: the source is runtime/remote/_client.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl as _ssl
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .. import connection as _connection
from .._connection.transport import HEAD_SIZE, TAIL_SIZE
from ._limits import HEADER_CONNECTION_ID, HEADER_SESSION_ID, PATH

log = logging.getLogger("acp_types.remote")

_CONNECTION_FAILURES = frozenset({401, 403, 404, 410})
_READ_AHEAD = 256  # messages read from the streams before the connection takes them


def _url(url: str) -> tuple[str, str]:
    """The profile (``ws`` or ``http``) and the URL, ``/acp`` when it names no path."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("ws", "wss", "http", "https") or not parts.netloc:
        raise ValueError(f"{url!r}: an ACP URL is ws://, wss://, http:// or https://HOST[:PORT][/PATH]")
    return ("ws" if scheme.startswith("ws") else "http"), urlunsplit(
        (scheme, parts.netloc, parts.path or PATH, parts.query, "")
    )


_SEND_HIGH_WATER = 1024 * 1024  # bytes queued for the server past which drain() waits


class _ClientTransport:
    """The client's side of a remote connection (a ``connection.Transport``), either profile.

    The profile's readers :meth:`put` each message from the server (a text frame, an SSE event, a
    POST's answer); what the connection sends is queued and goes out in order through the profile's
    :meth:`_deliver`, from one task. ``max_line_size`` bounds a message (a longer one comes as an
    ``Oversized``); ``reason`` says why the input ended when it was not a close asked for.
    """

    def __init__(self, max_message_size: int) -> None:
        self.max_line_size = max_message_size
        self.messages: deque[bytes | _connection.Oversized] = deque()
        self.eof = False
        self.reason: str | None = None
        self.ready = asyncio.Event()
        self.room = asyncio.Event()
        self.room.set()
        self._out: deque[bytes] = deque()
        self.queued = 0
        self._wake = asyncio.Event()
        self._sent = asyncio.Event()
        self._closing = False
        self.error: BaseException | None = None
        self._pump = asyncio.ensure_future(self._run())

    # in: messages from the server

    def put(self, text: str | bytes) -> None:
        data = text.encode() if isinstance(text, str) else text
        limit = self.max_line_size
        self.messages.append(
            data if len(data) <= limit else _connection.Oversized(data[:HEAD_SIZE], data[-TAIL_SIZE:], limit)
        )
        if len(self.messages) >= _READ_AHEAD:
            self.room.clear()
        self.ready.set()

    def end(self, reason: str | None = None) -> None:
        if not self.eof:
            self.reason = reason
        self.eof = True
        self.ready.set()

    async def receive(self) -> bytes | _connection.Oversized | None:
        while not self.messages:
            if self.eof:
                return None
            self.ready.clear()
            await self.ready.wait()
        message = self.messages.popleft()
        if len(self.messages) < _READ_AHEAD:
            self.room.set()
        return message

    # out: messages to the server

    async def _deliver(self, message: bytes) -> None:
        raise NotImplementedError

    def send(self, message: bytes) -> None:
        if self._closing or self.error is not None:
            return
        self._out.append(message)
        self.queued += len(message)
        self._wake.set()

    def buffered(self) -> int:
        return self.queued if self.queued > _SEND_HIGH_WATER else 0  # drain() waits until it is back under

    async def _run(self) -> None:
        try:
            while True:
                while self._out:
                    message = self._out.popleft()
                    await self._deliver(message)
                    self.queued -= len(message)
                    self._sent.set()
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
        except Exception as exc:  # the server is gone: the connection sees the end of its input
            log.warning("%s", exc)
            self.error = exc
            self.end(str(exc))
            self._out.clear()
            self.queued = 0
            self._sent.set()

    async def drain(self) -> None:
        while self.queued > _SEND_HIGH_WATER and self.error is None:
            self._sent.clear()
            await self._sent.wait()
        if self.error is not None:
            raise ConnectionResetError(f"the remote agent is gone: {self.error}")

    async def close(self) -> None:
        """What is queued still goes; then the sending task ends."""
        self._closing = True
        self._wake.set()
        with contextlib.suppress(Exception):
            await self._pump


# -- WebSocket ---------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _websocket(
    url: str, headers: dict[str, str], ssl: _ssl.SSLContext | None, max_message_size: int, open_timeout: float
) -> AsyncIterator[tuple[_WebSocketTransport, str | None]]:
    from websockets.asyncio.client import connect as ws_connect
    from websockets.exceptions import InvalidStatus

    async def open_socket() -> Any:
        try:
            return await ws_connect(
                url,
                additional_headers=headers,
                ssl=ssl,
                max_size=max_message_size,
                open_timeout=open_timeout,
                user_agent_header=None,
                compression=None,
            )
        except InvalidStatus as exc:
            body = exc.response.body.decode(errors="replace").strip()[:200] if exc.response.body else ""
            raise _connection.ConnectionClosed(
                f"{url} refused the connection: HTTP {exc.response.status_code}" + (f": {body}" if body else "")
            ) from None
        except Exception as exc:  # OSError, a timeout, a handshake that is not one
            raise _connection.ConnectionClosed(f"cannot connect to {url}: {exc}") from None

    transport = _WebSocketTransport(await open_socket(), open_socket, max_message_size)
    response = transport.ws.response
    cid = response.headers.get(HEADER_CONNECTION_ID) if response is not None else None
    try:
        yield transport, cid
    finally:
        await transport.ws.close()
        transport.reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await transport.reading


class _WebSocketTransport(_ClientTransport):
    """WebSocket: one message per text frame each way."""

    def __init__(self, ws: Any, open_socket: Callable[[], Awaitable[Any]], max_message_size: int) -> None:
        super().__init__(max_message_size)
        self.ws = ws
        self._open_socket = open_socket
        self._initialized = False
        self.reading = asyncio.ensure_future(self._read(ws))

    async def _read(self, ws: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            async for message in ws:
                if isinstance(message, str):
                    await self.room.wait()
                    self.put(message)
        except ConnectionClosed:
            pass
        finally:
            if self.ws is ws:  # not a socket replaced by a second initialize
                code, why = ws.close_code, ws.close_reason
                self.end(
                    f"the server closed the WebSocket ({code}{': ' + why if why else ''})"
                    if code
                    else "the WebSocket was lost"
                )

    async def _deliver(self, message: bytes) -> None:
        if b'"initialize"' in message and json.loads(message).get("method") == "initialize":
            if self._initialized:
                # a v2 client falling back to a v1 agent asks again: the RFD allows one initialize per
                # connection, so the second one goes on a new socket and the first is closed
                old, reader = self.ws, self.reading
                self.ws = await self._open_socket()
                self.reading = asyncio.ensure_future(self._read(self.ws))
                reader.cancel()
                await old.close()
            self._initialized = True
        await self.ws.send(message.decode())


# -- Streamable HTTP ---------------------------------------------------------------------------


class _HttpTransport(_ClientTransport):
    """Streamable HTTP, as the TypeScript SDK's ``http-client`` does it: each message out is a POST,
    messages in come from its answers and from the connection's and the sessions' SSE streams."""

    def __init__(
        self, url: str, headers: dict[str, str], ssl: _ssl.SSLContext | None, max_message_size: int, timeout: float
    ) -> None:
        import httpx

        super().__init__(max_message_size)

        self._httpx = httpx
        self.url = url
        self.max_message_size = max_message_size
        verify: Any = ssl if ssl is not None else True
        self.client = httpx.AsyncClient(
            headers=headers, verify=verify, timeout=httpx.Timeout(timeout, read=None), follow_redirects=False
        )
        self.connection_id: str | None = None
        self.streams: dict[str, asyncio.Future[None]] = {}  # session id -> its GET is open
        self.tasks: set[asyncio.Task[None]] = set()
        self.pending_response_sessions: dict[Any, str] = {}  # the agent's requests on a session's stream
        self.closed = False

    async def _deliver(self, line: bytes) -> None:
        message = json.loads(line)
        if self.connection_id is not None and message.get("method") == "initialize":
            # a v2 client falling back to a v1 agent asks again: Streamable HTTP allows one initialize
            # per connection, so the second one starts a new connection and the first is ended
            await self._restart()
        if self.connection_id is None:
            await self._initialize(line, message)
            return
        sid = self._session_of(message)
        if sid is not None:
            # a session/load or session/resume of a session whose stream is open keeps that stream: the
            # server serves one receiver per stream (a second GET is 409); an ended stream was dropped
            await self._open_session(sid)
        headers = {"Content-Type": "application/json", HEADER_CONNECTION_ID: self.connection_id}
        if sid is not None:
            headers[HEADER_SESSION_ID] = sid
        try:
            response = await self._post(line, headers, _ERROR_BODY)
        except self._httpx.HTTPError as exc:
            self._fail(f"POST failed: {exc}")
            raise ConnectionResetError(str(exc)) from None
        if response.status_code >= 300:
            text = response.content.decode(errors="replace")[:500]
            if response.status_code in _CONNECTION_FAILURES:
                self._fail(f"POST failed: {response.status_code}: {text}")
                raise ConnectionResetError(f"the server answered {response.status_code}: {text}")
            if "method" in message and "id" in message:  # the request fails, the connection goes on
                error = {
                    "code": -32603,
                    "message": f"ACP POST failed: {response.status_code}: {text}",
                    "data": {"status": response.status_code, "body": text},
                }
                self.put(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}))
        if "method" not in message:
            self.pending_response_sessions.pop(_key(message.get("id")), None)

    async def _post(self, line: bytes, headers: dict[str, str], limit: int) -> _Answer:
        """POST one message; the answer's body read up to ``limit`` bytes (a longer one fails the POST)."""
        async with self.client.stream("POST", self.url, content=line, headers=headers) as response:
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > limit:
                    if response.status_code >= 300:  # an error's text: its beginning is enough
                        del body[limit:]
                        break
                    raise self._httpx.HTTPError(f"an answer over {limit} bytes")
            return _Answer(response.status_code, response.headers, bytes(body))

    def _session_of(self, message: dict[str, Any]) -> str | None:
        params = message.get("params")
        if isinstance(params, dict) and isinstance(params.get("sessionId"), str):
            return str(params["sessionId"])
        if "method" not in message and "id" in message:
            return self.pending_response_sessions.get(_key(message["id"]))
        return None

    async def _initialize(self, line: bytes, message: dict[str, Any]) -> None:
        if message.get("method") != "initialize":
            raise ConnectionResetError("the first message over Streamable HTTP must be initialize")
        try:
            response = await self._post(line, {"Content-Type": "application/json"}, self.max_message_size)
        except self._httpx.HTTPError as exc:
            raise ConnectionResetError(f"cannot reach {self.url}: {exc}") from None
        if response.status_code != 200:
            raise ConnectionResetError(
                f"{self.url} refused initialize: HTTP {response.status_code}: "
                + response.content.decode(errors="replace")[:200]
            )
        cid = response.headers.get(HEADER_CONNECTION_ID)
        if not cid:
            raise ConnectionResetError(f"{self.url} answered initialize without {HEADER_CONNECTION_ID}")
        self.connection_id = cid
        self._spawn(self._read_stream(None, None))
        self.put(response.content)

    async def _restart(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        old, self.connection_id = self.connection_id, None
        self.streams.clear()
        self.pending_response_sessions.clear()
        with contextlib.suppress(Exception):
            await self.client.delete(self.url, headers={HEADER_CONNECTION_ID: str(old)})

    async def _open_session(self, sid: str) -> None:
        ready = self.streams.get(sid)
        if ready is None:
            ready = self.streams[sid] = asyncio.get_running_loop().create_future()
            self._spawn(self._read_stream(sid, ready))
        await asyncio.shield(ready)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _read_stream(self, sid: str | None, ready: asyncio.Future[None] | None) -> None:
        assert self.connection_id is not None
        headers = {"Accept": "text/event-stream", HEADER_CONNECTION_ID: self.connection_id}
        if sid is not None:
            headers[HEADER_SESSION_ID] = sid
        try:
            async with self.client.stream("GET", self.url, headers=headers) as response:
                if response.status_code != 200:
                    body = (await response.aread())[:200].decode(errors="replace")
                    raise ConnectionResetError(f"the {sid or 'connection'} stream: HTTP {response.status_code}: {body}")
                if ready is not None and not ready.done():
                    ready.set_result(None)
                data: list[str] = []
                size = 0
                async for text in _sse_lines(response, self.max_message_size + 16):
                    if text == "":
                        if data:
                            self._event("\n".join(data), sid)
                            data, size = [], 0
                        await self.room.wait()
                    elif text.startswith("data:"):
                        value = text[6:] if text.startswith("data: ") else text[5:]
                        size += len(value)
                        if size > self.max_message_size:
                            raise ConnectionResetError(f"an event over {self.max_message_size} bytes")
                        data.append(value)
            if sid is None and not self.closed:
                self._fail("the connection's stream ended")
            elif sid is not None:
                self.streams.pop(sid, None)
        except Exception as exc:
            if ready is not None and not ready.done():
                ready.set_exception(ConnectionResetError(str(exc)))
                ready.exception()
            if sid is None and not self.closed:
                self._fail(str(exc))
            elif sid is not None:
                self.streams.pop(sid, None)
                log.warning("ACP session stream %s: %s", sid, exc)

    def _event(self, text: str, sid: str | None) -> None:
        try:
            message = json.loads(text)
        except ValueError:
            log.warning("skipped an SSE event that is not JSON (%d characters)", len(text))
            return
        if not isinstance(message, dict):
            return
        result = message.get("result")
        if isinstance(result, dict) and isinstance(result.get("sessionId"), str) and not self.closed:
            new = result["sessionId"]
            if new not in self.streams:
                self.streams[new] = asyncio.get_running_loop().create_future()
                self._spawn(self._read_stream(new, self.streams[new]))
        if sid is not None and "method" in message and "id" in message:
            self.pending_response_sessions[_key(message["id"])] = sid
        self.put(text)

    def _fail(self, reason: str) -> None:
        if not self.closed:
            log.warning("ACP connection %s: %s", self.connection_id, reason)
        self.end(reason)

    async def shutdown(self) -> None:
        """End the connection on the server (DELETE) and its streams here."""
        if self.closed:
            return
        self.closed = True
        for task in list(self.tasks):
            task.cancel()
        if self.connection_id is not None:
            with contextlib.suppress(Exception):
                await self.client.delete(self.url, headers={HEADER_CONNECTION_ID: self.connection_id})
        self.end()
        await self.client.aclose()


async def _sse_lines(response: Any, limit: int) -> AsyncIterator[str]:
    """The lines of an SSE body (LF, CRLF or CR), none held past ``limit`` bytes: a server cannot make us buffer more."""
    pending = bytearray()
    async for chunk in response.aiter_bytes():
        pending += chunk
        while True:
            cut = min((i for i in (pending.find(b"\n"), pending.find(b"\r")) if i >= 0), default=-1)
            if cut < 0:
                break
            line = bytes(pending[:cut])
            if pending[cut : cut + 2] == b"\r\n":
                cut += 1
            elif pending[cut : cut + 1] == b"\r" and cut + 1 == len(pending):
                break  # a CR at the end of the chunk: its LF may come next
            del pending[: cut + 1]
            yield line.decode("utf-8", "replace")
        if len(pending) > limit:
            raise ConnectionResetError(f"a line of the event stream over {limit} bytes")


_ERROR_BODY = 8 * 1024  # bytes of a refused POST's text kept (the TypeScript client keeps as many)


class _Answer:
    """What a POST got: its status, headers and (bounded) body."""

    __slots__ = ("content", "headers", "status_code")

    def __init__(self, status_code: int, headers: Any, content: bytes) -> None:
        self.status_code = status_code
        self.headers = headers
        self.content = content


def _key(rid: Any) -> tuple[str, Any]:
    return (type(rid).__name__, rid)


@contextlib.asynccontextmanager
async def _http(
    url: str, headers: dict[str, str], ssl: _ssl.SSLContext | None, max_message_size: int, open_timeout: float
) -> AsyncIterator[tuple[_HttpTransport, None]]:
    transport = _HttpTransport(url, headers, ssl, max_message_size, open_timeout)
    try:
        yield transport, None
    finally:
        await transport.shutdown()


async def _connect(
    url: str,
    handler: Any = None,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    ssl: _ssl.SSLContext | None = None,
    max_message_size: int = _connection.DEFAULT_MAX_LINE_SIZE,
    open_timeout: float = 10.0,
    **options: Any,
) -> AsyncIterator[_connection.ClientConnection[Any, Any, Any]]:
    profile, url = _url(url)
    extra = dict(headers or {})
    if token is not None:
        extra["Authorization"] = f"Bearer {token}"
    max_message_size = options.pop("max_line_size", max_message_size)  # the stdio option's name, kept
    remote: Any = (_websocket if profile == "ws" else _http)(url, extra, ssl, max_message_size, open_timeout)
    async with remote as (transport, _):
        conn = _connection.ClientConnection.on_transport(transport, handler, **options)
        async with conn:
            yield conn
