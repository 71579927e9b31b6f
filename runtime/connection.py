"""ACP connections: newline-delimited JSON-RPC over a reader/writer pair, on asyncio alone.

An agent serves clients of every version it lists; a client asks for its
preferred version and accepts the agent's answer when it is one of its own::

    from acp_types import connection, v1

    class Echo(v1.Agent):                      # a partial implementation is fine
        def __init__(self, conn: connection.AgentConnection) -> None:
            self.conn = conn
        async def initialize(self, params: v1.InitializeRequest) -> v1.InitializeResponse:
            return v1.InitializeResponse(protocol_version=1)

    asyncio.run(connection.serve_stdio(Echo, versions=("v1",)))

How incoming messages are handled:

- Every line goes through the settled version's ``parse_message``. Before
  ``initialize`` has settled it, the first version listed is used.
- A request or notification of method ``M`` calls ``handler.<name>(params)``
  where ``<name>`` is ``METHODS[M].handler``, one rule for every method of
  every version: the wire name without a leading ``$/``, every run of
  characters other than letters and digits turned into ``_``, then
  snake_case (``session/new`` -> ``session_new``, ``$/cancel_request`` ->
  ``cancel_request``), which is also the name of the stub in ``Agent`` /
  ``Client``. ``params`` is the method's params model.
- A request's handler runs in a task of its own (which ``$/cancel_request``
  cancels), so a slow one does not hold up the rest; on Python 3.12+ the
  task starts eagerly (a handler that answers without waiting is answered
  before the next line is read). Notifications are handled one at a time,
  in the order they arrived. A response to a request you sent waits until
  the notifications that came before it have been handled (so a client has
  seen every streamed update before ``session/prompt`` returns), unless the
  request was sent from a notification handler.
- A handler answers with its result model (a ``dict`` is validated as the
  result type; ``None`` is allowed only where ``{}`` is a valid result), or
  raises :class:`RequestError` with a code from the version's error table
  (``v1.RESOURCE_NOT_FOUND``...). A method the handler does not have, or one
  whose stub it inherits, is answered with -32601. Any other exception, and
  a result or error ``data`` that is not JSON (``NaN``, a set, bytes, a
  datetime...), is logged and answered with -32603 and no traceback: every
  request gets exactly one answer, and nothing but JSON is written.
- Extension methods (``_``-prefixed) go to ``handler.ext_method(method,
  params)`` (requests) and ``handler.ext_notification(method, params)``
  (notifications); without them a request gets -32601 and a notification is
  dropped.
- ``$/cancel_request`` is handled by the connection: the handler task of that
  request is cancelled and the request answered with -32800.
- A malformed line gets the answer JSON-RPC gives it (-32700 with ``id:
  null``, -32600, -32601, -32602), except that a broken notification or
  response is never answered (it is logged, and a response to a pending
  request fails that request). Nothing a peer sends stops the loop.

Limits, and what a peer sees at each (the lower-case ones are keyword
arguments of the connections, :func:`serve`, :func:`serve_stdio` and
:func:`spawn_agent`; the others are constants of this module):

- ``max_line_size`` (:data:`DEFAULT_MAX_LINE_SIZE`, 16 MiB): a longer line is
  skipped as it streams in, never buffered whole. Only its first 4 KiB and
  last bytes are looked at: a request is answered -32600 (with its id when
  the id is in those bytes, else ``id: null``); a response (a top-level
  ``result`` or ``error`` member before any ``method``) is never answered,
  and the pending request it answers fails with :class:`ResponseTooLarge`
  (every pending request fails so when its id is in neither place, since
  none of them can be told apart from it).
- ``max_in_flight`` (:data:`DEFAULT_MAX_IN_FLIGHT`): requests whose handlers
  are running at once. Beyond it, requests wait, unstarted, in arrival order.
- ``max_queued`` (:data:`DEFAULT_MAX_QUEUED`): notifications waiting for the
  notification handler. Beyond it, notifications wait unqueued, in order.
- While requests or notifications wait so, reading goes on (answers to the
  requests this side sent are never held up behind them) until the waiting
  lines hold :data:`HOLD_LIMIT` bytes; then reading pauses until there is
  room. Reading also pauses while the writer holds more than
  :data:`WRITE_HIGH_WATER` bytes the peer has not read, whoever wrote them (an
  answer, or a handler's request or notification, which also waits for the
  writer then). A peer that sends without reading is simply not read from.
- ``max_batch`` (:data:`DEFAULT_MAX_BATCH`): a v2 batch of more entries is
  answered with one -32600 (``id: null``) and not handled; the entries are
  counted, not kept, so it costs no more memory than one entry.
- A line longer than :data:`OFF_LOOP_ABOVE` bytes is parsed in a worker
  thread (``asyncio.to_thread``), so other sessions get turns meanwhile
  (as far as the parser's steps release the interpreter).
- ``close_timeout`` (:data:`DEFAULT_CLOSE_TIMEOUT`): at end of input, requests
  still running (and waiting ones, and queued notifications) get this long to
  finish, and are answered, since a peer that half-closed its side may still
  read; then the rest are cancelled (answered -32800), and the written answers
  get up to as long again to reach the peer before the writer closes (also
  after :meth:`Connection.close`).
  Requests this side sent fail at once with :class:`ConnectionClosed`.
- Logging (logger ``acp_types.connection``, with a ``NullHandler``, so nothing
  reaches stderr unless the application configures logging): what a peer
  causes (dropped lines, failed handlers) is logged at most
  :data:`LOG_BURST` times per kind every :data:`LOG_WINDOW` seconds; the rest
  are counted, and the count is logged when the window ends or the
  connection closes.

Reading: any reader with ``read(n)`` works (``asyncio.StreamReader``, a
:class:`PipeReader`, what :func:`pipe_streams`, :func:`stdio_streams` and
:func:`spawn_agent` make). Writing: anything with ``write``, ``drain`` and
``close``; its buffer size is read from ``writer.transport`` when it has one.

Outgoing: :meth:`Connection.request` and :meth:`Connection.notify` (and the
typed ``AgentPeer`` / ``ClientPeer`` of each version module, one method per
method of the peer's side) check the params before anything is written: a
model of the method's params type is sent as is (its constructor validated
it; explicit nulls included), a ``dict`` is validated first, anything else is
a ``TypeError``. Ids are integers from 1. In strict mode
(``strict_capabilities=True``) a client refuses, before sending, a method
gated by a capability the agent did not advertise, with
:class:`CapabilityNotAdvertised`.

Cancelling the task that awaits a request stops the wait (the caller gets
``CancelledError``; a late answer is dropped). In v2 the peer is also sent
``$/cancel_request`` for it. v1 advertises no support for that notification
(no capability gates it, and agents answer it with -32601), so in v1 nothing
is sent: the peer finishes the request, and ends work by its own methods
(``session/cancel`` for a prompt).

The connection ends at end of input, when the peer exits or on
:meth:`Connection.close` (which cancels running handlers); every request
still waiting for its answer then fails with :class:`ConnectionClosed`.
:func:`spawn_agent` stops the agent's whole process group on leaving.

Hand-written: the source is runtime/connection.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import inspect
import json
import logging
import os
import re
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, cast, overload

from pydantic import BaseModel, ValidationError
from typing_extensions import Self, TypeVar

from acp_types import VERSIONS as _PACKAGE_VERSIONS
from acp_types._protocol import RequestId

from ._errors import MethodNotImplemented, RequestError, not_implemented
from ._jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    Batch,
    ErrorResponse,
    InvalidResult,
    MessageError,
    Notification,
    PendingRequests,
    Request,
    Response,
)
from ._outbound import InvalidOutbound, check_result
from ._runtime import MethodSpec, is_extension, to_wire, type_name, wire_json

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager
    from typing import TypedDict

    from typing_extensions import Unpack

    from acp_types import v1, v2

    class _Options(TypedDict, total=False):
        """The keyword options of a connection (see :class:`Connection`)."""

        max_line_size: int
        strict_capabilities: bool
        max_in_flight: int
        max_queued: int
        max_batch: int
        close_timeout: float

    class _SpawnOptions(_Options, total=False):
        env: Mapping[str, str] | None
        cwd: str | None
        stderr: int | None
        exit_timeout: float


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
    "VERSIONS",
    "WRITE_HIGH_WATER",
    "AgentConnection",
    "AgentProcess",
    "CapabilityNotAdvertised",
    "ClientConnection",
    "Connection",
    "ConnectionClosed",
    "MethodNotImplemented",
    "PipeReader",
    "PipeWriter",
    "RequestError",
    "ResponseTooLarge",
    "UnsupportedVersion",
    "not_implemented",
    "pipe_streams",
    "serve",
    "serve_stdio",
    "spawn_agent",
    "stdio_streams",
]

log = logging.getLogger("acp_types.connection")
log.addHandler(logging.NullHandler())  # a library does not write to stderr unless asked to

DEFAULT_MAX_LINE_SIZE = 16 * 1024 * 1024
"""The longest line (in bytes, without its newline) a connection reads by default: 16 MiB."""
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

VERSIONS: tuple[str, ...] = tuple(_PACKAGE_VERSIONS)
"""The versions this package speaks, oldest first (``acp_types.VERSIONS``)."""

REQUEST_CANCELLED = -32800
CANCEL_REQUEST = "$/cancel_request"
_READ_CHUNK = 1 << 16
_HEAD = 4096  # what is kept of an oversized line's beginning, to tell what it was
_TAIL = 256  # and of its end, where an "id" member may be


class ConnectionClosed(ConnectionError):
    """The connection ended (end of input, the peer exited, or ``close()``) before the answer came."""


class ResponseTooLarge(ConnectionError):
    """The peer answered with a line longer than ``max_line_size``: it was skipped unread."""

    def __init__(self, method: str, rid: RequestId, limit: int) -> None:
        super().__init__(f"the answer to {method!r} (request {rid!r}) was longer than {limit} bytes and was skipped")
        self.method = method
        self.id = rid
        self.limit = limit


class CapabilityNotAdvertised(PermissionError):
    """Strict mode: the peer did not advertise the capability that gates ``method``."""

    def __init__(self, method: str, capability: str) -> None:
        super().__init__(f"{method!r} needs the capability {capability!r}, which the agent did not advertise")
        self.method = method
        self.capability = capability


class UnsupportedVersion(ConnectionError):
    """The agent answered ``initialize`` with a protocol version this client does not speak."""

    def __init__(self, protocol_version: Any, versions: Sequence[str]) -> None:
        super().__init__(
            f"the agent answered protocolVersion {protocol_version!r}; this client speaks " + ", ".join(versions)
        )
        self.protocol_version = protocol_version


class Reader(Protocol):
    """What a connection reads from: ``asyncio.StreamReader`` or anything with ``read(n)``."""

    async def read(self, n: int = -1) -> bytes: ...


class Writer(Protocol):
    """What a connection writes to: ``asyncio.StreamWriter`` or anything with ``write`` / ``drain`` / ``close``."""

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...


Handler = Any
"""A handler object, or a class or function that takes the connection and returns one."""

# The types a connection's members have once the version is settled. A
# connection made for one version (``versions=("v1",)``) has that version's;
# one that speaks both has the union, which a checker makes you narrow
# (``isinstance``, or ``conn.as_version("v1")`` once ``initialize`` settled it).
# Covariant: a v1-only connection is one of "either version", so a handler
# written for ``AgentConnection`` takes it.
_PeerT = TypeVar("_PeerT", covariant=True, default=Any)
_InitT = TypeVar("_InitT", covariant=True, default=Any)
_HandlerT = TypeVar("_HandlerT", covariant=True, default=Any)
_ClientPeerT = TypeVar("_ClientPeerT", covariant=True, default="v1.ClientPeer | v2.ClientPeer")
_InitRequestT = TypeVar("_InitRequestT", covariant=True, default="v1.InitializeRequest | v2.InitializeRequest")
_AgentPeerT = TypeVar("_AgentPeerT", covariant=True, default="v1.AgentPeer | v2.AgentPeer")
_InitResponseT = TypeVar("_InitResponseT", covariant=True, default="v1.InitializeResponse | v2.InitializeResponse")
_AgentHandlerT = TypeVar("_AgentHandlerT", covariant=True, default=object)
_ClientHandlerT = TypeVar("_ClientHandlerT", covariant=True, default=object)
_H = TypeVar("_H")


class _Version:
    """What a connection needs of one version module, looked up once."""

    def __init__(self, name: str) -> None:
        if name not in VERSIONS:
            raise ValueError(f"unknown ACP version {name!r}; known: {', '.join(VERSIONS)}")
        mod = importlib.import_module(f"acp_types.{name}")
        self.name = name
        self.module = mod
        self.number: int = mod.PROTOCOL_VERSION
        self.methods: Mapping[str, MethodSpec] = mod.METHODS
        self.parse: Callable[..., Any] = importlib.import_module(f"acp_types.{name}.messages").parse_message
        self.method_allowed: Callable[[str, Any], bool] = mod.method_allowed
        # v1 gates $/cancel_request by nothing its peers advertise, and agents answer it -32601
        self.sends_cancel = name != "v1" and CANCEL_REQUEST in self.methods


def _implements(handler: object, name: str, interface: type | None) -> bool:
    """Whether ``handler`` has a method ``name`` of its own (not the stub of the version's interface)."""
    fn = getattr(type(handler), name, None) or getattr(handler, name, None)
    if fn is None:
        return False
    return interface is None or fn is not getattr(interface, name, None)


def _is_factory(handler: Handler) -> bool:
    return inspect.isclass(handler) or inspect.isfunction(handler) or inspect.ismethod(handler)


_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def _dumps(value: Any) -> bytes:
    """Strict JSON: ``ValueError`` for NaN or infinities, ``TypeError`` for anything not JSON."""
    return _encode(value).encode("utf-8")


@functools.lru_cache(maxsize=256)
def _method_json(method: str) -> bytes:
    """``,"method":<method>,"params":`` as it goes between a request's id and its params."""
    return b',"method":' + _dumps(method) + b',"params":'


def _id_json(rid: RequestId) -> bytes:
    return str(rid).encode() if type(rid) is int else _dumps(rid)


if sys.version_info >= (3, 12):

    def _start_task(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """A task for ``coro``, run now up to its first suspension (asyncio's eager start)."""
        return asyncio.Task(coro, loop=asyncio.get_running_loop(), eager_start=True)

else:

    def _start_task(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """A task for ``coro`` (before 3.12 there is no eager start: it runs from the next loop turn)."""
        return asyncio.get_running_loop().create_task(coro)


class _PeerLog:
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


class _Oversized:
    """A line longer than the limit: its first and last bytes only."""

    __slots__ = ("head", "tail")

    def __init__(self, head: bytes, tail: bytes) -> None:
        self.head = head
        self.tail = tail


class _Lines:
    """Splits chunks into lines; a line over ``limit`` bytes becomes an :class:`_Oversized`, never joined."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0
        self.skip: _Oversized | None = None

    def feed(self, chunk: bytes) -> list[bytes | _Oversized]:
        out: list[bytes | _Oversized] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            skip = self.skip
            if skip is not None:
                skip.tail = (skip.tail + piece)[-_TAIL:]
            elif end < 0:
                if piece:
                    self.size += len(piece)
                    self.parts.append(piece)
                    if self.size > self.limit:
                        self.skip = self._cut()
            else:
                line = piece
                if self.parts:
                    self.parts.append(piece)
                    line = b"".join(self.parts)
                    self.parts.clear()
                    self.size = 0
                out.append(line if len(line) <= self.limit else _Oversized(line[:_HEAD], line[-_TAIL:]))
            if end < 0:
                return out
            if skip is not None:
                out.append(skip)
                self.skip = None
            start = end + 1

    def _cut(self) -> _Oversized:
        head = bytearray()
        for part in self.parts:
            head += part[: _HEAD - len(head)]
            if len(head) >= _HEAD:
                break
        tail = self.parts[-1][-_TAIL:]
        self.parts.clear()
        self.size = 0
        return _Oversized(bytes(head), tail)

    def end(self) -> list[bytes | _Oversized]:
        """What is left at end of input: an unfinished last line, if any."""
        if self.skip is not None:
            return [self.skip]
        line = b"".join(self.parts)
        self.parts.clear()
        return [line] if line else []


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


_WS = re.compile(r"[ \t\n\r]*")
_raw_decode = json.JSONDecoder().raw_decode


def _batch_longer_than(line: bytes, limit: int) -> int | None:
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


class _OutRequest:
    __slots__ = ("future", "method", "ordered")

    def __init__(self, future: asyncio.Future[Any], method: str, ordered: bool) -> None:
        self.future = future
        self.method = method
        self.ordered = ordered


class Connection(Generic[_PeerT, _InitT, _HandlerT]):
    """One side of an ACP connection over a reader/writer pair.

    Use :class:`AgentConnection` (this process is the agent) or
    :class:`ClientConnection` (this process is the client). ``handler``
    handles what the peer sends (see the module documentation for the
    rule); a class or function is called with the connection to make it.
    ``versions`` are the versions this side speaks, preferred first. The
    limits are described in the module documentation. Start reading with
    ``async with conn:`` or :meth:`start`; the connection ends at end of
    input or :meth:`close`.

    Typed by what the settled version makes of it: ``peer`` (the peer's
    typed calls), ``peer_initialize`` (the peer's side of ``initialize``)
    and ``handler`` (what the factory made); see :class:`AgentConnection`
    and :class:`ClientConnection`.
    """

    side: Literal["agent", "client"]
    default_versions: tuple[str, ...]
    """The versions spoken when none are given, preferred first."""

    def __init__(
        self,
        reader: Reader,
        writer: Writer,
        handler: Handler = None,
        *,
        versions: Sequence[str] | None = None,
        max_line_size: int = DEFAULT_MAX_LINE_SIZE,
        strict_capabilities: bool = False,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        max_queued: int = DEFAULT_MAX_QUEUED,
        max_batch: int = DEFAULT_MAX_BATCH,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        if versions is None:
            versions = self.default_versions
        if not versions:
            raise ValueError("a connection needs at least one version")
        for name, value in (
            ("max_line_size", max_line_size),
            ("max_in_flight", max_in_flight),
            ("max_queued", max_queued),
            ("max_batch", max_batch),
        ):
            if value < 1:
                raise ValueError(f"{name} must be positive")
        self._versions = {name: _Version(name) for name in versions}
        self._version = self._versions[versions[0]]
        self.settled = False
        """Whether ``initialize`` has settled the version."""
        self._reader = reader
        self._writer = writer
        self.max_line_size = max_line_size
        self.max_in_flight = max_in_flight
        self.max_queued = max_queued
        self.max_batch = max_batch
        self.close_timeout = close_timeout
        self.strict_capabilities = strict_capabilities
        self.peer_initialize: _InitT | None = None
        """The peer's side of ``initialize``: the request (agent) or the response (client) model."""
        self._pending = PendingRequests()
        self._out: dict[RequestId, _OutRequest] = {}
        self._next_id = 1
        self._in: dict[RequestId, asyncio.Task[None]] = {}
        self._batches: set[asyncio.Task[None]] = set()
        # the notification handler's queue: notifications, ordered outcomes, None to stop
        self._queue: deque[Any] = deque()
        self._queued = 0  # notifications in _queue
        self._wakeup = asyncio.Event()
        # what waits for room, with its line's size: requests and batches; notifications and
        # the outcomes ordered after them
        self._held_requests: deque[tuple[Any, int]] = deque()
        self._held_notes: deque[tuple[Any, int]] = deque()
        self._held_size = 0
        self._room = asyncio.Event()  # set whenever a handler, batch or notification finishes
        self._busy = False  # a notification handler is running
        self._releasing: asyncio.Task[None] | None = None
        self._abort = False
        self._worker: asyncio.Task[None] | None = None
        self._reading: asyncio.Task[None] | None = None
        self._closed = asyncio.Event()
        self._closing = False
        self._writer_closed = False
        self._close_reason = "the connection is closed"
        self._drain_lock = asyncio.Lock()
        self._unflushed = 0
        self._peer_log = _PeerLog()
        transport = getattr(writer, "transport", None)
        # a StreamWriter's write is its transport's: skip a call
        self._raw_write: Callable[[bytes], object] = (
            transport.write if type(writer) is asyncio.StreamWriter and transport is not None else writer.write
        )
        self._buffer_size: Callable[[], int] | None = getattr(transport, "get_write_buffer_size", None)
        self.handler: _HandlerT = handler(self) if _is_factory(handler) else handler

    # -- state ------------------------------------------------------------

    @property
    def version(self) -> str:
        """The version in use: the settled one, or before ``initialize`` the first one listed."""
        return self._version.name

    @property
    def protocol_version(self) -> int:
        """The ``protocolVersion`` number of :attr:`version`."""
        return self._version.number

    @property
    def versions(self) -> tuple[str, ...]:
        return tuple(self._versions)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    @property
    def peer(self) -> _PeerT:
        """The typed calls to the peer in the current version: ``AgentPeer`` or ``ClientPeer``."""
        peer_module = importlib.import_module(f"acp_types.{self.version}.peer")
        cls = peer_module.ClientPeer if self.side == "agent" else peer_module.AgentPeer
        return cast(_PeerT, cls(self))

    def _as_version(self, version: str) -> Any:
        if version not in self._versions:
            raise ValueError(f"this connection does not speak ACP {version} (it speaks {', '.join(self._versions)})")
        if self.version != version:
            raise ValueError(f"the connection speaks ACP {self.version}, not {version}")
        return self

    def _settle(self, version: _Version) -> None:
        self._version = version
        self.settled = True

    # -- life cycle -------------------------------------------------------

    def start(self) -> None:
        """Start reading (idempotent)."""
        if self._reading is None:
            self._worker = asyncio.ensure_future(self._work())
            self._reading = asyncio.ensure_future(self._read_loop())

    async def __aenter__(self) -> Self:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def wait_closed(self) -> None:
        """Wait until the connection has ended (end of input or :meth:`close`)."""
        self.start()
        await self._closed.wait()

    async def close(self) -> None:
        """End the connection: stop reading, fail pending requests, cancel running handlers, close the writer.

        What was already written still gets up to ``close_timeout`` seconds to reach the peer.
        """
        self._abort = True
        self._room.set()  # an end of input waiting for handlers stops waiting
        if self._reading is not None and not self._reading.done():
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reading
        await self._finish("the connection was closed")

    def _idle(self) -> bool:
        return not (self._in or self._batches or self._held_requests or self._held_notes or self._queue or self._busy)

    async def _finish(self, reason: str) -> None:
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        self._close_reason = reason
        self._fail_pending(reason)  # the peer sends nothing more: nothing will answer them
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.close_timeout
        while not self._abort and not self._idle() and loop.time() < deadline:
            self._room.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._room.wait(), deadline - loop.time())
        self._held_requests.clear()
        self._queue.append(None)
        self._wakeup.set()
        worker = self._worker
        if worker is not None and asyncio.current_task() is not worker:
            if not worker.done():
                worker.cancel()
            with contextlib.suppress(BaseException):
                await worker
        # answers that came, ordered behind notifications no one will handle now, still settle
        for item in (*self._queue, *(item for item, _ in self._held_notes)):
            if isinstance(item, tuple):
                self._complete(*item)
        self._queue.clear()
        self._held_notes.clear()
        self._held_size = 0
        self._fail_pending(reason)
        tasks = [*self._in.values(), *self._batches]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        self._peer_log.flush()
        deadline = loop.time() + self.close_timeout  # what was written gets its own time to go out
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._drain(), self.close_timeout)
        self._writer_closed = True
        with contextlib.suppress(Exception):
            self._writer.close()
            wait_closed = getattr(self._writer, "wait_closed", None)
            if wait_closed is not None:
                await asyncio.wait_for(wait_closed(), max(deadline - loop.time(), 0.01))
        self._closed.set()

    def _fail_pending(self, reason: str) -> None:
        for rid, out in list(self._out.items()):
            del self._out[rid]
            self._pending.pop(rid)
            if not out.future.done():
                out.future.set_exception(
                    ConnectionClosed(f"{reason} before {out.method!r} (request {rid!r}) was answered")
                )

    # -- writing ----------------------------------------------------------

    def _write(self, data: bytes) -> bool:
        """Write ``data`` now, without waiting; ``False`` once the writer is closed."""
        if self._writer_closed:
            return False
        self._raw_write(data)
        self._unflushed += len(data)
        return True

    def _writer_full(self) -> bool:
        """Whether the peer has more than ``WRITE_HIGH_WATER`` bytes of ours to read: the one backpressure rule."""
        size = self._buffer_size
        return (size() if size is not None else self._unflushed) > WRITE_HIGH_WATER

    async def _drain(self) -> None:
        async with self._drain_lock:
            try:
                await self._writer.drain()
            except (ConnectionError, OSError) as exc:
                raise ConnectionClosed(f"the peer is gone: {exc}") from exc
            self._unflushed = 0

    async def _send(self, data: bytes) -> None:
        if not self._write(data):
            raise ConnectionClosed(self._close_reason)
        if self._writer_full():
            await self._drain()

    def _reply(self, data: bytes, collect: list[bytes] | None) -> None:
        """Send one answer, or add it to the answers of the batch being handled."""
        if collect is not None:
            collect.append(data)
        elif not self._write(data + b"\n"):
            log.debug("not sent, the connection is closed: %.200r", data)

    def _error_json(self, rid: RequestId, code: int, message: str, data: Any = None) -> bytes:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        try:
            return _dumps({"jsonrpc": "2.0", "id": rid, "error": error})
        except (TypeError, ValueError) as exc:
            self._peer_log(
                "unencodable answers",
                logging.ERROR,
                "the error answering request %r is not JSON (%s); answered -32603",
                rid,
                exc,
            )
            return _dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": INTERNAL_ERROR, "message": "Internal error"}})

    def _answer_error(self, rid: RequestId, code: int, message: str, collect: list[bytes] | None = None) -> None:
        self._reply(self._error_json(rid, code, message), collect)

    def _spec(self, method: str, kind: str) -> MethodSpec | None:
        spec = self._version.methods.get(method)
        if spec is None:
            if not is_extension(method):
                raise ValueError(f"{method!r} is not a method of ACP {self.version}")
            return None
        if spec.kind != kind:
            verb = "request" if kind == "notification" else "notify"
            raise ValueError(f"{method!r} is a {spec.kind}; use {verb}() for it")
        if spec.side == self.side:
            raise ValueError(f"{spec.name!r} is handled by the {spec.side}; the {self.side} does not send it")
        # method_allowed answers from the initialize message of the side that
        # handles the method, which is the peer's: the one recorded here.
        if self.strict_capabilities and spec.capability is not None:
            init = self.peer_initialize
            if init is None or not self._version.method_allowed(spec.name, init):
                raise CapabilityNotAdvertised(spec.name, ".".join(spec.capability))
        return spec

    @staticmethod
    def _params_body(spec: MethodSpec | None, method: str, params: Any) -> bytes:
        expected = spec.params if spec is not None else None
        if isinstance(params, BaseModel):
            if spec is None or (isinstance(expected, type) and isinstance(params, expected)):
                return wire_json(params)
            if isinstance(expected, type):
                raise TypeError(f"the params of {method!r} are {type_name(expected)}, not {type_name(type(params))}")
            params = to_wire(params)
        if spec is None:
            return _dumps(params)
        if not isinstance(params, Mapping):
            raise TypeError(f"the params of {method!r} are a model or a dict, not {type(params).__name__}")
        return wire_json(spec.validate_params(dict(params)))

    async def notify(self, method: str, params: Any) -> None:
        """Send a notification; ``params`` is checked first (see the module documentation)."""
        body = self._params_body(self._spec(method, "notification"), method, params)
        await self._send(b'{"jsonrpc":"2.0","method":' + _dumps(method) + b',"params":' + body + b"}\n")

    async def request(self, method: str, params: Any) -> Any:
        """Send a request and return its result model; an error answer raises :class:`RequestError`.

        The connection ending first raises :class:`ConnectionClosed`; an
        answer longer than ``max_line_size`` raises :class:`ResponseTooLarge`.
        Cancelling the awaiting task: see the module documentation.
        """
        body = self._params_body(self._spec(method, "request"), method, params)
        return await self._request(method, body)

    async def _request(self, method: str, body: bytes) -> Any:
        if self._closing:
            raise ConnectionClosed(self._close_reason)
        self.start()
        rid = self._next_id
        while rid in self._out:
            rid += 1
        self._next_id = rid + 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        ordered = asyncio.current_task() is not self._worker
        self._out[rid] = _OutRequest(future, method, ordered)
        self._pending.add(rid, method)
        try:
            await self._send(b'{"jsonrpc":"2.0","id":' + str(rid).encode() + _method_json(method) + body + b"}\n")
            return await future
        except asyncio.CancelledError:
            if self._out.pop(rid, None) is not None:
                self._pending.pop(rid)
                if not self._closing and self._version.sends_cancel:
                    self._write(
                        b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":'
                        + str(rid).encode()
                        + b"}}\n"
                    )
            raise
        finally:
            out = self._out.get(rid)
            if out is not None and out.future is future:
                del self._out[rid]
                self._pending.pop(rid)

    # -- reading ----------------------------------------------------------

    async def _read_loop(self) -> None:
        reason = "the peer closed the connection (end of input)"
        try:
            read = self._reader.read
            lines = _Lines(self.max_line_size)
            while True:
                chunk = await read(_READ_CHUNK)
                for line in lines.feed(chunk) if chunk else lines.end():
                    if type(line) is bytes and len(line) <= OFF_LOOP_ABOVE:
                        self._route(self._parse_line(line), len(line))
                    else:
                        await self._take(line)
                    if self._writer_full() or self._held_size > HOLD_LIMIT:
                        await self._wait_room()
                if not chunk:
                    break
        except asyncio.CancelledError:
            reason = "the connection was closed"
            raise
        except (ConnectionError, OSError) as exc:
            reason = f"reading failed: {exc}"
        except Exception:  # a bug of ours must not leave requests hanging
            log.exception("the read loop failed")
            reason = "the read loop failed"
        finally:
            if not self._closing:
                await asyncio.shield(self._finish(reason))

    async def _take(self, line: bytes | _Oversized) -> None:
        """Handle an oversized line, or a long one: parsed in a worker thread, so other sessions get turns."""
        if isinstance(line, _Oversized):
            self._oversized(line)
        else:
            # the parse touches only the pending-request table, whose operations are atomic
            self._route(await asyncio.to_thread(self._parse_line, line), len(line))

    async def _wait_room(self) -> None:
        """Wait while there is no room for more input (the limits in the module documentation)."""
        while True:
            if self._writer_full():
                await self._drain()
            elif self._held_size > HOLD_LIMIT:
                self._room.clear()
                await self._room.wait()
            else:
                return

    def _parse_line(self, line: bytes) -> Any:
        """The message of ``line``: a message, a batch, a :class:`MessageError` or ``None`` (a blank line)."""
        if not line or line.isspace():
            return None
        if line[:1] == b"[" or (line[:1].isspace() and line.lstrip()[:1] == b"["):
            count = _batch_longer_than(line, self.max_batch)
            if count is not None:
                return _TooLongBatch(count)
        try:
            return self._version.parse(line, pending=self._pending)
        except MessageError as exc:
            return exc

    def _route(self, msg: Any, size: int) -> None:
        if msg is None:
            return
        kind = type(msg)
        if kind is Response or kind is ErrorResponse:
            self._on_response(msg)
        elif isinstance(msg, MessageError):
            self._malformed(msg)
        elif kind is _TooLongBatch:
            self._answer_error(None, INVALID_REQUEST, f"a batch of more than {self.max_batch} entries is not handled")
        elif isinstance(msg, Notification):
            if msg.method == CANCEL_REQUEST:
                self._on_cancel(msg.params)
            elif self._held_notes or self._queued >= self.max_queued:
                self._hold(self._held_notes, msg, size)
            else:
                self._enqueue(msg)
        elif self._held_requests or len(self._in) >= self.max_in_flight:
            self._hold(self._held_requests, msg, size)
        else:
            self._start(msg)

    def _hold(self, held: deque[tuple[Any, int]], msg: Any, size: int) -> None:
        held.append((msg, size))
        self._held_size += size

    def _start(self, msg: Any) -> None:
        if isinstance(msg, Batch):
            self._batch(msg)
        else:
            self._on_request(msg)

    def _enqueue(self, item: Any) -> None:
        self._queue.append(item)
        if isinstance(item, Notification):
            self._queued += 1
        self._wakeup.set()

    def _release(self) -> None:
        """Start what waits for room, now that something finished (nothing new while the writer is full)."""
        held = self._held_requests
        while held and len(self._in) < self.max_in_flight and not self._closing:
            if self._writer_full():
                if self._releasing is None:
                    self._releasing = asyncio.ensure_future(self._release_after_drain())
                break
            msg, size = held.popleft()
            self._held_size -= size
            self._start(msg)
        held = self._held_notes
        while held and (self._queued < self.max_queued or not isinstance(held[0][0], Notification)):
            item, size = held.popleft()
            self._held_size -= size
            self._enqueue(item)
        self._room.set()

    async def _release_after_drain(self) -> None:
        try:
            await self._drain()
        except ConnectionClosed:
            return
        finally:
            self._releasing = None
        self._release()

    def _oversized(self, line: _Oversized) -> None:
        limit = self.max_line_size
        members = _top_level_members(line.head) if line.head.lstrip()[:1] == b"{" else {}
        rid = members.get("id", ...)
        if rid is ...:
            m = _ID_AT_END.search(line.tail)
            rid = json.loads(m.group(1)) if m is not None else ...
        is_response = "method" not in members and (
            "result" in members
            or "error" in members
            or ("params" not in members and rid is not ... and rid in self._out)
        )
        if not is_response:
            self._peer_log("oversized lines", logging.WARNING, "skipped a line longer than %d bytes", limit)
            self._answer_error(None if rid is ... else rid, INVALID_REQUEST, f"the line is longer than {limit} bytes")
            return
        self._peer_log(
            "oversized responses", logging.WARNING, "skipped a response longer than %d bytes (id %r)", limit, rid
        )
        failed = [rid] if rid is not ... else list(self._out)
        for one in failed:
            out = self._out.pop(one, None)
            if out is not None:
                self._pending.pop(one)
                self._resolve(out, ResponseTooLarge(out.method, one, limit))

    def _batch(self, batch: Batch) -> None:
        # Each entry is handled as if it came alone; the answers to its
        # requests go back together, as one array, once every one is known.
        answers: list[bytes] = []
        tasks: list[asyncio.Task[None]] = []
        for entry in batch.entries:
            if isinstance(entry, MessageError):
                self._malformed(entry, answers)
            elif isinstance(entry, Request):
                task = self._on_request(entry, answers)
                if task is not None:
                    tasks.append(task)
            elif type(entry) is Response or type(entry) is ErrorResponse:
                self._on_response(entry)
            else:
                self._route(entry, 0)
        if tasks:
            waiter = asyncio.ensure_future(self._send_batch(tasks, answers))
            self._batches.add(waiter)
            waiter.add_done_callback(self._batch_done)
        elif answers:
            self._reply(b"[" + b",".join(answers) + b"]", None)

    def _batch_done(self, task: asyncio.Task[None]) -> None:
        self._batches.discard(task)
        self._release()

    async def _send_batch(self, tasks: list[asyncio.Task[None]], answers: list[bytes]) -> None:
        await asyncio.gather(*tasks, return_exceptions=True)
        if answers:
            self._reply(b"[" + b",".join(answers) + b"]", None)

    def _malformed(self, exc: MessageError, collect: list[bytes] | None = None) -> None:
        kind = getattr(exc, "kind", None)
        if kind in ("response", "error"):
            out = self._out.pop(exc.id, None) if exc.id is not None else None
            if out is not None:
                self._pending.pop(exc.id)
                if isinstance(exc, InvalidResult) and out.method == "initialize":
                    self._resolve(out, self._initialize_other(exc))
                    return
                self._resolve(out, exc)
            else:
                self._peer_log("malformed responses", logging.WARNING, "dropped a malformed response: %s", exc.message)
            return
        if kind == "notification":
            self._peer_log(
                "malformed notifications", logging.WARNING, "dropped a malformed notification: %s", exc.message
            )
            return
        if kind == "request" and exc.method == "initialize" and exc.code == INVALID_PARAMS:
            chosen, reading = self._initialize_versions(exc.data)
            if reading is not None:
                try:
                    msg = reading.parse(exc.data)
                except MessageError as again:
                    exc = again
                else:
                    self._dispatch_initialize(msg, chosen, collect)
                    return
        self._answer_error(exc.id, exc.code, exc.message, collect=collect)

    # -- version negotiation ----------------------------------------------

    def _choose(self, requested: Any) -> _Version:
        """The agent's rule: the version asked for when spoken here, else the latest spoken here."""
        for version in self._versions.values():
            if type(requested) is int and version.number == requested:
                return version
        return max(self._versions.values(), key=lambda v: v.number)

    def _initialize_versions(self, data: Any) -> tuple[_Version, _Version | None]:
        """For a client's initialize that did not parse: the version to settle, and the one to read it in.

        It is read in the version it asks for when this package knows that
        version (even when this agent does not serve it: the agent then
        answers with its own version, and the client decides).
        """
        params = data.get("params") if isinstance(data, Mapping) else None
        requested = params.get("protocolVersion") if isinstance(params, Mapping) else None
        chosen = self._choose(requested)
        if self.side != "agent" or self.settled:
            return chosen, None
        for name in VERSIONS:
            version = self._versions.get(name) or _Version(name)
            if version.number == requested and version is not self._version:
                return chosen, version
        return chosen, None

    def _initialize_other(self, exc: InvalidResult) -> Any:
        """A client's initialize answered in another version than asked: parse it in that one."""
        data = exc.data if isinstance(exc.data, Mapping) else {}
        result = data.get("result")
        number = result.get("protocolVersion") if isinstance(result, Mapping) else None
        for version in self._versions.values():
            if version.number == number and version is not self._version:
                try:
                    return version, version.methods["initialize"].validate_result(result)
                except ValidationError:
                    break
        return exc

    def _client_initialized(self, result: Any) -> Any:
        number = getattr(result, "protocol_version", None)
        if number == self._version.number:
            return self._version, result
        for version in self._versions.values():
            if version.number == number:
                try:
                    return version, version.methods["initialize"].validate_result(result.to_wire())
                except ValidationError as exc:
                    return exc
        return UnsupportedVersion(number, list(self._versions))

    # -- dispatch ---------------------------------------------------------

    def _on_response(self, msg: Response | ErrorResponse) -> None:
        out = self._out.pop(msg.id, None)
        if out is None:
            self._peer_log(
                "responses to unknown ids", logging.WARNING, "dropped a response to unknown request id %r", msg.id
            )
        elif isinstance(msg, ErrorResponse):
            error = msg.error
            self._resolve(out, RequestError(error.code, error.message, error.data))
        elif out.method == "initialize":
            self._resolve(out, self._client_initialized(msg.result))
        else:
            self._resolve(out, (None, msg.result))

    def _resolve(self, out: _OutRequest, outcome: Any) -> None:
        # outcome: an exception, or (version to settle or None, result)
        if not out.ordered:
            self._complete(out, outcome)
        elif self._held_notes:
            self._hold(self._held_notes, (out, outcome), 0)
        elif self._queue or self._busy:
            self._enqueue((out, outcome))
        else:
            self._complete(out, outcome)

    def _complete(self, out: _OutRequest, outcome: Any) -> None:
        if out.future.done():
            return
        if isinstance(outcome, BaseException):
            out.future.set_exception(outcome)
            return
        version, result = outcome
        if version is not None:
            self._settle(version)
            self.peer_initialize = result
        out.future.set_result(result)

    async def _work(self) -> None:
        """Handle notifications one at a time, in arrival order (and ordered answers among them)."""
        queue = self._queue
        while True:
            if not queue:
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            item = queue.popleft()
            if item is None:
                return
            if isinstance(item, tuple):
                self._complete(*item)
                continue
            self._queued -= 1
            self._busy = True
            try:
                await self._on_notification(item)
            except asyncio.CancelledError:
                raise
            except Exception:
                self._peer_log(
                    "failed notification handlers",
                    logging.ERROR,
                    "the handler of notification %r failed",
                    item.method,
                    exc_info=True,
                )
            finally:
                self._busy = False
                self._release()

    async def _on_notification(self, msg: Notification) -> None:
        handler = self.handler
        if is_extension(msg.method):
            fn = getattr(handler, "ext_notification", None)
        else:
            fn = getattr(handler, self._version.methods[msg.method].handler, None)
        if fn is None:
            log.debug("no handler for notification %r", msg.method)
            return
        try:
            await (fn(msg.method, msg.params) if is_extension(msg.method) else fn(msg.params))
        except MethodNotImplemented:
            log.debug("no handler for notification %r", msg.method)

    def _on_cancel(self, params: Any) -> None:
        task = self._in.get(getattr(params, "request_id", None))
        if task is not None:
            task.cancel()

    def _on_request(self, msg: Request, collect: list[bytes] | None = None) -> asyncio.Task[None] | None:
        rid = msg.id
        if rid in self._in:
            self._peer_log("reused request ids", logging.WARNING, "a request reuses the id %r of a running one", rid)
            self._answer_error(
                rid, INVALID_REQUEST, f"request id {rid!r} is already in use by a running request", collect
            )
            return None
        if msg.method == "initialize" and self.side == "agent" and self.settled:
            self.peer_initialize = msg.params  # a repeated initialize: the latest one is the client's word
        if msg.method == "initialize" and self.side == "agent" and not self.settled:
            chosen = self._choose(getattr(msg.params, "protocol_version", None))
            if chosen is not self._version:
                try:
                    msg = chosen.parse(msg.to_wire())
                except MessageError as exc:
                    self._answer_error(rid, exc.code, exc.message, collect)
                    return None
            return self._dispatch_initialize(msg, chosen, collect)
        return self._start_request(msg, collect)

    def _dispatch_initialize(
        self, msg: Request, chosen: _Version, collect: list[bytes] | None = None
    ) -> asyncio.Task[None] | None:
        self._settle(chosen)
        self.peer_initialize = msg.params
        return self._start_request(msg, collect)

    def _start_request(self, msg: Request, collect: list[bytes] | None) -> asyncio.Task[None] | None:
        """Start the request's handler in a task of its own; ``None`` when it has been answered already (3.12+)."""
        rid = msg.id
        task = _start_task(self._run_request(msg, collect))
        if task.done():
            return None
        self._in[rid] = task
        task.add_done_callback(functools.partial(self._forget, rid, collect))
        return task

    def _forget(self, rid: RequestId, collect: list[bytes] | None, task: asyncio.Task[None]) -> None:
        if self._in.get(rid) is task:
            del self._in[rid]
        if task.cancelled():  # cancelled before its first step, so it could not answer itself
            self._reply(self._error_json(rid, REQUEST_CANCELLED, "the request was cancelled"), collect)
        self._release()

    async def _run_request(self, msg: Request, collect: list[bytes] | None = None) -> None:
        """Run the handler and answer: exactly one answer, whatever the handler does."""
        rid, method = msg.id, msg.method
        try:
            result = await self._call(msg)
            body = wire_json(result) if isinstance(result, BaseModel) else _dumps(result)
            data = b'{"jsonrpc":"2.0","id":' + _id_json(rid) + b',"result":' + body + b"}"
        except asyncio.CancelledError:
            data = self._error_json(rid, REQUEST_CANCELLED, "the request was cancelled")
        except RequestError as exc:
            data = self._error_json(rid, exc.code, exc.message, exc.data)
        except InvalidOutbound as exc:  # our handler's mistake: never sent changed, said, and answered as an error
            log.error("not sent: %s", exc)
            data = self._error_json(rid, INTERNAL_ERROR, f"Internal error: {exc}")
        except Exception:
            self._peer_log(
                "failed handlers", logging.ERROR, "the handler of %r (request %r) failed", method, rid, exc_info=True
            )
            data = self._error_json(rid, INTERNAL_ERROR, "Internal error")
        self._reply(data, collect)

    async def _call(self, msg: Request) -> Any:
        handler = self.handler
        if is_extension(msg.method):
            fn = getattr(handler, "ext_method", None)
            if fn is None:
                raise MethodNotImplemented(msg.method)
            return await fn(msg.method, msg.params)
        spec = self._version.methods[msg.method]
        fn = getattr(handler, spec.handler, None)
        if fn is None:
            raise MethodNotImplemented(msg.method)
        result = await fn(msg.params)
        expected = spec.result
        name = getattr(expected, "__name__", str(expected))
        if isinstance(expected, type) and isinstance(result, expected):
            check_result(msg.method, self.version, name, None, result)
            return result
        if result is None:
            result = {}
        elif isinstance(result, BaseModel):
            if isinstance(expected, type):
                raise TypeError(
                    f"the handler of {msg.method!r} returned {type_name(type(result))}, not {type_name(expected)}"
                )
            result = to_wire(result)
        try:
            model = spec.validate_result(result)
        except ValidationError as exc:
            raise InvalidOutbound(
                f"the result of {msg.method!r} is not a valid ACP {self.version} {name}: {exc}"
            ) from None
        check_result(msg.method, self.version, name, result, model)
        return model


class _TooLongBatch:
    """A batch line of more entries than ``max_batch``: answered, never parsed."""

    def __init__(self, count: int) -> None:
        self.count = count


class AgentConnection(Connection[_ClientPeerT, _InitRequestT, _AgentHandlerT]):
    """This process is the agent: ``handler`` implements the version's ``Agent`` methods.

    One agent serves a client of any version in ``versions`` (default: both):
    the client's ``initialize`` settles it, as the protocol says (the version
    asked for when spoken here, else the latest one spoken here). The
    handler reads :attr:`version` to know which models to answer with;
    :attr:`peer` is the typed ``ClientPeer`` of that version.

    For a type checker it is ``AgentConnection[ClientPeer, InitializeRequest,
    Handler]``: made with ``versions=("v1",)`` (or ``("v2",)``) it has that
    version's types; one that speaks both has their unions, and
    :meth:`as_version` narrows it once the version is settled. The handler's
    type is what the factory returns (or the object given).
    """

    side = "agent"
    default_versions = VERSIONS

    if TYPE_CHECKING:  # the version and the handler's type, from the arguments

        @overload
        def __init__(
            self: AgentConnection[v1.ClientPeer, v1.InitializeRequest, _H],
            reader: Reader,
            writer: Writer,
            handler: Callable[[Any], _H],
            *,
            versions: tuple[Literal["v1"]],
            **options: Unpack[_Options],
        ) -> None: ...

        @overload
        def __init__(
            self: AgentConnection[v2.ClientPeer, v2.InitializeRequest, _H],
            reader: Reader,
            writer: Writer,
            handler: Callable[[Any], _H],
            *,
            versions: tuple[Literal["v2"]],
            **options: Unpack[_Options],
        ) -> None: ...

        @overload
        def __init__(
            self: AgentConnection[v1.ClientPeer | v2.ClientPeer, v1.InitializeRequest | v2.InitializeRequest, _H],
            reader: Reader,
            writer: Writer,
            handler: Callable[[Any], _H],
            *,
            versions: Sequence[str] | None = ...,
            **options: Unpack[_Options],
        ) -> None: ...

        @overload
        def __init__(
            self: AgentConnection[v1.ClientPeer | v2.ClientPeer, v1.InitializeRequest | v2.InitializeRequest, _H],
            reader: Reader,
            writer: Writer,
            handler: _H = ...,
            *,
            versions: Sequence[str] | None = ...,
            **options: Unpack[_Options],
        ) -> None: ...

        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

    @overload
    def as_version(
        self: AgentConnection[Any, Any, _H], version: Literal["v1"]
    ) -> AgentConnection[v1.ClientPeer, v1.InitializeRequest, _H]: ...
    @overload
    def as_version(
        self: AgentConnection[Any, Any, _H], version: Literal["v2"]
    ) -> AgentConnection[v2.ClientPeer, v2.InitializeRequest, _H]: ...
    def as_version(self, version: str) -> Any:
        """This connection, typed for ``version``; ``ValueError`` unless it is the settled one."""
        return self._as_version(version)


class ClientConnection(Connection[_AgentPeerT, _InitResponseT, _ClientHandlerT]):
    """This process is the client: ``handler`` implements the version's ``Client`` methods.

    ``versions`` lists the versions spoken, preferred first (default v2,
    then v1). :meth:`initialize` sends the preferred version's request and
    accepts the agent's answer in any listed version; :attr:`version` is
    then the settled one and :attr:`peer` its typed ``AgentPeer``.

    For a type checker it is ``ClientConnection[AgentPeer, InitializeResponse,
    Handler]``, typed like :class:`AgentConnection`: one version's types
    when made for one, else unions that :meth:`as_version` narrows.
    """

    side = "client"
    default_versions = tuple(reversed(VERSIONS))
    process: AgentProcess | None = None
    """The agent's process, for a connection made by :func:`spawn_agent`."""

    if TYPE_CHECKING:  # the version and the handler's type, from the arguments

        @overload
        def __init__(
            self: ClientConnection[v1.AgentPeer, v1.InitializeResponse, _H],
            reader: Reader,
            writer: Writer,
            handler: Callable[[Any], _H],
            *,
            versions: tuple[Literal["v1"]],
            **options: Unpack[_Options],
        ) -> None: ...

        @overload
        def __init__(
            self: ClientConnection[v2.AgentPeer, v2.InitializeResponse, _H],
            reader: Reader,
            writer: Writer,
            handler: Callable[[Any], _H],
            *,
            versions: tuple[Literal["v2"]],
            **options: Unpack[_Options],
        ) -> None: ...

        @overload
        def __init__(
            self: ClientConnection[v1.AgentPeer | v2.AgentPeer, v1.InitializeResponse | v2.InitializeResponse, _H],
            reader: Reader,
            writer: Writer,
            handler: Callable[[Any], _H],
            *,
            versions: Sequence[str] | None = ...,
            **options: Unpack[_Options],
        ) -> None: ...

        @overload
        def __init__(
            self: ClientConnection[v1.AgentPeer | v2.AgentPeer, v1.InitializeResponse | v2.InitializeResponse, _H],
            reader: Reader,
            writer: Writer,
            handler: _H = ...,
            *,
            versions: Sequence[str] | None = ...,
            **options: Unpack[_Options],
        ) -> None: ...

        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

    @overload
    def as_version(
        self: ClientConnection[Any, Any, _H], version: Literal["v1"]
    ) -> ClientConnection[v1.AgentPeer, v1.InitializeResponse, _H]: ...
    @overload
    def as_version(
        self: ClientConnection[Any, Any, _H], version: Literal["v2"]
    ) -> ClientConnection[v2.AgentPeer, v2.InitializeResponse, _H]: ...
    def as_version(self, version: str) -> Any:
        """This connection, typed for ``version``; ``ValueError`` unless it is the settled one."""
        return self._as_version(version)

    async def initialize(
        self,
        params: v1.InitializeRequest | v2.InitializeRequest,
        *,
        fallback: v1.InitializeRequest | v2.InitializeRequest | None = None,
    ) -> _InitResponseT:
        """Send ``initialize`` and return the agent's answer, in whichever listed version it came.

        ``params`` is the ``InitializeRequest`` of the version to ask for (a
        listed one; its version is used until the answer settles it). Raises
        :class:`UnsupportedVersion` when the agent answers a version not listed.

        When the agent answers in another version than asked (a v1 agent
        asked v2), it has read a request of the other version, which says
        nothing it can use (a v2 ``initialize`` has no ``clientCapabilities``:
        no ``fs``, no ``terminal``). So ``initialize`` is sent again in the
        settled version: ``fallback`` when given, else the equivalent of
        ``params`` (the client's info, the capabilities both versions share,
        and each capability of a method this handler implements, such as
        ``fs.readTextFile`` for ``fs_read_text_file``); its answer is returned.
        An agent that refuses the repeat keeps the first answer (logged).
        """
        asked = self._version
        module = type(params).__module__
        for version in self._versions.values():
            if module.startswith(f"acp_types.{version.name}."):
                asked = self._version = version
                break
        result = await self.request("initialize", params)
        if self._version is asked:
            return cast(_InitResponseT, result)
        again = fallback if fallback is not None else self._equivalent_initialize(params)
        try:
            return cast(_InitResponseT, await self.request("initialize", again))
        except RequestError as exc:
            log.warning(
                "the agent refused initialize in ACP %s after answering ACP %s to %s: %s",
                self.version,
                self.version,
                asked.name,
                exc,
            )
            return cast(_InitResponseT, result)

    def _equivalent_initialize(self, params: Any) -> Any:
        """``params`` (an ``initialize`` of another version) as this version's ``InitializeRequest``."""
        version = self._version
        wire = to_wire(params) if isinstance(params, BaseModel) else dict(params)
        info_key, caps_key = ("clientInfo", "clientCapabilities") if version.name == "v1" else ("info", "capabilities")
        other_info = wire.get("clientInfo", wire.get("info"))
        other_caps = wire.get("clientCapabilities", wire.get("capabilities"))
        request: dict[str, Any] = {"protocolVersion": version.number}
        if isinstance(other_info, Mapping):
            request[info_key] = dict(other_info)
        caps: dict[str, Any] = {}
        spec = version.methods["initialize"]
        for key, value in other_caps.items() if isinstance(other_caps, Mapping) else ():
            try:  # a capability both versions have, in the same shape
                spec.validate_params({**request, caps_key: {key: value}})
                caps[key] = value
            except ValidationError:
                continue
        interface = getattr(version.module, "Client", None)
        for method in version.methods.values():
            path = method.capability
            if method.side != "client" or path is None or path[0] != caps_key or len(path) < 2:
                continue
            if not _implements(self.handler, method.handler, interface):
                continue
            if len(path) == 2:
                caps[path[1]] = True
            else:
                node = caps.setdefault(path[1], {})
                if isinstance(node, dict):
                    node[path[2]] = True
        request[caps_key] = caps
        try:
            return spec.validate_params(request)
        except ValidationError:  # the other version's info does not fit: send without it
            request.pop(info_key, None)
            return spec.validate_params(request)


# -- transports -----------------------------------------------------------


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


async def serve(
    reader: Reader,
    writer: Writer,
    handler: Handler,
    *,
    versions: Sequence[str] | None = None,
    strict_capabilities: bool = False,
    **limits: Any,
) -> None:
    """Run an agent on a reader/writer pair until the client goes away (``limits``: see :class:`Connection`).

    ``strict_capabilities=True`` refuses, before sending, a client method the
    client did not advertise (:class:`CapabilityNotAdvertised`).
    """
    async with AgentConnection(
        reader, writer, handler, versions=versions, strict_capabilities=strict_capabilities, **limits
    ) as conn:
        await conn.wait_closed()


async def serve_stdio(
    handler: Handler, *, versions: Sequence[str] | None = None, strict_capabilities: bool = False, **limits: Any
) -> None:
    """Run an agent on this process's stdin/stdout until the client closes stdin.

    It returns once every answer has been written out (or ``close_timeout``
    has passed). ``strict_capabilities`` and ``limits``: as for :func:`serve`.
    """
    reader, writer = await stdio_streams()
    await serve(reader, writer, handler, versions=versions, strict_capabilities=strict_capabilities, **limits)


class AgentProcess:
    """The agent's process as :func:`spawn_agent` started it, the leader of a process group of its own."""

    def __init__(self, transport: asyncio.SubprocessTransport, exited: asyncio.Future[None]) -> None:
        self._transport = transport
        self._exited = exited
        self.pid: int = transport.get_pid()

    @property
    def returncode(self) -> int | None:
        return self._transport.get_returncode()

    async def wait(self) -> int | None:
        """Wait for the agent's process (not its children) to exit, and return its exit code."""
        await asyncio.shield(self._exited)
        return self.returncode

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the agent's whole process group (the agent alone where there are none)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if hasattr(os, "killpg"):
                os.killpg(self.pid, sig)
            else:  # pragma: no cover - no process groups
                self._transport.send_signal(sig)

    def terminate(self) -> None:
        self.signal_group(signal.SIGTERM)

    def kill(self) -> None:
        self.signal_group(getattr(signal, "SIGKILL", signal.SIGTERM))


class _AgentProtocol(asyncio.SubprocessProtocol):
    """The agent's pipes: its stdout to a :class:`PipeReader`, its stdin from a :class:`PipeWriter`."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.reader = PipeReader()
        self.writer = PipeWriter()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.stdout_closed: asyncio.Future[None] = loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        stdin, stdout = transport.get_pipe_transport(0), transport.get_pipe_transport(1)
        if stdin is not None:
            self.writer.connection_made(stdin)
        if stdout is not None:
            self.reader.connection_made(stdout)

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd == 1:
            self.reader.data_received(data if isinstance(data, bytes) else data.encode())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 0:
            self.writer.connection_lost(exc)
        elif fd == 1:
            self.reader.connection_lost(exc)
            if not self.stdout_closed.done():
                self.stdout_closed.set_result(None)

    def pause_writing(self) -> None:
        self.writer.pause_writing()

    def resume_writing(self) -> None:
        self.writer.resume_writing()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


@contextlib.asynccontextmanager
async def _spawn_agent(
    command: Sequence[str],
    handler: Handler = None,
    *,
    versions: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stderr: int | None = None,
    exit_timeout: float = 1.0,
    **options: Any,
) -> AsyncIterator[ClientConnection[Any, Any, Any]]:
    """Start the agent ``command`` and yield a :class:`ClientConnection` to it over its stdin/stdout.

    The agent runs in a new session (a process group of its own, so a
    Ctrl-C in the terminal reaches only this process, which stops the agent
    on its way out); the process is ``conn.process``. ``options`` are the connection's
    (``strict_capabilities``, the limits). On leaving the block the
    connection is closed and the agent's stdin with it; once the agent has
    exited, or ``exit_timeout`` seconds later, its whole process group gets
    SIGTERM, and SIGKILL if anything is left ``exit_timeout`` seconds after
    that, so processes it started do not outlive it. ``stderr`` is passed to
    the process as is (``None``: this process's stderr; do not pass ``PIPE``,
    nothing would read it). A SIGTERM or SIGHUP to this process while the
    block runs (left at their default) stops the agent the same way, then
    raises ``SystemExit(128 + signal)`` (see :class:`_StopOnSignal`).
    """
    if not command:
        raise ValueError("spawn_agent needs a command")
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _AgentProtocol(loop),
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=True,
    )
    process = AgentProcess(transport, protocol.exited)
    task = asyncio.current_task()
    _SIGNALS.enter(loop, task)
    try:
        conn = ClientConnection(protocol.reader, protocol.writer, handler, versions=versions, **options)
        conn.process = process
        async with conn:
            yield conn
    finally:
        try:
            await _stop(process, protocol, exit_timeout)
        finally:
            transport.close()  # else asyncio complains when it collects the transport
            received = _SIGNALS.leave(loop, task)
        if received is not None:
            raise SystemExit(128 + received)  # as a shell reports a process that SIGTERM / SIGHUP ended


class _StopOnSignal:
    """SIGTERM and SIGHUP, while a :func:`spawn_agent` block runs, leave the block as a normal exit does.

    Python's default for both ends the process at once, leaving the agent's
    process group running (``timeout``, a parent or a closed terminal stop
    a client that way). While at least one block is open, and only where the
    signal still has its default disposition (a handler of the program's own,
    or ``nohup``'s ignore, is left alone), the signal cancels the tasks in the
    blocks; each block then stops its agent as on leaving it and raises
    ``SystemExit(128 + signal)``, so the process exits with the code a shell
    gives one that the signal ended, once its own ``finally`` blocks ran.
    """

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._installed: list[int] = []
        self.received: int | None = None

    def enter(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any] | None) -> None:
        if task is None or threading.current_thread() is not threading.main_thread():
            return  # signal handlers belong to the main thread's loop
        if not self._tasks:
            self.received = None
            for sig in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)):
                if sig is None or signal.getsignal(sig) is not signal.SIG_DFL:
                    continue
                try:
                    loop.add_signal_handler(sig, self._on_signal, sig)
                except (NotImplementedError, RuntimeError, ValueError):  # pragma: no cover - Windows, no loop
                    continue
                self._installed.append(sig)
        self._tasks.add(task)

    def _on_signal(self, sig: int) -> None:
        if self.received is None:
            self.received = sig
            for task in self._tasks:
                task.cancel()

    def leave(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any] | None) -> int | None:
        if task is None or task not in self._tasks:
            return None
        self._tasks.discard(task)
        received = self.received
        if not self._tasks:
            for sig in self._installed:
                loop.remove_signal_handler(sig)  # back to the default disposition
            self._installed.clear()
        return received


_SIGNALS = _StopOnSignal()


if TYPE_CHECKING:  # the version and the handler's type, from the arguments

    @overload
    def spawn_agent(
        command: Sequence[str],
        handler: Callable[[Any], _H],
        *,
        versions: tuple[Literal["v1"]],
        **options: Unpack[_SpawnOptions],
    ) -> AbstractAsyncContextManager[ClientConnection[v1.AgentPeer, v1.InitializeResponse, _H]]: ...

    @overload
    def spawn_agent(
        command: Sequence[str],
        handler: Callable[[Any], _H],
        *,
        versions: tuple[Literal["v2"]],
        **options: Unpack[_SpawnOptions],
    ) -> AbstractAsyncContextManager[ClientConnection[v2.AgentPeer, v2.InitializeResponse, _H]]: ...

    @overload
    def spawn_agent(
        command: Sequence[str],
        handler: Callable[[Any], _H],
        *,
        versions: Sequence[str] | None = ...,
        **options: Unpack[_SpawnOptions],
    ) -> AbstractAsyncContextManager[
        ClientConnection[v1.AgentPeer | v2.AgentPeer, v1.InitializeResponse | v2.InitializeResponse, _H]
    ]: ...

    @overload
    def spawn_agent(
        command: Sequence[str],
        handler: _H = ...,
        *,
        versions: Sequence[str] | None = ...,
        **options: Unpack[_SpawnOptions],
    ) -> AbstractAsyncContextManager[
        ClientConnection[v1.AgentPeer | v2.AgentPeer, v1.InitializeResponse | v2.InitializeResponse, _H]
    ]: ...

    def spawn_agent(*args: Any, **kwargs: Any) -> Any: ...
else:
    spawn_agent = _spawn_agent
    spawn_agent.__name__ = spawn_agent.__qualname__ = "spawn_agent"


async def _stop(process: AgentProcess, protocol: _AgentProtocol, timeout: float) -> None:
    """Close the agent's stdin, give it ``timeout`` to exit, then stop its process group: TERM, then KILL."""
    protocol.writer.close()
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(protocol.exited), timeout)
    process.terminate()  # what it started and left running goes too
    gone = asyncio.gather(protocol.exited, protocol.stdout_closed)
    try:
        await asyncio.wait_for(asyncio.shield(gone), timeout)
    except asyncio.TimeoutError:
        process.kill()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(gone), timeout)
