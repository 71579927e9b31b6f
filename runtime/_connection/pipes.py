"""OS pipes, sockets, ttys and regular files as the byte reader and writer of the stdio transport.

:func:`pipe_streams` turns two file objects into a reader/writer pair
(:class:`PipeReader`, :class:`PipeWriter`, built on asyncio's public protocol
API only); :func:`stdio_streams` does it for this process's stdin and stdout.
A :class:`~acp_types.connection.StdioTransport` over the pair frames the
messages.

Hand-written: the source is runtime/_connection/pipes.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import deque
from typing import Any

from .stdio import READ_CHUNK as _READ_CHUNK
from .stdio import Reader, Writer

__all__ = ["PipeReader", "PipeWriter", "pipe_streams", "stdio_streams"]


class PipeReader(asyncio.Protocol):
    """A reader over a pipe or socket transport: ``read(n)`` from a buffer of its own.

    It is the transport's protocol (``loop.connect_read_pipe(lambda: reader,
    pipe)``). While it holds more than ``limit`` unread bytes the transport is
    paused, so a peer cannot make it buffer more. Built on asyncio's public
    protocol API only.
    """

    def __init__(self, limit: int = _READ_CHUNK) -> None:
        self._limit = limit
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._eof = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._transport: asyncio.BaseTransport | None = None
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        if not data:
            return
        self._chunks.append(bytes(data))
        self._size += len(data)
        self._wake()
        if self._size > self._limit and not self._paused and isinstance(self._transport, asyncio.ReadTransport):
            self._paused = True
            self._transport.pause_reading()

    def eof_received(self) -> bool | None:
        self._eof = True
        self._wake()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = True
        if exc is not None:
            self._error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes (any amount when ``n < 0``), waiting for some; ``b""`` at end of input."""
        while not self._chunks:
            if self._error is not None:
                raise self._error
            if self._eof:
                return b""
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        chunk = self._chunks.popleft()
        if 0 <= n < len(chunk):
            self._chunks.appendleft(chunk[n:])
            chunk = chunk[:n]
        self._size -= len(chunk)
        if self._paused and self._size <= self._limit and isinstance(self._transport, asyncio.ReadTransport):
            self._paused = False
            self._transport.resume_reading()
        return chunk

    async def readline(self) -> bytes:
        """The next line with its newline (unbounded: for trusted peers and tests; a connection never uses it)."""
        parts = []
        while True:
            chunk = await self.read()
            end = chunk.find(b"\n") + 1
            if not chunk or end:
                if end and end < len(chunk):
                    self._chunks.appendleft(chunk[end:])
                    self._size += len(chunk) - end
                parts.append(chunk[:end] if end else chunk)
                return b"".join(parts)
            parts.append(chunk)


class PipeWriter(asyncio.BaseProtocol):
    """A writer over a pipe or socket transport, with ``write`` / ``drain`` / ``close`` / ``wait_closed``.

    It is the transport's protocol (``loop.connect_write_pipe(lambda: writer,
    pipe)``): ``drain()`` waits while the transport says its buffer is full,
    and raises ``ConnectionResetError`` once the peer is gone.
    """

    transport: asyncio.WriteTransport | None = None

    def __init__(self) -> None:
        self._paused = False
        self._lost = False
        self._waiter: asyncio.Future[None] | None = None
        self._closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        self.transport = transport

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self.resume_writing()
        if not self._closed.done():
            self._closed.set_result(None)

    def write(self, data: bytes) -> None:
        if not self._lost and self.transport is not None:
            self.transport.write(data)

    async def drain(self) -> None:
        if self._paused and not self._lost:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        if self._lost:
            raise ConnectionResetError("the pipe is closed")

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._closed)


class _FileReader:
    """A reader of a regular file (asyncio's pipe transports refuse one): each read in a thread."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def read(self, n: int = -1) -> bytes:
        return await asyncio.to_thread(os.read, self._fd, n if n > 0 else _READ_CHUNK)


class _FileWriter:
    """A writer for a regular file, which asyncio's pipe transports refuse."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None


async def pipe_streams(read_pipe: Any, write_pipe: Any, limit: int = _READ_CHUNK) -> tuple[Reader, Writer]:
    """A reader/writer pair over two file objects: pipes, sockets, ttys or regular files.

    Over a pipe, socket or tty they are a :class:`PipeReader` and a
    :class:`PipeWriter`; a regular file is read in a thread and written directly.
    """
    loop = asyncio.get_running_loop()
    reader: Reader
    try:
        pipe_reader = PipeReader(limit)
        await loop.connect_read_pipe(lambda: pipe_reader, read_pipe)
        reader = pipe_reader
    except ValueError:
        reader = _FileReader(read_pipe.fileno())
    try:
        writer = PipeWriter()
        await loop.connect_write_pipe(lambda: writer, write_pipe)
    except ValueError:
        return reader, _FileWriter(write_pipe.fileno())
    return reader, writer


async def stdio_streams(limit: int = _READ_CHUNK) -> tuple[Reader, Writer]:
    """The process's own stdin and stdout as a reader/writer pair (see :func:`pipe_streams`)."""
    return await pipe_streams(sys.stdin.buffer, sys.stdout.buffer, limit)
