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
  cancels), so a slow one does not hold up the rest. The task starts as
  soon as the line is read and runs until it first suspends (asyncio's
  eager start on 3.12+, the same by hand before), in its own context, so
  ``asyncio.timeout()`` and task groups work from the handler's first
  line; a handler that answers without waiting is answered at once, and on
  3.12+ its task never goes through the event loop. Notifications are handled one at a time, in the order they arrived.
  A response to a request you sent waits until the notifications that came
  before it have been handled (so a client has seen every streamed update
  before ``session/prompt`` returns), unless the request was sent from a
  notification handler.
- A handler answers with its result model (a ``dict`` is validated as the
  result type; ``None`` is allowed only where ``{}`` is a valid result), or
  raises :class:`RequestError` with a code from the version's error table
  (``v1.RESOURCE_NOT_FOUND``...). A method the handler does not have, or one
  whose stub it inherits, is answered with -32601. Any other exception is
  logged (logger ``acp_types.connection``) and answered with -32603 and no
  traceback.
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
- A line longer than ``max_line_size`` bytes (default
  :data:`DEFAULT_MAX_LINE_SIZE`) is skipped without being buffered and
  answered with -32600 and ``id: null``.
- Answers are written without waiting. While the writer holds more than
  64 KiB the peer has not read, the connection reads nothing more from it
  (a :class:`PipeReader`'s transport is paused), so a peer that sends
  requests without reading the answers cannot fill this process's memory.

Reading: any reader with ``read(n)`` works; a :class:`PipeReader` (what
:func:`pipe_streams`, :func:`stdio_streams` and :func:`spawn_agent` make)
is read without a trip through the event loop per chunk.

Outgoing: :meth:`Connection.request` and :meth:`Connection.notify` (and the
typed ``AgentPeer`` / ``ClientPeer`` of each version module, one method per
method of the peer's side) check the params before anything is written: a
model of the method's params type is sent as is (its constructor validated
it), a ``dict`` is validated first, anything else is a ``TypeError``. Ids are
integers from 1. When the task awaiting a request is cancelled, the peer gets
``$/cancel_request``. In strict mode (``strict_capabilities=True``) a client
refuses, before sending, a method gated by a capability the agent did not
advertise, with :class:`CapabilityNotAdvertised`.

The connection ends at end of input, when the peer exits or on
:meth:`Connection.close`; every request still waiting for its answer then
fails with :class:`ConnectionClosed`.

Hand-written: the source is runtime/connection.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import importlib
import inspect
import json
import logging
import os
import sys
from asyncio.tasks import _enter_task, _leave_task
from collections import deque
from collections.abc import (
    AsyncIterator,
    Callable,
    Coroutine,
    Generator,
    Iterable,
    Mapping,
    Sequence,
)
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, Protocol, SupportsIndex

from pydantic import BaseModel, ValidationError

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
from ._runtime import MethodSpec, is_extension, to_wire, type_name, wire_json

__all__ = [
    "DEFAULT_MAX_LINE_SIZE",
    "VERSIONS",
    "AgentConnection",
    "CapabilityNotAdvertised",
    "ClientConnection",
    "Connection",
    "ConnectionClosed",
    "MethodNotImplemented",
    "PipeReader",
    "RequestError",
    "UnsupportedVersion",
    "not_implemented",
    "serve",
    "serve_stdio",
    "pipe_streams",
    "spawn_agent",
    "stdio_streams",
]

log = logging.getLogger("acp_types.connection")

DEFAULT_MAX_LINE_SIZE = 16 * 1024 * 1024
"""The longest line (in bytes, without its newline) a connection reads by default: 16 MiB."""

VERSIONS: tuple[str, ...] = tuple(_PACKAGE_VERSIONS)
"""The versions this package speaks, oldest first (``acp_types.VERSIONS``)."""

REQUEST_CANCELLED = -32800
CANCEL_REQUEST = "$/cancel_request"
_READ_CHUNK = 1 << 16
_DRAIN_ABOVE = 1 << 16


class ConnectionClosed(ConnectionError):
    """The connection ended (end of input, the peer exited, or ``close()``) before the answer came."""


class CapabilityNotAdvertised(PermissionError):
    """Strict mode: the peer did not advertise the capability that gates ``method``."""

    def __init__(self, method: str, capability: str) -> None:
        super().__init__(
            f"{method!r} needs the capability {capability!r}, which the agent did not advertise"
        )
        self.method = method
        self.capability = capability


class UnsupportedVersion(ConnectionError):
    """The agent answered ``initialize`` with a protocol version this client does not speak."""

    def __init__(self, protocol_version: Any, versions: Sequence[str]) -> None:
        super().__init__(
            f"the agent answered protocolVersion {protocol_version!r}; this client speaks "
            + ", ".join(versions)
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


def _version_module(version: str) -> ModuleType:
    if version not in VERSIONS:
        raise ValueError(
            f"unknown ACP version {version!r}; known: {', '.join(VERSIONS)}"
        )
    return importlib.import_module(f"acp_types.{version}")


def _messages_module(version: str) -> ModuleType:
    return importlib.import_module(f"acp_types.{version}.messages")


class _Version:
    """What a connection needs of one version module, looked up once."""

    def __init__(self, name: str) -> None:
        mod = _version_module(name)
        self.name = name
        self.module = mod
        self.number: int = mod.PROTOCOL_VERSION
        self.methods: Mapping[str, MethodSpec] = mod.METHODS
        self.parse: Callable[..., Any] = _messages_module(name).parse_message
        self.method_allowed: Callable[[str, Any], bool] = mod.method_allowed


def _is_factory(handler: Handler) -> bool:
    return (
        inspect.isclass(handler)
        or inspect.isfunction(handler)
        or inspect.ismethod(handler)
    )


_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _dumps(value: Any) -> bytes:
    return _encode(value).encode("utf-8")


@functools.lru_cache(maxsize=256)
def _method_json(method: str) -> bytes:
    """``,"method":<method>,"params":`` as it goes between a request's id and its params."""
    return b',"method":' + _dumps(method) + b',"params":'


def _start_eagerly(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
    """Run ``coro`` now, as a task of its own, up to its first suspension; return that task, or ``None`` if it finished.

    On Python 3.12+ this is asyncio's own eager start. Before 3.12 the task
    is made first and the coroutine's first stretch is run here by hand, as
    that task (``asyncio.current_task()`` is the task, so ``asyncio.timeout()``
    and task groups work from the handler's first line) and in a context of
    its own (its context variables do not leak into the reader's); the
    task's first step goes on from where it suspended (:class:`_Resume`).
    A handler sees the same on every interpreter.
    """
    loop = asyncio.get_running_loop()
    if sys.version_info >= (3, 12):
        task: asyncio.Task[None] = asyncio.Task(coro, loop=loop, eager_start=True)
        return None if task.done() else task
    resume = _Resume(coro, contextvars.copy_context())
    task = loop.create_task(resume)
    current = asyncio.current_task()
    if current is not None:  # the reading task: the handler must not run as it
        _leave_task(loop, current)
    _enter_task(loop, task)
    try:
        resume.start()
    finally:
        _leave_task(loop, task)
        if current is not None:
            _enter_task(loop, current)
    return None if resume.finished else task



class _Resume(Coroutine[Any, Any, None]):
    """The coroutine of a task whose first stretch :func:`_start_eagerly` ran by hand (before 3.12).

    Every step runs in the coroutine's own context. The task's first step
    gets what the coroutine waited on when it first suspended (or finishes
    at once if it finished); a cancellation before that first step is
    thrown into the coroutine where it waits, as in any task.
    """

    __slots__ = ("_coro", "_context", "_first", "finished")

    def __init__(self, coro: Coroutine[Any, Any, None], context: contextvars.Context) -> None:
        self._coro = coro
        self._context = context
        self._first: tuple[Any, ...] | None = None
        self.finished = False

    def start(self) -> None:
        try:
            self._first = (self._context.run(self._coro.send, None),)
        except StopIteration:
            self.finished = True
        except BaseException as exc:  # re-raised by the task's first step
            self._first = (exc, True)

    def send(self, value: Any) -> Any:
        first = self._first
        if first is not None:
            self._first = None
            if len(first) == 2:
                raise first[0]
            return first[0]
        if self.finished:
            raise StopIteration
        return self._context.run(self._coro.send, value)

    def throw(self, *exc: Any) -> Any:
        self._first = None
        if self.finished:
            raise exc[0] if len(exc) == 1 else exc[1]
        return self._context.run(self._coro.throw, *exc)

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Generator[Any, None, None]:
        raise TypeError("a _Resume is run by a task, not awaited")


class _OutRequest:
    __slots__ = ("future", "method", "ordered")

    def __init__(self, future: asyncio.Future[Any], method: str, ordered: bool) -> None:
        self.future = future
        self.method = method
        self.ordered = ordered


class Connection:
    """One side of an ACP connection over a reader/writer pair.

    Use :class:`AgentConnection` (this process is the agent) or
    :class:`ClientConnection` (this process is the client). ``handler``
    handles what the peer sends (see the module documentation for the
    rule); a class or function is called with the connection to make it.
    ``versions`` are the versions this side speaks, preferred first.
    Start reading with ``async with conn:`` or :meth:`start`; the
    connection ends at end of input or :meth:`close`.
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
    ) -> None:
        if versions is None:
            versions = self.default_versions
        if not versions:
            raise ValueError("a connection needs at least one version")
        if max_line_size < 1:
            raise ValueError("max_line_size must be positive")
        self._versions = {name: _Version(name) for name in versions}
        self._version = self._versions[versions[0]]
        self.settled = False
        """Whether ``initialize`` has settled the version."""
        self._reader = reader
        self._writer = writer
        self.max_line_size = max_line_size
        self.strict_capabilities = strict_capabilities
        self.peer_initialize: Any = None
        """The peer's side of ``initialize``: the request (agent) or the response (client) model."""
        self._pending = PendingRequests()
        self._out: dict[RequestId, _OutRequest] = {}
        self._next_id = 1
        self._in: dict[RequestId, asyncio.Task[None]] = {}
        self._queue: deque[Any] = deque()
        self._wakeup = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None
        self._reading: asyncio.Task[None] | None = None
        self._closed = asyncio.Event()
        self._closing = False
        self._close_reason = "the connection is closed"
        self._drain_lock = asyncio.Lock()
        self._must_drain = False
        self._parts: list[bytes] = []
        self._part_size = 0
        self._skipping = False
        transport = getattr(writer, "transport", None)
        # StreamWriter.write is transport.write and nothing else: skip a call
        self._raw_write: Callable[[bytes], object] = (
            transport.write
            if type(writer) is asyncio.StreamWriter and transport is not None
            else writer.write
        )
        self._buffer_size: Callable[[], int] | None = getattr(
            transport, "get_write_buffer_size", None
        )
        self.handler: object = handler(self) if _is_factory(handler) else handler

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
    def peer(self) -> Any:
        """The typed calls to the peer in the current version: ``AgentPeer`` or ``ClientPeer``."""
        peer_module = importlib.import_module(f"acp_types.{self.version}.peer")
        cls = peer_module.ClientPeer if self.side == "agent" else peer_module.AgentPeer
        return cls(self)

    def _settle(self, version: _Version) -> None:
        self._version = version
        self.settled = True

    # -- life cycle -------------------------------------------------------

    def start(self) -> None:
        """Start reading (idempotent)."""
        if self._reading is None:
            self._worker = asyncio.ensure_future(self._work())
            self._reading = asyncio.ensure_future(self._read_loop())

    async def __aenter__(self) -> Connection:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def wait_closed(self) -> None:
        """Wait until the connection has ended (end of input or :meth:`close`)."""
        self.start()
        await self._closed.wait()

    async def close(self) -> None:
        """End the connection: stop reading, fail pending requests, cancel running handlers, close the writer."""
        self._abort = True
        if self._reading is not None and not self._reading.done():
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reading
        await self._finish("the connection was closed")

    async def _finish(self, reason: str) -> None:
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        self._close_reason = reason
        self._fail_pending(reason)
        self._queue.append(None)
        self._wakeup.set()
        if self._worker is not None and asyncio.current_task() is not self._worker:
            if self._abort:
                self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        self._fail_pending(reason)
        tasks = list(self._in.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        with contextlib.suppress(Exception):
            self._writer.close()
        self._closed.set()

    def _fail_pending(self, reason: str) -> None:
        for rid, out in list(self._out.items()):
            del self._out[rid]
            self._pending.pop(rid)
            if not out.future.done():
                out.future.set_exception(
                    ConnectionClosed(
                        f"{reason} before {out.method!r} (request {rid!r}) was answered"
                    )
                )

    # -- writing ----------------------------------------------------------

    def _write(self, data: bytes) -> bool:
        """Write ``data`` now, without waiting; ``False`` when the connection is closing.

        Whether the writer then needs draining is remembered in
        ``_must_drain``: the reading side drains before it reads on (see
        :meth:`_read_chunks` and :class:`PipeReader`), so a peer that sends
        faster than it reads our answers is not read from until they have
        gone out.
        """
        if self._closing:
            return False
        self._raw_write(data)
        size = self._buffer_size
        if size is None or size() > _DRAIN_ABOVE:
            self._must_drain = True
        return True

    async def _drain(self) -> None:
        async with self._drain_lock:
            try:
                await self._writer.drain()
            except (ConnectionError, OSError) as exc:
                raise ConnectionClosed(f"the peer is gone: {exc}") from exc

    async def _send(self, data: bytes) -> None:
        if not self._write(data):
            raise ConnectionClosed(self._close_reason)
        if self._must_drain:
            self._must_drain = False
            await self._drain()

    def _send_quietly(self, data: bytes) -> None:
        if not self._write(data):
            log.debug("not sent, the connection is closed: %.200r", data)

    def _reply(self, data: bytes, collect: list[bytes] | None) -> None:
        """Send one answer, or add it to the answers of the batch being handled."""
        if collect is not None:
            collect.append(data)
        else:
            self._send_quietly(data + b"\n")

    def _answer(
        self, rid: RequestId, result: Any, collect: list[bytes] | None = None
    ) -> None:
        if isinstance(result, BaseModel):
            body = wire_json(result)
        else:
            body = _dumps(result)
        self._reply(
            b'{"jsonrpc":"2.0","id":'
            + (str(rid).encode() if type(rid) is int else _dumps(rid))
            + b',"result":'
            + body
            + b"}",
            collect,
        )

    def _answer_error(
        self,
        rid: RequestId,
        code: int,
        message: str,
        data: Any = None,
        collect: list[bytes] | None = None,
    ) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._reply(_dumps({"jsonrpc": "2.0", "id": rid, "error": error}), collect)

    def _spec(self, method: str, kind: str) -> MethodSpec | None:
        spec = self._version.methods.get(method)
        if spec is None:
            if not is_extension(method):
                raise ValueError(f"{method!r} is not a method of ACP {self.version}")
            return None
        if spec.kind != kind:
            verb = "request" if kind == "notification" else "notify"
            raise ValueError(f"{method!r} is a {spec.kind}; use {verb}() for it")
        return spec

    def _check_side(self, spec: MethodSpec) -> None:
        if spec.side == self.side:
            raise ValueError(
                f"{spec.name!r} is handled by the {spec.side}; the {self.side} does not send it"
            )

    def _check_capability(self, spec: MethodSpec) -> None:
        # method_allowed answers from the initialize message of the side that
        # handles the method, which is the peer's: the one recorded here.
        if not self.strict_capabilities or spec.capability is None:
            return
        init = self.peer_initialize
        if init is None or not self._version.method_allowed(spec.name, init):
            raise CapabilityNotAdvertised(spec.name, ".".join(spec.capability))

    @staticmethod
    def _params_body(spec: MethodSpec | None, method: str, params: Any) -> bytes:
        if spec is None:
            if isinstance(params, BaseModel):
                return wire_json(params)
            return _dumps(params)
        expected = spec.params
        if isinstance(params, BaseModel) and (
            isinstance(expected, type) and isinstance(params, expected)
        ):
            return wire_json(params)
        if isinstance(params, BaseModel):
            if isinstance(expected, type):
                raise TypeError(
                    f"the params of {method!r} are {type_name(expected)}, not {type_name(type(params))}"
                )
            params = to_wire(params)
        if not isinstance(params, Mapping):
            raise TypeError(
                f"the params of {method!r} are a model or a dict, not {type(params).__name__}"
            )
        model: BaseModel = spec.validate_params(dict(params))
        return wire_json(model)

    async def notify(self, method: str, params: Any) -> None:
        """Send a notification; ``params`` is checked first (see the module documentation)."""
        spec = self._spec(method, "notification")
        if spec is not None:
            self._check_side(spec)
            self._check_capability(spec)
        body = self._params_body(spec, method, params)
        await self._send(
            b'{"jsonrpc":"2.0","method":'
            + _dumps(method)
            + b',"params":'
            + body
            + b"}\n"
        )

    async def request(self, method: str, params: Any) -> Any:
        """Send a request and return its result model; an error answer raises :class:`RequestError`.

        Cancelling the awaiting task sends ``$/cancel_request`` for it. The
        connection ending first raises :class:`ConnectionClosed`.
        """
        spec = self._spec(method, "request")
        if spec is not None:
            self._check_side(spec)
            self._check_capability(spec)
        body = self._params_body(spec, method, params)
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
            await self._send(
                b'{"jsonrpc":"2.0","id":'
                + str(rid).encode()
                + _method_json(method)
                + body
                + b"}\n"
            )
            return await future
        except asyncio.CancelledError:
            if self._out.pop(rid, None) is not None:
                self._pending.pop(rid)
                if not self._closing and CANCEL_REQUEST in self._version.methods:
                    self._send_quietly(
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
            attach = getattr(self._reader, "_acp_attach", None)
            if attach is not None:
                await attach(self)
            else:
                await self._read_chunks()
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

    async def _read_chunks(self) -> None:
        """Pull input from any reader: read a chunk, handle its lines, drain if needed, repeat."""
        read = self._reader.read
        while True:
            chunk = await read(_READ_CHUNK)
            if not chunk:
                self._feed_eof()
                return
            while True:
                rest = self._feed(chunk)
                if self._must_drain:
                    self._must_drain = False
                    await self._drain()
                if not rest:
                    break
                chunk = rest

    def _feed(self, chunk: bytes) -> bytes:
        """Handle the complete lines of ``chunk`` now, keeping an unfinished last line for later.

        Everything a line leads to happens here, synchronously: answers are
        written without waiting, and a request's handler runs until it
        first suspends (see :meth:`_start_request`). A line beyond
        ``max_line_size`` is dropped while it streams in, never buffered.
        When an answer leaves the writer in need of draining, the lines
        after it are not handled yet: what is left of ``chunk`` is returned,
        for the caller to feed again once the writer has drained (``b""``
        when every line was handled).
        """
        limit = self.max_line_size
        parts = self._parts
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if not self._skipping:
                    rest = chunk[start:]
                    self._part_size += len(rest)
                    if self._part_size > limit:
                        parts.clear()
                        self._part_size = 0
                        self._skipping = True
                        self._oversized()
                    elif rest:
                        parts.append(rest)
                return b""
            piece = chunk[start:end]
            start = end + 1
            if self._skipping:
                self._skipping = False
                continue
            if parts:
                parts.append(piece)
                line = b"".join(parts)
                parts.clear()
                self._part_size = 0
            else:
                line = piece
            if len(line) > limit:
                self._oversized()
            else:
                self._line(line)
            if self._must_drain:
                return chunk[start:]

    def _feed_eof(self) -> None:
        if self._parts and not self._skipping:
            line = b"".join(self._parts)
            self._parts.clear()
            self._line(line)

    def _oversized(self) -> None:
        log.warning("skipped a line longer than %d bytes", self.max_line_size)
        self._answer_error(
            None, INVALID_REQUEST, f"the line is longer than {self.max_line_size} bytes"
        )

    def _line(self, line: bytes) -> None:
        if not line or line.isspace():
            return
        try:
            msg = self._parse(line)
        except MessageError as exc:
            self._malformed(exc)
            return
        if isinstance(msg, Batch):
            self._batch(msg)
            return
        self._dispatch(msg)

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
            else:
                self._dispatch(entry)
        if tasks:
            asyncio.ensure_future(self._send_batch(tasks, answers))
        elif answers:
            self._send_quietly(b"[" + b",".join(answers) + b"]\n")

    async def _send_batch(
        self, tasks: list[asyncio.Task[None]], answers: list[bytes]
    ) -> None:
        await asyncio.gather(*tasks, return_exceptions=True)
        if answers and not self._closing:
            self._send_quietly(b"[" + b",".join(answers) + b"]\n")

    def _parse(self, line: bytes) -> Any:
        return self._version.parse(line, pending=self._pending)

    def _malformed(
        self, exc: MessageError, collect: list[bytes] | None = None
    ) -> None:
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
                log.warning("dropped a malformed response: %s", exc.message)
            return
        if kind == "notification":
            log.warning("dropped a malformed notification: %s", exc.message)
            return
        if kind == "request" and exc.id is not None and exc.id in self._in:
            log.warning(
                "malformed request reuses the id of a running one: %s", exc.message
            )
        if (
            kind == "request"
            and exc.method == "initialize"
            and exc.code == INVALID_PARAMS
        ):
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
        requested = (
            params.get("protocolVersion") if isinstance(params, Mapping) else None
        )
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
                    return version, version.methods["initialize"].validate_result(
                        result
                    )
                except ValidationError:
                    break
        return exc

    # -- dispatch ---------------------------------------------------------

    def _dispatch(self, msg: Any) -> None:
        if type(msg) is Response:  # the common answer: resolve its future at once
            out = self._out.pop(msg.id, None)
            if (
                out is not None
                and out.method != "initialize"
                and not (out.ordered and (self._queue or self._busy))
            ):
                if not out.future.done():
                    out.future.set_result(msg.result)
                return
            if out is not None:
                self._out[msg.id] = out  # the general path below takes it again
        if isinstance(msg, Request):
            self._on_request(msg)
        elif isinstance(msg, Notification):
            if msg.method == CANCEL_REQUEST:
                self._on_cancel(msg.params)
                return
            self._queue.append(msg)
            self._wakeup.set()
        elif isinstance(msg, (Response, ErrorResponse)):
            out = self._out.pop(msg.id, None)
            if out is None:
                log.warning("dropped a response to unknown request id %r", msg.id)
                return
            if isinstance(msg, ErrorResponse):
                error = msg.error
                self._resolve(out, RequestError(error.code, error.message, error.data))
            elif out.method == "initialize":
                self._resolve(out, self._client_initialized(msg.result))
            else:
                self._resolve(out, (None, msg.result))

    def _resolve(self, out: _OutRequest, outcome: Any) -> None:
        # outcome: an exception, or (version to settle or None, result)
        if out.ordered and (self._queue or self._busy):
            self._queue.append((out, outcome))
            self._wakeup.set()
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

    def _client_initialized(self, result: Any) -> Any:
        number = getattr(result, "protocol_version", None)
        if number == self._version.number:
            return self._version, result
        for version in self._versions.values():
            if version.number == number:
                try:
                    return version, version.methods["initialize"].validate_result(
                        result.to_wire()
                    )
                except ValidationError as exc:
                    return exc
        return UnsupportedVersion(number, list(self._versions))

    _busy = False
    _abort = False

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
            self._busy = True
            try:
                await self._on_notification(item)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("the handler of notification %r failed", item.method)
            finally:
                self._busy = False

    async def _on_notification(self, msg: Notification) -> None:
        handler = self.handler
        if is_extension(msg.method):
            fn = getattr(handler, "ext_notification", None)
            if fn is not None:
                await fn(msg.method, msg.params)
            return
        spec = self._version.methods[msg.method]
        fn = getattr(handler, spec.handler, None)
        if fn is None:
            log.debug("no handler for notification %r", msg.method)
            return
        try:
            await fn(msg.params)
        except MethodNotImplemented:
            log.debug("no handler for notification %r", msg.method)

    def _on_cancel(self, params: Any) -> None:
        rid = getattr(params, "request_id", None)
        task = self._in.get(rid)
        if task is not None:
            task.cancel()

    def _on_request(
        self, msg: Request, collect: list[bytes] | None = None
    ) -> asyncio.Task[None] | None:
        rid = msg.id
        if rid in self._in:
            self._answer_error(
                rid,
                INVALID_REQUEST,
                f"request id {rid!r} is already in use by a running request",
                collect=collect,
            )
            return None
        if msg.method == "initialize" and self.side == "agent" and not self.settled:
            requested = getattr(msg.params, "protocol_version", None)
            chosen = self._choose(requested)
            if chosen is not self._version:
                try:
                    msg = chosen.parse(msg.to_wire())
                except MessageError as exc:
                    self._answer_error(rid, exc.code, exc.message, collect=collect)
                    return None
            return self._dispatch_initialize(msg, chosen, collect)
        return self._start_request(msg, collect)

    def _dispatch_initialize(
        self, msg: Request, chosen: _Version, collect: list[bytes] | None = None
    ) -> asyncio.Task[None] | None:
        self._settle(chosen)
        self.peer_initialize = msg.params
        return self._start_request(msg, collect)

    def _start_request(
        self, msg: Request, collect: list[bytes] | None
    ) -> asyncio.Task[None] | None:
        """Start the request's handler as a task of its own, run now until it first suspends (:func:`_start_eagerly`).

        A handler that answers without waiting for anything (most do) is
        answered here, before the next line is read. One that suspends goes
        on in its task, which is what ``$/cancel_request`` and :meth:`close`
        cancel. Returns that task, or ``None`` when the request has been
        answered already.
        """
        rid = msg.id
        task = _start_eagerly(self._run_request(msg, collect))
        if task is not None:
            self._in[rid] = task
            task.add_done_callback(functools.partial(self._forget, rid))
        return task

    def _forget(self, rid: RequestId, task: asyncio.Task[None]) -> None:
        if self._in.get(rid) is task:
            del self._in[rid]

    async def _run_request(
        self, msg: Request, collect: list[bytes] | None = None
    ) -> None:
        rid, method = msg.id, msg.method
        try:
            result = await self._call(msg)
        except asyncio.CancelledError:
            if not self._closing:
                self._answer_error(
                    rid, REQUEST_CANCELLED, "the request was cancelled", collect=collect
                )
            return
        except RequestError as exc:
            self._reply(
                _dumps({"jsonrpc": "2.0", "id": rid, "error": exc.to_error()}), collect
            )
            return
        except Exception:
            log.exception("the handler of %r (request %r) failed", method, rid)
            self._answer_error(rid, INTERNAL_ERROR, "Internal error", collect=collect)
            return
        self._answer(rid, result, collect)

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
        if isinstance(expected, type) and isinstance(result, expected):
            return result
        if result is None:
            result = {}
        elif isinstance(result, BaseModel):
            if isinstance(expected, type):
                raise TypeError(
                    f"the handler of {msg.method!r} returned {type_name(type(result))}, "
                    f"not {type_name(expected)}"
                )
            result = to_wire(result)
        return spec.validate_result(result)


class AgentConnection(Connection):
    """This process is the agent: ``handler`` implements the version's ``Agent`` methods.

    One agent serves a client of any version in ``versions`` (default: both):
    the client's ``initialize`` settles it, as the protocol says (the version
    asked for when spoken here, else the latest one spoken here). The
    handler reads :attr:`version` to know which models to answer with;
    :attr:`peer` is the typed ``ClientPeer`` of that version.
    """

    side = "agent"
    default_versions = VERSIONS


class ClientConnection(Connection):
    """This process is the client: ``handler`` implements the version's ``Client`` methods.

    ``versions`` lists the versions spoken, preferred first (default v2,
    then v1). :meth:`initialize` sends the preferred version's request and
    accepts the agent's answer in any listed version; :attr:`version` is
    then the settled one and :attr:`peer` its typed ``AgentPeer``.
    """

    side = "client"
    default_versions = tuple(reversed(VERSIONS))
    process: asyncio.subprocess.Process | None = None
    """The agent's process, for a connection made by :func:`spawn_agent`."""

    async def initialize(self, params: Any) -> Any:
        """Send ``initialize`` and return the agent's answer, in whichever listed version it came.

        ``params`` is the ``InitializeRequest`` of the version to ask for (a
        listed one; its version is used until the answer settles it). Raises
        :class:`UnsupportedVersion` when the agent answers a version not listed.
        """
        module = type(params).__module__
        for version in self._versions.values():
            if module.startswith(f"acp_types.{version.name}."):
                self._version = version
                break
        return await self.request("initialize", params)


# -- transports -----------------------------------------------------------


class PipeReader(asyncio.StreamReader):
    """An ``asyncio.StreamReader`` that a connection reads without a trip through the event loop.

    Used as is, it is an ordinary ``StreamReader``. Once a connection has
    started on it, every chunk the transport delivers goes straight to the
    connection, whose lines are handled right there; while the connection
    waits for its answers to drain, the transport is paused. What
    :func:`pipe_streams`, :func:`stdio_streams` and :func:`spawn_agent`
    return reads this way.
    """

    _connection: Connection | None = None
    _ended: asyncio.Future[None] | None = None
    _draining: asyncio.Task[None] | None = None
    _busy = False
    # StreamReader's own state (the same from Python 3.10 to 3.13), which its stubs leave out
    _buffer: bytearray
    _eof: bool
    _exception: Exception | None
    _transport: asyncio.ReadTransport | None

    if TYPE_CHECKING:

        def _maybe_resume_transport(self) -> None: ...

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        conn = self._connection
        if conn is None:
            super().feed_data(data)
            return
        chunk = data if type(data) is bytes else bytes(data)
        if not chunk:
            return
        self._held.append(chunk)
        if not self._busy and self._draining is None:
            self._handle(conn)

    def _handle(self, conn: Connection) -> None:
        """Feed the held chunks to ``conn``, in order, until none is left or its writer needs draining."""
        held = self._held
        self._busy = True  # a write that feeds back into this reader (in memory) must not re-enter
        try:
            while held and not conn._must_drain:
                rest = conn._feed(held.popleft())
                if rest:
                    held.appendleft(rest)
        except Exception as exc:  # a bug of ours: end the connection as the read loop would
            self._connection = None
            if self._ended is not None and not self._ended.done():
                self._ended.set_exception(exc)
            return
        finally:
            self._busy = False
        if conn._must_drain and self._draining is None:
            if self._transport is not None:
                self._transport.pause_reading()
            self._draining = asyncio.ensure_future(self._drain(conn))

    async def _drain(self, conn: Connection) -> None:
        """Wait for the writer, then go on with the held input; reading resumes once it is all handled."""
        try:
            while conn._must_drain:
                conn._must_drain = False
                await conn._drain()
                if self._connection is not conn:
                    return
                self._draining = None
                self._handle(conn)
                if self._draining is not None:  # it needs draining again: a new task does it
                    return
        except ConnectionClosed:
            pass
        finally:
            if self._draining is None or self._draining is asyncio.current_task():
                self._draining = None
                if self._transport is not None and not self._eof:
                    self._transport.resume_reading()

    def feed_eof(self) -> None:
        super().feed_eof()
        if self._ended is not None and not self._ended.done():
            self._ended.set_result(None)

    def set_exception(self, exc: Exception) -> None:
        super().set_exception(exc)
        if self._ended is not None and not self._ended.done():
            self._ended.set_exception(exc)

    async def _acp_attach(self, conn: Connection) -> None:
        """Hand every chunk to ``conn`` from now on, until the end of input (called by the connection)."""
        self._ended = asyncio.get_running_loop().create_future()
        self._held: deque[bytes] = deque()
        buffered = bytes(self._buffer)
        self._buffer.clear()
        self._maybe_resume_transport()
        exc, eof = self._exception, self._eof
        self._connection = conn
        try:
            if buffered:
                self.feed_data(buffered)
            if exc is not None:
                raise exc
            if not eof:
                await self._ended
            while self._draining is not None:  # what came before the end goes first
                await asyncio.shield(self._draining)
            conn._feed_eof()
        finally:
            self._connection = None


class _AgentProcessProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's protocol for a subprocess, but the agent's stdout is a :class:`PipeReader`."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self._acp_limit = limit
        self._acp_loop = loop

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert isinstance(transport, asyncio.SubprocessTransport)
        stdout = transport.get_pipe_transport(1)
        if stdout is not None:
            reader = PipeReader(limit=self._acp_limit, loop=self._acp_loop)
            reader.set_transport(stdout)
            self.stdout = reader


async def pipe_streams(
    read_pipe: Any, write_pipe: Any, limit: int = _READ_CHUNK
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """An asyncio reader/writer pair over two file objects: pipes, sockets, ttys or regular files.

    The reader is a :class:`PipeReader`; a regular file to read from is
    read in a thread, one to write to is written directly.
    """
    loop = asyncio.get_running_loop()
    reader = PipeReader(limit=limit)
    protocol = asyncio.StreamReaderProtocol(reader)
    try:
        await loop.connect_read_pipe(lambda: protocol, read_pipe)
    except ValueError:  # a regular file: read it in a thread
        fd = read_pipe.fileno()

        def feed() -> None:
            while True:
                data = os.read(fd, _READ_CHUNK)
                if not data:
                    loop.call_soon_threadsafe(reader.feed_eof)
                    return
                loop.call_soon_threadsafe(reader.feed_data, data)

        loop.run_in_executor(None, feed)
    try:
        w_transport, w_protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin,
            write_pipe,
        )
    except ValueError:  # a regular file: write it directly
        return reader, _FileWriter(write_pipe.fileno())  # type: ignore[return-value]
    writer = asyncio.StreamWriter(w_transport, w_protocol, None, loop)
    return reader, writer


async def stdio_streams(
    limit: int = _READ_CHUNK,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """The process's own stdin and stdout as an asyncio reader/writer pair (see :func:`pipe_streams`)."""
    return await pipe_streams(sys.stdin.buffer, sys.stdout.buffer, limit)


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


async def serve(
    reader: Reader,
    writer: Writer,
    handler: Handler,
    *,
    versions: Sequence[str] | None = None,
    max_line_size: int = DEFAULT_MAX_LINE_SIZE,
) -> None:
    """Run an agent on a reader/writer pair until the client goes away."""
    conn = AgentConnection(
        reader, writer, handler, versions=versions, max_line_size=max_line_size
    )
    async with conn:
        await conn.wait_closed()


async def serve_stdio(
    handler: Handler,
    *,
    versions: Sequence[str] | None = None,
    max_line_size: int = DEFAULT_MAX_LINE_SIZE,
) -> None:
    """Run an agent on this process's stdin/stdout until the client closes stdin."""
    reader, writer = await stdio_streams()
    await serve(reader, writer, handler, versions=versions, max_line_size=max_line_size)


@contextlib.asynccontextmanager
async def spawn_agent(
    command: Sequence[str],
    handler: Handler = None,
    *,
    versions: Sequence[str] | None = None,
    max_line_size: int = DEFAULT_MAX_LINE_SIZE,
    strict_capabilities: bool = False,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stderr: int | None = None,
    exit_timeout: float = 5.0,
) -> AsyncIterator[ClientConnection]:
    """Start the agent ``command`` and yield a :class:`ClientConnection` to it over its stdin/stdout.

    The process is ``conn.process``. On leaving the block its stdin is
    closed; an agent that has not exited ``exit_timeout`` seconds later is
    terminated, then killed.
    """
    if not command:
        raise ValueError("spawn_agent needs a command")
    loop = asyncio.get_running_loop()
    # what asyncio.create_subprocess_exec does, with a PipeReader for stdout
    transport, protocol = await loop.subprocess_exec(
        lambda: _AgentProcessProtocol(limit=_READ_CHUNK, loop=loop),
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        env=dict(env) if env is not None else None,
        cwd=cwd,
    )
    process = asyncio.subprocess.Process(transport, protocol, loop)
    assert process.stdin is not None and process.stdout is not None
    conn = ClientConnection(
        process.stdout,
        process.stdin,
        handler,
        versions=versions,
        max_line_size=max_line_size,
        strict_capabilities=strict_capabilities,
    )
    conn.process = process
    try:
        async with conn:
            yield conn
    finally:
        await _stop(process, exit_timeout)


async def _stop(process: asyncio.subprocess.Process, timeout: float) -> None:
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()
    for step in (None, process.terminate, process.kill):
        if step is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                step()
        try:
            await asyncio.wait_for(process.wait(), timeout)
            return
        except asyncio.TimeoutError:
            continue
