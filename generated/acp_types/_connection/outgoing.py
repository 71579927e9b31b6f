"""The one table of the requests a connection sent and has not settled.

Each entry holds the method (which the parser reads to type the answer's
result), the future the caller awaits, and whether the answer waits for the
notifications before it. The connection takes an entry out when it settles
the request (an answer, an error, a cancel, the end); the parser only reads.

Hand-written: the source is runtime/_connection/outgoing.py, which the
generator copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from acp_types._protocol import RequestId

__all__ = ["OutRequest", "Outgoing"]


class OutRequest:
    """One request sent: its future, its method, and whether its answer is ordered after notifications."""

    __slots__ = ("future", "method", "ordered")

    def __init__(self, future: asyncio.Future[Any], method: str, ordered: bool) -> None:
        self.future = future
        self.method = method
        self.ordered = ordered


class Outgoing(dict[RequestId, OutRequest]):
    """Request id -> :class:`OutRequest`, ids integers from 1.

    :attr:`pending` is what a version's ``parse_message`` takes as
    ``pending=``: it answers the method of a pending id and leaves the entry
    in place (it is the connection that settles it, with :meth:`take`).
    """

    def __init__(self) -> None:
        super().__init__()
        self._next_id = 1
        self.pending = _Pending(self)

    def add(self, method: str, ordered: bool) -> tuple[int, OutRequest]:
        """A fresh id and the entry recorded for it."""
        rid = self._next_id
        while rid in self:
            rid += 1
        self._next_id = rid + 1
        out = OutRequest(asyncio.get_running_loop().create_future(), method, ordered)
        self[rid] = out
        return rid, out

    def take(self, rid: Any) -> OutRequest | None:
        """Remove and return the entry of ``rid`` (``None`` when it is not pending)."""
        try:
            return self.pop(rid, None)
        except TypeError:  # not an id at all
            return None

    def discard(self, rid: RequestId, out: OutRequest) -> None:
        """Remove the entry of ``rid`` if it is still ``out``."""
        if self.get(rid) is out:
            del self[rid]

    def fail_all(self, error: Callable[[RequestId, OutRequest], BaseException]) -> None:
        """Remove every entry and fail its future with ``error(id, entry)``."""
        entries = list(self.items())
        self.clear()
        for rid, out in entries:
            if not out.future.done():
                out.future.set_exception(error(rid, out))


class _Pending:
    """The table as the parser reads it (the part of ``_jsonrpc.PendingRequests`` it uses), read-only."""

    __slots__ = ("_table",)

    def __init__(self, table: Outgoing) -> None:
        self._table = table

    def method_of(self, rid: Any) -> str | None:
        try:
            out = self._table.get(rid)
        except TypeError:
            return None
        return out.method if out is not None else None

    pop = method_of
    """The method of ``rid`` (as ``PendingRequests.pop``); the entry stays until the connection settles it."""

    def __len__(self) -> int:
        return len(self._table)
