"""``python -m acp_types.remote connect URL``: a remote agent made to look like a local stdio agent.

Each line on stdin is one message to the server and each message from the server one line on
stdout, through the same client code as :func:`acp_types.remote.connect` (``_websocket`` and
``_http`` in ``_client.py``): the Streamable HTTP profile's ``Acp-Connection-Id``, the
``Acp-Session-Id`` of session-scoped POSTs and the GET stream of each session come from there.
The relay parses each line from stdin once (to refuse what the remote transport would refuse,
and to know which requests are in flight); what comes from the server is passed on as it came,
and parsed only when it may answer one of those requests.

It ends when stdin ends (the server's connection is closed: a DELETE, or the socket's close,
once the requests in flight are answered or ``close_timeout`` passed), on SIGTERM, SIGHUP or
SIGINT (the same, at once; exit 0), or when the server goes: then each request in flight is
answered with an error on stdout, one line says why on stderr, and the exit code is 1.

Hand-written: the source is runtime/remote/_relay.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import ssl as _ssl
import stat
import sys
from collections.abc import Callable
from typing import Any

from .. import connection as _connection
from .._connection.limits import sniff_oversized
from ._client import _ClientTransport, _http, _key, _url, _websocket

log = logging.getLogger("acp_types.remote")

INTERNAL_ERROR = -32603
INVALID_REQUEST = -32600
PARSE_ERROR = -32700


class RelayError(Exception):
    """The remote agent could not be reached, or went away: the relay's one line on stderr."""


