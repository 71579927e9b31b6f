"""ACP connections: JSON-RPC over a transport (newline-delimited JSON on a reader/writer pair by default), on asyncio alone.

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

Transports: a connection reads and writes whole messages through a
:class:`Transport` (``receive``, ``send``, ``buffered``, ``drain``,
``close``), which frames them and bounds their size; a frame over its limit
comes as an :class:`Oversized` (its first and last bytes), answered as an
oversized line is above. ``AgentConnection(reader, writer, ...)`` is
``AgentConnection.on_transport(StdioTransport(reader, writer,
max_line_size), ...)``; :func:`serve_transport` runs an agent on any
transport. The stdio transport reads any reader with ``read(n)``
(``asyncio.StreamReader``, a :class:`PipeReader`, what :func:`pipe_streams`,
:func:`stdio_streams` and :func:`spawn_agent` make) and writes to anything
with ``write``, ``drain`` and ``close``; its buffer size is read from
``writer.transport`` when it has one.

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

The code is in ``acp_types._connection``, one module per part along a
message's path: ``transport`` (the interface), ``stdio`` (newline framing
and the line limit), ``pipes`` (OS pipes as a reader/writer), ``limits``,
``outgoing`` (the one table of requests sent), ``negotiation`` (the version,
in one place), ``core`` (dispatch and flow), ``sides`` (the typed agent and
client), ``process`` (:func:`spawn_agent`). This module is their public face.

Hand-written: the source is runtime/connection.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._connection.core import REQUEST_CANCELLED as REQUEST_CANCELLED
from ._connection.core import Connection
from ._connection.core import Handler as Handler
from ._connection.limits import (
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MAX_QUEUED,
    HOLD_LIMIT,
    LOG_BURST,
    LOG_WINDOW,
    OFF_LOOP_ABOVE,
    WRITE_HIGH_WATER,
)
from ._connection.limits import log as log
from ._connection.negotiation import CANCEL_REQUEST as CANCEL_REQUEST
from ._connection.negotiation import VERSIONS
from ._connection.pipes import PipeReader, PipeWriter, pipe_streams, stdio_streams
from ._connection.process import AgentProcess, spawn_agent
from ._connection.sides import AgentConnection, ClientConnection, serve, serve_stdio, serve_transport
from ._connection.stdio import DEFAULT_MAX_LINE_SIZE, StdioTransport
from ._connection.stdio import Reader as Reader
from ._connection.stdio import Writer as Writer
from ._connection.transport import Oversized, Transport
from ._errors import (
    CapabilityNotAdvertised,
    ConnectionClosed,
    MethodNotImplemented,
    RequestError,
    ResponseTooLarge,
    UnsupportedVersion,
    not_implemented,
)

if TYPE_CHECKING:  # the option sets, for wrappers typed like the connections
    from ._connection.sides import _Options as _Options
    from ._connection.sides import _SpawnOptions as _SpawnOptions
    from ._connection.sides import _TransportOptions as _TransportOptions

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
    "Oversized",
    "PipeReader",
    "PipeWriter",
    "RequestError",
    "ResponseTooLarge",
    "StdioTransport",
    "Transport",
    "UnsupportedVersion",
    "not_implemented",
    "pipe_streams",
    "serve",
    "serve_stdio",
    "serve_transport",
    "spawn_agent",
    "stdio_streams",
]
