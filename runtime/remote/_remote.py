"""One connection of the remote server, of either profile: the agent's transport and its flow rule.

The agent's connection runs on a :class:`ServerTransport`: what the peer sent comes in through
``feed`` (one whole message each), what the agent writes goes out by the profile's ``send``. Its
backpressure is the one rule of :meth:`Remote.full`: what a stream's pump has yet to send past
``WRITE_HIGH_WATER``, or everything kept past ``Limits.max_buffered_bytes``; a peer that reads none
of it for ``Limits.output_stall`` loses its connection.

Hand-written: the source is runtime/remote/_remote.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from .. import connection as _connection
from .._connection.transport import HEAD_SIZE, TAIL_SIZE
from ._queues import Fifo, Flag

if TYPE_CHECKING:
    from ._server import AcpAsgiApp

log = logging.getLogger("acp_types.remote")


class LimitBroken(Exception):
    """A peer went past a :class:`Limits` value."""


def id_key(rid: Any) -> tuple[str, Any] | None:
    """A request id as a key that keeps ``1`` and ``"1"`` (and ``True``) apart."""
    if isinstance(rid, str):
        return ("s", rid)
    if isinstance(rid, int) and not isinstance(rid, bool):
        return ("n", rid)
    if rid is None:
        return ("null", None)
    return None


def session_in(params: Any) -> str | None:
    if isinstance(params, dict):
        sid = params.get("sessionId")
        if isinstance(sid, str):
            return sid
    return None


class ServerTransport:
    """The agent's side of one remote connection (a ``connection.Transport``): what the peer sent comes
    in through :meth:`feed` (one whole message each, from a POST body or a text frame), what the
    agent sends goes out by the profile's :meth:`send`; the agent's connection waits in :meth:`drain`
    while its owner is :meth:`Remote.full`."""

    def __init__(self, owner: Remote) -> None:
        self._owner = owner
        self.max_line_size = owner.limits.max_message_size
        self.messages: Fifo[bytes | _connection.Oversized] = Fifo()
        self.size = 0
        self.eof = False
        self.ready = Flag()
        self.room = Flag()
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


class Remote:
    """One ACP connection, of either profile: the agent's connection on its transport, the flow rule, closing.

    A profile's subclass gives its transport (:meth:`make_transport`) and what it keeps of the agent's
    output (:meth:`finish_output` once the agent is done, :meth:`drop_output` on close).
    """

    def __init__(self, server: AcpAsgiApp) -> None:
        self.server = server
        self.limits = server.limits
        self.id = str(uuid.uuid4())
        self.transport = self.make_transport()
        self.buffered = 0  # bytes of the agent's output queued here, sent or not (bounded by max_buffered_bytes)
        self.unsent = 0  # of those, what a running pump (the WebSocket's, an SSE GET's) has yet to send
        self._progress = Flag()
        self.closed = False
        self.close_reason = "the connection is closed"
        self.ended = Flag()  # the agent's connection has finished
        self.stopped = Flag()  # ended or closed: nothing more will be written
        self.task: asyncio.Task[None] | None = None

    def make_transport(self) -> ServerTransport:
        raise NotImplementedError

    def finish_output(self) -> None:
        """The agent wrote its last message (what is queued is still sent)."""

    def drop_output(self) -> None:
        """The connection is closed: what is queued is dropped."""

    def idle_past(self, now: float) -> bool:
        """Whether the sweep of idle connections ends this one."""
        return False

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
        self.finish_output()
        self.progress()

    def check_id(self, label: str, value: str) -> None:
        if len(value) > self.limits.max_id_length:
            raise LimitBroken(f"{label} exceeds maxIdLength ({self.limits.max_id_length})")

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
        self.drop_output()
        self.progress()
        self.server.forget(self)
