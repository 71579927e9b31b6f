"""The small queues and flags the remote server holds per connection, cheap when idle.

Hand-written: the source is runtime/remote/_queues.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
from typing import Generic, TypeVar

_T = TypeVar("_T")


class Fifo(Generic[_T]):
    """A first-in first-out queue on two lists: empty it costs two empty lists, where a ``deque`` holds
    a 64-slot block (about 760 bytes) from the start; a connection holds three, mostly empty."""

    __slots__ = ("_in", "_out")

    def __init__(self) -> None:
        self._in: list[_T] = []
        self._out: list[_T] = []  # reversed: its last item is the oldest

    def __len__(self) -> int:
        return len(self._in) + len(self._out)

    def append(self, item: _T) -> None:
        self._in.append(item)

    def popleft(self) -> _T:
        if not self._out:
            if not self._in:
                raise IndexError("pop from an empty Fifo")
            self._in.reverse()
            self._in, self._out = [], self._in
        return self._out.pop()


class Flag:
    """``asyncio.Event``'s API without its deque: a connection holds several, and idle ones cost nothing."""

    __slots__ = ("_set", "_waiters")

    def __init__(self) -> None:
        self._set = False
        self._waiters: list[asyncio.Future[None]] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        self._set = True
        waiters, self._waiters = self._waiters, None
        for waiter in waiters or ():
            if not waiter.done():
                waiter.set_result(None)

    def clear(self) -> None:
        self._set = False

    def future(self) -> asyncio.Future[None]:
        """A future done once the flag is set (a waiter for ``asyncio.wait`` that costs no task)."""
        waiter = asyncio.get_running_loop().create_future()
        if self._set:
            waiter.set_result(None)
            return waiter
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        return waiter

    async def wait(self) -> None:
        if self._set:
            return
        waiter = self.future()
        try:
            await waiter
        finally:
            if self._waiters is not None and waiter in self._waiters:
                self._waiters.remove(waiter)
