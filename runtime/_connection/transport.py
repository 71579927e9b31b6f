"""What a connection needs of a transport: whole messages in, whole messages out.

A :class:`Transport` carries JSON-RPC messages, each one message or batch as
UTF-8 bytes with no framing: the transport frames them (a newline for stdio,
a text frame for WebSocket, a body or an SSE event for HTTP) and enforces the
size of a frame. A connection is built on one with
``AgentConnection.on_transport(transport, handler, ...)`` or
``ClientConnection.on_transport(...)``, and :func:`acp_types.connection.serve_transport`
runs an agent on one; ``AgentConnection(reader, writer, ...)`` is the same on
:class:`acp_types.connection.StdioTransport`.

The connection never calls two ``receive`` at once, nor ``receive`` after it
returned ``None``. ``send`` is called from the event loop only, never waits,
and may be called after ``close`` (it then drops the message).

Hand-written: the source is runtime/_connection/transport.py, which the
generator copies into the package unchanged.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["HEAD_SIZE", "TAIL_SIZE", "Oversized", "Transport"]

HEAD_SIZE = 4096
"""How much of an oversized message's beginning a transport keeps (:attr:`Oversized.head`)."""
TAIL_SIZE = 256
"""How much of an oversized message's end a transport keeps (:attr:`Oversized.tail`), where an ``"id"`` may be."""


class Oversized:
    """A message longer than the transport's limit, skipped as it came in and never held whole.

    ``head`` is its first :data:`HEAD_SIZE` bytes at most, ``tail`` its last
    :data:`TAIL_SIZE` at most (empty when the transport cannot see the end),
    ``limit`` the limit it broke. From these the connection tells a request
    (answered -32600, with its id when one is found) from a response (the
    request it answers fails with ``ResponseTooLarge``).
    """

    __slots__ = ("head", "limit", "tail")

    def __init__(self, head: bytes, tail: bytes, limit: int) -> None:
        self.head = head
        self.tail = tail
        self.limit = limit

    def __repr__(self) -> str:
        return f"Oversized(limit={self.limit}, head={self.head[:40]!r}...)"


class Transport(Protocol):
    """Messages to and from one peer (see the module documentation)."""

    async def receive(self) -> bytes | Oversized | None:
        """The next message: its bytes, an :class:`Oversized` one, or ``None`` at the end of input.

        A frame that is not valid as a frame (bad UTF-8 in a text frame...) is
        returned as its bytes all the same: the connection's parser answers it
        as JSON-RPC does (-32700). Reading that fails raises ``OSError`` (or
        ``ConnectionError``): the connection ends with that reason.
        """
        ...

    def send(self, message: bytes) -> None:
        """Queue ``message`` (one JSON-RPC message or batch, unframed) without waiting."""
        ...

    def buffered(self) -> int:
        """Bytes queued by :meth:`send` that the peer has not taken yet (the backpressure measure).

        While it is above ``WRITE_HIGH_WATER`` the connection stops reading and
        its senders wait in :meth:`drain`.
        """
        ...

    async def drain(self) -> None:
        """Wait until the queued bytes are going out again; ``ConnectionError`` once the peer is gone."""
        ...

    async def close(self) -> None:
        """Close the sending side (what was queued still goes) and wait until it is closed; idempotent.

        The connection bounds the wait by ``close_timeout``.
        """
        ...
