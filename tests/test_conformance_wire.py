"""The runtime's newline framing as the conformance kit reads with it, each rule at its edge.

The kit reads the program under test with ``_connection.stdio.StdioTransport``
told ``oversized_at_limit``: a line over the limit is handed over as an
:class:`Oversized` as soon as it passes the limit (so a line that never ends is
still reported), the rest of it is skipped, and the next line is read as usual.
The connection's default (the :class:`Oversized` where the line ends, its tail
then the line's last bytes) stays as it was. In memory: no processes here.
"""

from __future__ import annotations

import asyncio

import pytest

from acp_types._connection.stdio import Lines, StdioTransport
from acp_types._connection.transport import TAIL_SIZE, Oversized

LIMIT = 100


def feed(lines: Lines, *chunks: bytes) -> list[list[bytes | Oversized]]:
    return [lines.feed(chunk) for chunk in chunks]


def shape(items: list[bytes | Oversized]) -> list[object]:
    return [("oversized", len(i.head)) if isinstance(i, Oversized) else i for i in items]


@pytest.mark.parametrize("at_limit", [False, True])
def test_a_line_of_exactly_the_limit_passes_one_byte_more_is_skipped_and_reported(at_limit: bool) -> None:
    lines = Lines(LIMIT, at_limit=at_limit)
    exact, over = b"a" * LIMIT, b"b" * (LIMIT + 1)
    out = [*lines.feed(exact + b"\n" + over + b"\n" + b"next\n"), *lines.end()]
    assert shape(out) == [exact, ("oversized", LIMIT + 1), b"next"]
    # the same lines arriving a byte at a time
    lines = Lines(LIMIT, at_limit=at_limit)
    out = [item for byte in exact + b"\n" + over + b"\nnext\n" for item in lines.feed(bytes([byte]))]
    assert shape(out) == [exact, ("oversized", LIMIT + 1), b"next"]
    assert lines.end() == []


def test_at_limit_the_oversized_line_is_handed_over_before_its_end() -> None:
    lines = Lines(LIMIT, at_limit=True)
    first, second, third = feed(lines, b"x" * LIMIT, b"x", b"y" * 5000 + b"\nafter\n")
    assert first == []  # exactly the limit, not yet ended: it may still pass
    assert len(second) == 1 and isinstance(second[0], Oversized)
    assert second[0].head == b"x" * (LIMIT + 1) and second[0].limit == LIMIT
    assert third == [b"after"]  # the rest of the long line skipped, told once, and reading goes on
    assert lines.end() == []


def test_by_default_the_oversized_line_comes_at_its_end_with_its_last_bytes() -> None:
    lines = Lines(LIMIT)
    first, second = feed(lines, b"x" * (LIMIT + 1), b"y" * 5000 + b"z\nafter\n")
    assert first == []
    assert len(second) == 2 and isinstance(second[0], Oversized) and second[1] == b"after"
    assert second[0].tail == (b"y" * 5000 + b"z")[-TAIL_SIZE:]


@pytest.mark.parametrize("at_limit", [False, True])
def test_a_line_that_never_ends_is_reported_once(at_limit: bool) -> None:
    lines = Lines(LIMIT, at_limit=at_limit)
    told = [item for _ in range(50) for item in lines.feed(b"x" * 1000)]
    told += lines.end()
    assert len(told) == 1 and isinstance(told[0], Oversized)
    assert lines.parts == []  # nothing of it held


def test_the_transport_passes_the_option_and_reads_on_after_the_skipped_line() -> None:
    async def go() -> list[object]:
        reader = asyncio.StreamReader()
        transport = StdioTransport(reader, _NoWriter(), LIMIT, oversized_at_limit=True)
        reader.feed_data(b"z" * (LIMIT + 1))  # no newline yet, and maybe never
        first = await asyncio.wait_for(transport.receive(), 5)
        reader.feed_data(b"zzz\n" + b"c" * LIMIT + b"\n")
        reader.feed_eof()
        rest = [await transport.receive(), await transport.receive()]
        return [first, *rest]

    out = asyncio.run(go())
    assert isinstance(out[0], Oversized) and out[0].limit == LIMIT
    assert out[1:] == [b"c" * LIMIT, None]


class _NoWriter:
    def write(self, data: bytes) -> None:
        raise AssertionError("nothing is written here")

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None
