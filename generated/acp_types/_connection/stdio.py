"""The stdio transport: newline-delimited JSON over a byte reader and writer.

ACP's stdio transport frames each message as one line of UTF-8 JSON ending in
``\\n``. :class:`StdioTransport` reads lines from any reader with ``read(n)``
(``asyncio.StreamReader``, ``PipeReader``) and writes them to anything with
``write`` / ``drain`` / ``close`` (``asyncio.StreamWriter``, ``PipeWriter``).
A line longer than ``max_line_size`` is skipped as it streams in, never
buffered whole: :meth:`StdioTransport.receive` returns an
:class:`~acp_types.connection.Oversized` holding its first and last bytes.

Hand-written: the source is runtime/_connection/stdio.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Protocol

from .transport import HEAD_SIZE, TAIL_SIZE, Oversized

__all__ = ["DEFAULT_MAX_LINE_SIZE", "READ_CHUNK", "Reader", "StdioTransport", "Writer"]

DEFAULT_MAX_LINE_SIZE = 16 * 1024 * 1024
"""The longest line (in bytes, without its newline) a connection reads by default: 16 MiB."""
READ_CHUNK = 1 << 16
"""How many bytes one read asks for."""


class Reader(Protocol):
    """What a connection reads from: ``asyncio.StreamReader`` or anything with ``read(n)``."""

    async def read(self, n: int = -1) -> bytes: ...


class Writer(Protocol):
    """What a connection writes to: ``asyncio.StreamWriter`` or anything with ``write`` / ``drain`` / ``close``."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


class Lines:
    """Splits chunks into lines; a line over ``limit`` bytes becomes an :class:`Oversized`, never joined.

    The :class:`Oversized` comes where the line ends (its tail then holds the
    line's last bytes), or with ``at_limit`` as soon as the line passes the
    limit (its tail is what had come by then), so a reader hears of a line
    that may never end; the rest of the line is skipped either way.
    """

    def __init__(self, limit: int, *, at_limit: bool = False) -> None:
        self.limit = limit
        self.at_limit = at_limit
        self.parts: list[bytes] = []
        self.size = 0
        self.skip: Oversized | None = None
        self.told = False  # the skipped line's Oversized was returned already (``at_limit``)

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        out: list[bytes | Oversized] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            skip = self.skip
            if skip is not None:
                skip.tail = (skip.tail + piece)[-TAIL_SIZE:]
            elif end < 0:
                if piece:
                    self.size += len(piece)
                    self.parts.append(piece)
                    if self.size > self.limit:
                        self.skip = self._cut()
                        if self.at_limit:
                            out.append(self.skip)
                            self.told = True
            else:
                line = piece
                if self.parts:
                    self.parts.append(piece)
                    line = b"".join(self.parts)
                    self.parts.clear()
                    self.size = 0
                if len(line) <= self.limit:
                    out.append(line)
                else:
                    out.append(Oversized(line[:HEAD_SIZE], line[-TAIL_SIZE:], self.limit))
            if end < 0:
                return out
            if skip is not None:
                if not self.told:
                    out.append(skip)
                self.skip = None
                self.told = False
            start = end + 1

    def _cut(self) -> Oversized:
        head = bytearray()
        for part in self.parts:
            head += part[: HEAD_SIZE - len(head)]
            if len(head) >= HEAD_SIZE:
                break
        tail = self.parts[-1][-TAIL_SIZE:]
        self.parts.clear()
        self.size = 0
        return Oversized(bytes(head), tail, self.limit)

    def end(self) -> list[bytes | Oversized]:
        """What is left at end of input: an unfinished last line, if any."""
        if self.skip is not None:
            skip, told = self.skip, self.told
            self.skip, self.told = None, False
            return [] if told else [skip]
        line = b"".join(self.parts)
        self.parts.clear()
        return [line] if line else []


class StdioTransport:
    """Newline-delimited JSON messages over ``reader`` and ``writer`` (a :class:`Transport`).

    ``max_line_size`` bounds a line (without its newline); a longer one is
    returned as an :class:`Oversized`, where it ends, or with
    ``oversized_at_limit`` as soon as it passes the limit (see :class:`Lines`);
    either way reading goes on with the next line. An unfinished last line at end of
    input is returned as a message. The writer's buffer size is read from
    ``writer.transport`` when it has one; otherwise the bytes written since
    the last ``drain`` count as buffered.
    """

    def __init__(
        self,
        reader: Reader,
        writer: Writer,
        max_line_size: int = DEFAULT_MAX_LINE_SIZE,
        *,
        oversized_at_limit: bool = False,
    ) -> None:
        if max_line_size < 1:
            raise ValueError("max_line_size must be positive")
        self.reader = reader
        self.writer = writer
        self.max_line_size = max_line_size
        self._read = reader.read
        self._lines = Lines(max_line_size, at_limit=oversized_at_limit)
        self._ready: deque[bytes | Oversized] = deque()
        self._eof = False
        self._unflushed = 0
        transport = getattr(writer, "transport", None)
        # a StreamWriter's write is its transport's: skip a call
        self._write: Callable[[bytes], object] = (
            transport.write if type(writer) is asyncio.StreamWriter and transport is not None else writer.write
        )
        self._buffer_size: Callable[[], int] | None = getattr(transport, "get_write_buffer_size", None)
        if self._buffer_size is not None:  # asked after every message: the writer's own answer, with no call between
            self.buffered = self._buffer_size  # type: ignore[method-assign]

    async def receive(self) -> bytes | Oversized | None:
        ready = self._ready
        while not ready:
            if self._eof:
                return None
            chunk = await self._read(READ_CHUNK)
            if chunk:
                ready.extend(self._lines.feed(chunk))
            else:
                self._eof = True
                ready.extend(self._lines.end())
        return ready.popleft()

    def send(self, message: bytes) -> None:
        self._write(message + b"\n")
        self._unflushed += len(message) + 1

    def buffered(self) -> int:
        """The writer's buffer size when it tells it, else the bytes written since the last drain."""
        return self._unflushed

    async def drain(self) -> None:
        await self.writer.drain()
        self._unflushed = 0

    async def close(self) -> None:
        self.writer.close()
        wait_closed = getattr(self.writer, "wait_closed", None)
        if wait_closed is not None:
            await wait_closed()
