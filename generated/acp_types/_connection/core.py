"""The JSON-RPC connection over a :class:`~acp_types.connection.Transport`: dispatch, flow limits, answers.

What the module documentation of :mod:`acp_types.connection` describes is
done here, on whole messages: the transport frames them and bounds their
size, :mod:`.negotiation` settles the version, :mod:`.outgoing` keeps the
requests this side sent, :mod:`.limits` counts and logs.

Hand-written: the source is runtime/_connection/core.py, which the generator
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
import sys
from collections import deque
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, Generic, Literal, cast

from pydantic import BaseModel, ValidationError
from typing_extensions import Self, TypeVar

from acp_types._protocol import RequestId

from .._errors import (
    CapabilityNotAdvertised,
    ConnectionClosed,
    MethodNotImplemented,
    RequestError,
    ResponseTooLarge,
)
from .._jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    Batch,
    ErrorResponse,
    InvalidResult,
    MessageError,
    Notification,
    Request,
    Response,
)
from .._outbound import InvalidOutbound, check_result
from .._runtime import MethodSpec, is_extension, to_wire, type_name, wire_json
from .limits import (
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MAX_QUEUED,
    HOLD_LIMIT,
    OFF_LOOP_ABOVE,
    WRITE_HIGH_WATER,
    PeerLog,
    batch_longer_than,
    log,
    sniff_oversized,
)
from .negotiation import CANCEL_REQUEST, Negotiation, Version
from .outgoing import Outgoing, OutRequest
from .stdio import DEFAULT_MAX_LINE_SIZE, Reader, StdioTransport, Writer
from .transport import Oversized, Transport

__all__ = ["REQUEST_CANCELLED", "Connection", "Handler"]

REQUEST_CANCELLED = -32800

Handler = Any
"""A handler object, or a class or function that takes the connection and returns one."""

# The types a connection's members have once the version is settled (see sides.py).
_PeerT = TypeVar("_PeerT", covariant=True, default=Any)
_InitT = TypeVar("_InitT", covariant=True, default=Any)
_HandlerT = TypeVar("_HandlerT", covariant=True, default=Any)


def _is_factory(handler: Handler) -> bool:
    return inspect.isclass(handler) or inspect.isfunction(handler) or inspect.ismethod(handler)


_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


def _dumps(value: Any) -> bytes:
    """Strict JSON: ``ValueError`` for NaN or infinities, ``TypeError`` for anything not JSON."""
    return _encode(value).encode("utf-8")


@functools.lru_cache(maxsize=256)
def _method_json(method: str) -> bytes:
    """``,"method":<method>,"params":`` as it goes before the params of a request or a notification."""
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


class _TooLongBatch:
    """A batch of more entries than ``max_batch``: answered, never parsed."""

    def __init__(self, count: int) -> None:
        self.count = count


class Connection(Generic[_PeerT, _InitT, _HandlerT]):
    """One side of an ACP connection over a reader/writer pair, or over any transport (:meth:`on_transport`).

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

    _reader: Reader | None = None
    _writer: Writer | None = None

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
        self._reader = reader
        self._writer = writer
        self._setup(
            StdioTransport(reader, writer, max_line_size),
            handler,
            versions=versions,
            strict_capabilities=strict_capabilities,
            max_in_flight=max_in_flight,
            max_queued=max_queued,
            max_batch=max_batch,
            close_timeout=close_timeout,
        )

    @classmethod
    def _on_transport(cls, transport: Transport, handler: Handler = None, **options: Any) -> Any:
        conn = cls.__new__(cls)
        conn._setup(transport, handler, **options)
        return conn

    def _setup(
        self,
        transport: Transport,
        handler: Handler,
        *,
        versions: Sequence[str] | None = None,
        strict_capabilities: bool = False,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        max_queued: int = DEFAULT_MAX_QUEUED,
        max_batch: int = DEFAULT_MAX_BATCH,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        for name, value in (("max_in_flight", max_in_flight), ("max_queued", max_queued), ("max_batch", max_batch)):
            if value < 1:
                raise ValueError(f"{name} must be positive")
        self._negotiation = Negotiation(self.default_versions if versions is None else versions)
        self._versions = self._negotiation.versions
        self._version = self._negotiation.first
        self.settled = False
        """Whether ``initialize`` has settled the version."""
        self._transport = transport
        self.max_line_size: int | None = getattr(transport, "max_line_size", None)
        """The stdio transport's limit on a line (``None`` on a transport without lines)."""
        self.max_in_flight = max_in_flight
        self.max_queued = max_queued
        self.max_batch = max_batch
        self.close_timeout = close_timeout
        self.strict_capabilities = strict_capabilities
        self.peer_initialize: _InitT | None = None
        """The peer's side of ``initialize``: the request (agent) or the response (client) model."""
        self._out = Outgoing()
        self._pending = self._out.pending  # what the parser reads of it
        self._in: dict[RequestId, asyncio.Task[None]] = {}
        self._batches: set[asyncio.Task[None]] = set()
        # the notification handler's queue: notifications, ordered outcomes, None to stop
        self._queue: deque[Any] = deque()
        self._queued = 0  # notifications in _queue
        self._wakeup = asyncio.Event()
        # what waits for room, with its message's size: requests and batches; notifications and
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
        self._peer_log = PeerLog()
        self._send_now = transport.send
        self._buffered = transport.buffered
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
    def transport(self) -> Transport:
        """What the connection's messages travel by."""
        return self._transport

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

    def _settle(self, version: Version) -> None:
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
            await asyncio.wait_for(self._transport.close(), max(deadline - loop.time(), 0.01))
        self._closed.set()

    def _fail_pending(self, reason: str) -> None:
        self._out.fail_all(
            lambda rid, out: ConnectionClosed(f"{reason} before {out.method!r} (request {rid!r}) was answered")
        )

    # -- writing ----------------------------------------------------------

    def _write(self, data: bytes) -> bool:
        """Send one message now, without waiting; ``False`` once the transport is closed."""
        if self._writer_closed:
            return False
        self._send_now(data)
        return True

    def _writer_full(self) -> bool:
        """Whether the peer has more than ``WRITE_HIGH_WATER`` bytes of ours to read: the one backpressure rule."""
        return self._buffered() > WRITE_HIGH_WATER

    async def _drain(self) -> None:
        async with self._drain_lock:
            try:
                await self._transport.drain()
            except (ConnectionError, OSError) as exc:
                raise ConnectionClosed(f"the peer is gone: {exc}") from exc

    async def _send(self, data: bytes) -> None:
        if not self._write(data):
            raise ConnectionClosed(self._close_reason)
        if self._writer_full():
            await self._drain()

    def _reply(self, data: bytes, collect: list[bytes] | None) -> None:
        """Send one answer, or add it to the answers of the batch being handled."""
        if collect is not None:
            collect.append(data)
        elif not self._write(data):
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
        await self._send(b'{"jsonrpc":"2.0"' + _method_json(method) + body + b"}")

    async def request(self, method: str, params: Any) -> Any:
        """Send a request and return its result model; an error answer raises :class:`RequestError`.

        The connection ending first raises :class:`ConnectionClosed`; an
        answer longer than the transport's limit raises :class:`ResponseTooLarge`.
        Cancelling the awaiting task: see the module documentation.
        """
        body = self._params_body(self._spec(method, "request"), method, params)
        return await self._request(method, body)

    async def _request(self, method: str, body: bytes) -> Any:
        if self._closing:
            raise ConnectionClosed(self._close_reason)
        self.start()
        rid, out = self._out.add(method, asyncio.current_task() is not self._worker)
        try:
            await self._send(b'{"jsonrpc":"2.0","id":' + str(rid).encode() + _method_json(method) + body + b"}")
            return await out.future
        except asyncio.CancelledError:
            if self._out.take(rid) is not None and not self._closing and self._version.sends_cancel:
                self._write(
                    b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":' + str(rid).encode() + b"}}"
                )
            raise
        finally:
            self._out.discard(rid, out)

    # -- reading ----------------------------------------------------------

    async def _read_loop(self) -> None:
        reason = "the peer closed the connection (end of input)"
        try:
            receive = self._transport.receive
            while True:
                message = await receive()
                if message is None:
                    break
                if type(message) is bytes and len(message) <= OFF_LOOP_ABOVE:
                    self._route(self._parse(message), len(message))
                else:
                    await self._take(message)
                if self._writer_full() or self._held_size > HOLD_LIMIT:
                    await self._wait_room()
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

    async def _take(self, message: bytes | Oversized) -> None:
        """Handle an oversized message, or a long one: parsed in a worker thread, so other sessions get turns."""
        if isinstance(message, Oversized):
            self._oversized(message)
        else:
            # the parse only reads the table of outgoing requests, whose operations are atomic
            message = bytes(message)
            self._route(await asyncio.to_thread(self._parse, message), len(message))

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

    def _parse(self, message: bytes) -> Any:
        """What ``message`` is: a message, a batch, a :class:`MessageError` or ``None`` (blank)."""
        if not message or message.isspace():
            return None
        if message[:1] == b"[" or (message[:1].isspace() and message.lstrip()[:1] == b"["):
            count = batch_longer_than(message, self.max_batch)
            if count is not None:
                return _TooLongBatch(count)
        try:
            return self._version.parse(message, pending=self._pending)
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

    def _oversized(self, message: Oversized) -> None:
        limit = message.limit
        rid, is_response = sniff_oversized(message, self._out.__contains__)
        if not is_response:
            self._peer_log("oversized messages", logging.WARNING, "skipped a message longer than %d bytes", limit)
            self._answer_error(
                None if rid is ... else rid, INVALID_REQUEST, f"the message is longer than {limit} bytes"
            )
            return
        self._peer_log(
            "oversized responses", logging.WARNING, "skipped a response longer than %d bytes (id %r)", limit, rid
        )
        for one in [rid] if rid is not ... else list(self._out):
            out = self._out.take(one)
            if out is not None:
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
            out = self._out.take(exc.id) if exc.id is not None else None
            if out is None:
                self._peer_log("malformed responses", logging.WARNING, "dropped a malformed response: %s", exc.message)
            elif isinstance(exc, InvalidResult) and out.method == "initialize":
                self._resolve(out, self._negotiation.client_answer(self._version, exc))
            else:
                self._resolve(out, exc)
            return
        if kind == "notification":
            self._peer_log(
                "malformed notifications", logging.WARNING, "dropped a malformed notification: %s", exc.message
            )
            return
        if kind == "request" and exc.method == "initialize" and exc.code == INVALID_PARAMS and self._negotiating():
            self._initialize(exc, collect)
            return
        self._answer_error(exc.id, exc.code, exc.message, collect=collect)

    # -- dispatch ---------------------------------------------------------

    def _negotiating(self) -> bool:
        """Whether a client's ``initialize`` now settles the version (an agent's first one)."""
        return self.side == "agent" and not self.settled

    def _initialize(self, first: Request | MessageError, collect: list[bytes] | None) -> asyncio.Task[None] | None:
        chosen, msg = self._negotiation.agent_initialize(first, self._version)
        if isinstance(msg, MessageError):
            self._answer_error(msg.id, msg.code, msg.message, collect)
            return None
        self._settle(chosen)
        self.peer_initialize = msg.params
        return self._start_request(msg, collect)

    def _on_response(self, msg: Response | ErrorResponse) -> None:
        out = self._out.take(msg.id)
        if out is None:
            self._peer_log(
                "responses to unknown ids", logging.WARNING, "dropped a response to unknown request id %r", msg.id
            )
        elif isinstance(msg, ErrorResponse):
            error = msg.error
            self._resolve(out, RequestError(error.code, error.message, error.data))
        elif out.method == "initialize":
            self._resolve(out, self._negotiation.client_answer(self._version, msg.result))
        else:
            self._resolve(out, (None, msg.result))

    def _resolve(self, out: OutRequest, outcome: Any) -> None:
        # outcome: an exception, or (version to settle or None, result)
        if not out.ordered:
            self._complete(out, outcome)
        elif self._held_notes:
            self._hold(self._held_notes, (out, outcome), 0)
        elif self._queue or self._busy:
            self._enqueue((out, outcome))
        else:
            self._complete(out, outcome)

    def _complete(self, out: OutRequest, outcome: Any) -> None:
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
        if msg.method == "initialize" and self.side == "agent":
            if self._negotiating():
                return self._initialize(msg, collect)
            self.peer_initialize = msg.params  # a repeated initialize: the latest one is the client's word
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
