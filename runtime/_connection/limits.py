"""The connection's limits: their defaults, the logging of what a peer causes, and the cheap looks at oversized input.

Everything here works on bytes and counts, never on a parsed message: how
many entries a batch has (counted, not kept), what an oversized message was
(from its first and last bytes), and how often a peer's mischief is logged.

Hand-written: the source is runtime/_connection/limits.py, which the
generator copies into the package unchanged.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time
from typing import Any

from .stdio import DEFAULT_MAX_LINE_SIZE
from .transport import Oversized

__all__ = [
    "DEFAULT_CLOSE_TIMEOUT",
    "DEFAULT_MAX_BATCH",
    "DEFAULT_MAX_IN_FLIGHT",
    "DEFAULT_MAX_LINE_SIZE",
    "DEFAULT_MAX_QUEUED",
    "HOLD_LIMIT",
    "LOG_BURST",
    "LOG_WINDOW",
    "OFF_LOOP_ABOVE",
    "WRITE_HIGH_WATER",
    "PeerLog",
    "batch_longer_than",
    "log",
    "sniff_oversized",
]

log = logging.getLogger("acp_types.connection")
log.addHandler(logging.NullHandler())  # a library does not write to stderr unless asked to

DEFAULT_MAX_IN_FLIGHT = 64
"""How many incoming requests a connection handles at once by default."""
DEFAULT_MAX_QUEUED = 256
"""How many notifications wait for the notification handler by default."""
DEFAULT_MAX_BATCH = 1024
"""The most entries a v2 batch may have by default."""
DEFAULT_CLOSE_TIMEOUT = 10.0
"""Seconds that running handlers, then the written answers, get at end of input by default."""
HOLD_LIMIT = 256 * 1024
"""Bytes of lines waiting for room (beyond ``max_in_flight`` / ``max_queued``) before reading pauses."""
WRITE_HIGH_WATER = 64 * 1024
"""Bytes the writer may hold unread by the peer before reading pauses and senders wait."""
OFF_LOOP_ABOVE = 1024 * 1024
"""Lines longer than this (bytes) are parsed in a worker thread."""
LOG_BURST = 10
"""Records of one kind of peer-caused event logged per :data:`LOG_WINDOW`."""
LOG_WINDOW = 60.0
"""Seconds over which :data:`LOG_BURST` counts."""


class PeerLog:
    """Logging of what a peer causes, at most ``LOG_BURST`` records per kind per ``LOG_WINDOW``.

    Past the burst a record is only counted; the count is logged when the
    kind's window ends (at its next record) or at :meth:`flush`.
    """

    def __init__(self) -> None:
        self._kinds: dict[str, list[Any]] = {}  # kind -> [window start, logged, suppressed, level]

    def __call__(self, kind: str, level: int, msg: str, *args: Any, exc_info: bool = False) -> None:
        now = time.monotonic()
        state = self._kinds.get(kind)
        if state is None or now - state[0] >= LOG_WINDOW:
            if state is not None:
                self._summarize(kind, state)
            state = self._kinds[kind] = [now, 0, 0, level]
        if state[1] < LOG_BURST:
            state[1] += 1
            log.log(level, msg, *args, exc_info=exc_info)
            if state[1] == LOG_BURST:
                log.log(level, "further %s are counted, not logged, for %.0f s", kind, LOG_WINDOW)
        else:
            state[2] += 1

    @staticmethod
    def _summarize(kind: str, state: list[Any]) -> None:
        if state[2]:
            log.log(state[3], "%d more %s were not logged", state[2], kind)
            state[2] = 0

    def flush(self) -> None:
        for kind, state in self._kinds.items():
            self._summarize(kind, state)


_SCALAR = re.compile(rb'\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*"|null)')
_ID_AT_END = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*"|null)\s*}\s*$')


def _top_level_members(head: bytes) -> dict[str, Any]:
    """The members of the object ``head`` begins, as far as ``head`` goes: name -> its scalar value or ``...``."""
    found: dict[str, Any] = {}
    depth, last, i, n = 0, 0, 0, len(head)
    while i < n:
        c = head[i]
        if c == 0x22:  # a string: find its closing quote
            j = i + 1
            while True:
                j = head.find(b'"', j)
                if j < 0:
                    return found
                k = j
                while head[k - 1] == 0x5C:  # a backslash
                    k -= 1
                if (j - k) % 2 == 0:
                    break
                j += 1
            if depth == 1 and last in (0x7B, 0x2C):  # after { or , at the top: a member name
                m = _SCALAR.match(head, j + 1)
                value: Any = ...
                if m is not None:
                    with contextlib.suppress(ValueError):
                        value = json.loads(m.group(1))
                with contextlib.suppress(UnicodeDecodeError):
                    found.setdefault(head[i + 1 : j].decode(), value)
            last = 0x22
            i = j + 1
            continue
        if c in (0x7B, 0x5B):
            depth += 1
        elif c in (0x7D, 0x5D):
            depth -= 1
        if c in (0x7B, 0x5B, 0x7D, 0x5D, 0x2C, 0x3A):
            last = c
        i += 1
    return found


def sniff_oversized(message: Oversized, is_pending: Any) -> tuple[Any, bool]:
    """What an oversized message was, from its first and last bytes: ``(id or ..., whether a response)``.

    A response has a top-level ``result`` or ``error`` member before any
    ``method``, or, with neither seen, no ``params`` and the id of a request
    still pending (``is_pending(id)``).
    """
    members = _top_level_members(message.head) if message.head.lstrip()[:1] == b"{" else {}
    rid = members.get("id", ...)
    if rid is ...:
        m = _ID_AT_END.search(message.tail)
        rid = json.loads(m.group(1)) if m is not None else ...
    is_response = "method" not in members and (
        "result" in members or "error" in members or ("params" not in members and rid is not ... and is_pending(rid))
    )
    return rid, is_response


_WS = re.compile(r"[ \t\n\r]*")
_raw_decode = json.JSONDecoder().raw_decode


def batch_longer_than(line: bytes, limit: int) -> int | None:
    """When ``line`` is an array of more than ``limit`` values, how many were counted (``limit + 1``).

    The entries are decoded one at a time and dropped, so counting costs the
    memory of one entry; text that is not a well-formed array is left to the parser.
    """
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    pos = _WS.match(text).end() + 1  # type: ignore[union-attr]
    count = 0
    while True:
        try:
            _, pos = _raw_decode(text, _WS.match(text, pos).end())  # type: ignore[union-attr]
        except ValueError:
            return None
        count += 1
        if count > limit:
            return count
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if text[pos : pos + 1] != ",":
            return None
        pos += 1