def _error(rid: Any, code: int, message: str) -> bytes:
    body = {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


class _Relay:
    def __init__(self, local: _connection.StdioTransport, remote: _ClientTransport, url: str) -> None:
        self.local = local
        self.remote = remote
        self.url = url
        self.in_flight: dict[tuple[str, Any], Any] = {}  # requests from stdin not answered yet
        self.answered = asyncio.Event()  # set whenever in_flight becomes empty

    def _to_stdout(self, message: bytes) -> None:
        self.local.send(message)

    async def _flush(self) -> None:
        if self.local.buffered() > _connection.WRITE_HIGH_WATER:
            await self.local.drain()

    async def up(self) -> bool:
        """stdin to the server: True when stdin ended, False when the server's side failed."""
        limit = self.local.max_line_size
        while True:
            line = await self.local.receive()
            if line is None:
                return True
            if isinstance(line, _connection.Oversized):
                rid, is_response = sniff_oversized(line, lambda _rid: False)
                rid = None if rid is ... else rid
                if is_response:  # the client's answer to the agent: the agent gets an error instead
                    if rid is not None:
                        self._send(_error(rid, INTERNAL_ERROR, f"the client's answer is longer than {limit} bytes"))
                else:
                    self._to_stdout(_error(rid, INVALID_REQUEST, f"the message is longer than {limit} bytes"))
                await self._flush()
                continue
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self._to_stdout(_error(None, PARSE_ERROR, "parse error: the line is not JSON"))
                await self._flush()
                continue
            if not isinstance(message, dict):  # the remote transport takes no batches
                self._to_stdout(_error(None, INVALID_REQUEST, "not a JSON-RPC message (batches are not relayed)"))
                await self._flush()
                continue
            if "method" in message and "id" in message:
                self.in_flight[_key(message["id"])] = message["id"]
                self.answered.clear()
            if b"\n" in line or b"\r" in line:  # a message is one line on the wire too
                line = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
            self._send(line)
            try:
                await self.remote.drain()
            except ConnectionError:
                return False

    def _send(self, message: bytes) -> None:
        self.remote.send(message)

    async def down(self) -> None:
        """The server to stdout, until the server's side ends."""
        while True:
            line = await self.remote.receive()
            if line is None:
                return
            if isinstance(line, _connection.Oversized):  # the profiles refuse these before: never relayed
                log.warning("skipped a message from the server over %d bytes", line.limit)
                continue
            if b"\n" in line or b"\r" in line:  # one line on stdout: JSON allows them only as whitespace
                try:
                    line = json.dumps(json.loads(line), ensure_ascii=False, separators=(",", ":")).encode()
                except ValueError:
                    log.warning("skipped a message from the server that is not JSON (%d bytes)", len(line))
                    continue
            if self.in_flight and (b'"method"' not in line or b'"result"' in line or b'"error"' in line):
                self._settle(line)
            self._to_stdout(line)
            await self._flush()

    def _settle(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return
        if isinstance(message, dict) and "method" not in message and "id" in message:
            with contextlib.suppress(TypeError):  # an id that is no key (a list...) answers nothing of ours
                self.in_flight.pop(_key(message["id"]), None)
                if not self.in_flight:
                    self.answered.set()

    def fail_in_flight(self, reason: str) -> None:
        for rid in self.in_flight.values():
            self._to_stdout(_error(rid, INTERNAL_ERROR, f"the remote agent is gone: {reason}"))
        self.in_flight.clear()


async def relay(
    url: str,
    *,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    ssl: _ssl.SSLContext | None = None,
    max_message_size: int = _connection.DEFAULT_MAX_LINE_SIZE,
    open_timeout: float = 10.0,
    close_timeout: float = _connection.DEFAULT_CLOSE_TIMEOUT,
    streams: tuple[_connection.Reader, _connection.Writer] | None = None,
    on_ready: Callable[[asyncio.Event], None] | None = None,
) -> None:
    """Relay stdin/stdout (or ``streams``) to the agent at ``url`` until one side ends.

    Returns when the input ended or ``on_ready``'s event was set (a signal); raises
    :class:`RelayError` when the server could not be reached or went away first.
    """
    profile, url = _url(url)
    extra = dict(headers or {})
    if token is not None:
        extra["Authorization"] = f"Bearer {token}"
    if streams is None:
        stdin: Any = sys.stdin.buffer
        if _is_null(stdin):  # /dev/null: the event loop cannot watch it; an ended pipe reads the same
            read_end, write_end = os.pipe()
            os.close(write_end)
            stdin = os.fdopen(read_end, "rb")
        streams = await _connection.pipe_streams(stdin, sys.stdout.buffer)
    reader, writer = streams
    local = _connection.StdioTransport(reader, writer, max_message_size)
    stop = asyncio.Event()
    if on_ready is not None:
        on_ready(stop)
    remote: Any = (_websocket if profile == "ws" else _http)(url, extra, ssl, max_message_size, open_timeout)
    try:
        async with remote as (transport, _):
            pump = _Relay(local, transport, url)
            up = asyncio.ensure_future(pump.up())
            down = asyncio.ensure_future(pump.down())
            stopped = asyncio.ensure_future(stop.wait())
            try:
                await asyncio.wait({up, down, stopped}, return_when=asyncio.FIRST_COMPLETED)
                gone = False
                if stopped.done():
                    pass
                elif up.done() and up.result():  # stdin ended: what is in flight gets close_timeout to be answered
                    if pump.in_flight:
                        answered = asyncio.ensure_future(pump.answered.wait())
                        await asyncio.wait(
                            {answered, down, stopped}, timeout=close_timeout, return_when=asyncio.FIRST_COMPLETED
                        )
                        answered.cancel()
                        gone = down.done() and bool(pump.in_flight) and not stopped.done()
                else:  # the server's side ended, or sending to it failed
                    gone = True
                if gone:
                    reason = transport.reason or "the server closed the connection"
                    pump.fail_in_flight(reason)
                    raise RelayError(reason if url in reason else f"{url}: {reason}")
            finally:
                for task in (up, down, stopped):
                    task.cancel()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(transport.close(), close_timeout)
    except _connection.ConnectionClosed as exc:  # the WebSocket could not be opened
        raise RelayError(str(exc)) from None
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(local.close(), close_timeout)


def _is_null(stream: Any) -> bool:
    """Whether ``stream`` is a character device that is no terminal (``/dev/null``)."""
    try:
        fd = stream.fileno()
        return stat.S_ISCHR(os.fstat(fd).st_mode) and not os.isatty(fd)
    except (OSError, ValueError, AttributeError):
        return False


def install_signals(stop: asyncio.Event) -> None:
    """SIGTERM, SIGHUP and SIGINT set ``stop`` (where the loop can catch them)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, AttributeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
