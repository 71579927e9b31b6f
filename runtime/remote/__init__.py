"""Remote agents: ACP over the RFD "Streamable HTTP & WebSocket Transport", server and client.

Both profiles share one endpoint, ``/acp``: Streamable HTTP (a POST per client message, SSE streams
for the agent's, DELETE to end) and WebSocket (one JSON-RPC message per text frame). The connection
on top is the one stdio has: negotiation, typed peers, cancellation, its limits.

- Serve: ``python -m acp_types.remote serve TARGET --listen HOST:PORT``, or from Python
  :func:`serve` / :func:`start_server`, or mount :class:`AcpAsgiApp` in any ASGI server.
- Connect: ``async with remote.connect("ws://127.0.0.1:8765/acp", handler) as conn:`` (``ws://``,
  ``wss://``, ``http://``, ``https://``), typed like ``connection.spawn_agent``.

Secure by default: :func:`serve` listens on loopback; on any other address it refuses to start
without a bearer token (checked in constant time) or ``insecure=True``. Without a token only a
loopback ``Host`` is served; a browser's ``Origin`` must be a loopback page or be listed (both
against DNS rebinding). Limits, with what a peer sees at each: :class:`Limits` and docs/remote.md.

This package needs the ``remote`` extra: ``pip install 'acp-types[remote]'`` (uvicorn serves,
websockets and httpx connect).

Hand-written: the source is runtime/remote/__init__.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

try:
    import httpx as _httpx  # noqa: F401
    import uvicorn as _uvicorn  # noqa: F401
    import websockets as _websockets  # noqa: F401
except ImportError as exc:
    raise ImportError(
        f"acp_types.remote needs the 'remote' extra: pip install 'acp-types[remote]' ({exc.name} is missing)"
    ) from exc

import asyncio
import contextlib
import socket
import ssl as _ssl
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ._client import _connect
from ._limits import HEADER_CONNECTION_ID, HEADER_SESSION_ID, PATH, Limits, is_loopback
from ._server import AcpAsgiApp

if TYPE_CHECKING:
    from ..connection import _Options

__all__ = [
    "HEADER_CONNECTION_ID",
    "HEADER_SESSION_ID",
    "PATH",
    "AcpAsgiApp",
    "Limits",
    "RemoteServer",
    "Refused",
    "Stopped",
    "connect",
    "is_loopback",
    "serve",
    "start_server",
]


class Stopped(Exception):
    """A signal stopped the server while it was starting."""


class Refused(PermissionError):
    """A server that would listen beyond loopback with no token and no ``insecure=True``."""


def check_exposure(host: str, token: str | None, insecure: bool) -> None:
    """Raise :class:`Refused` for a non-loopback ``host`` with neither a token nor ``insecure``."""
    if not is_loopback(host) and token is None and not insecure:
        raise Refused(
            f"refusing to listen on {host}, which is not loopback, without a token: "
            "give a bearer token (--token-env VAR) or say --insecure"
        )


class _HeaderDeadline(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, with a deadline on each request's line and headers.

    uvicorn times out neither a connection that sends nothing nor headers that
    dribble in (each byte cancels its keep-alive timer), so a client could
    hold sockets up to ``max_sockets`` and lock everyone else out. From the
    socket's opening, and from each answered request, the next request's head
    has ``header_timeout`` seconds to arrive whole; then the socket is closed.
    A body is bounded apart (``request_timeout``); an upgraded WebSocket is
    no longer this protocol's.
    """

    header_timeout = 10.0  # set per server by a subclass (see start_server)

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._head: Any = None
        self._deadline: asyncio.TimerHandle | None = None
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        self._head = self.scope
        self._deadline = self.loop.call_later(self.header_timeout, self._late)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _late(self) -> None:
        self._deadline = None
        if self.scope is self._head:  # no request has begun since the deadline was armed
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.scope is not self._head:  # a request's head arrived whole
            self._disarm()

    def on_response_complete(self) -> None:
        answered = self.scope
        super().on_response_complete()  # which may begin a pipelined request
        if self.scope is answered and not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


class _Server(uvicorn.Server):
    """uvicorn's server, ending the ACP connections first when it stops (an open SSE stream would hold it)."""

    acp_app: AcpAsgiApp | None = None

    async def shutdown(self, sockets: Any = None) -> None:
        if self.acp_app is not None:
            await self.acp_app.close()
        await super().shutdown(sockets)


class RemoteServer:
    """A running server: its ASGI app (``app``), where it listens (``host``, ``port``, ``url``)."""

    def __init__(self, app: AcpAsgiApp, task: asyncio.Task[None], host: str, port: int, tls: bool) -> None:
        self.app = app
        self._task = task
        self.host = host
        self.port = port
        scheme = "https" if tls else "http"
        shown = f"[{host}]" if ":" in host else host
        self.url = f"{scheme}://{shown}:{port}{app.path}"
        """The endpoint's URL (``http(s)://``; the same with ``ws(s)://`` for WebSocket)."""

    @property
    def ws_url(self) -> str:
        return "ws" + self.url[4:]

    async def wait(self) -> None:
        """Wait until the server stops (a SIGINT or SIGTERM stops it)."""
        await asyncio.shield(self._task)


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (a name, an IPv4 or an IPv6 address); ``OSError`` saying where."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            sock.listen(1024)
        except OSError:
            sock.close()
            raise
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


@contextlib.asynccontextmanager
async def start_server(
    target: Any,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    token: str | None = None,
    insecure: bool = False,
    allowed_origins: Sequence[str] = (),
    allowed_hosts: Sequence[str] = (),
    ssl_certfile: str | None = None,
    ssl_keyfile: str | None = None,
    limits: Limits | None = None,
    log_level: str = "warning",
    **options: Any,
) -> AsyncIterator[RemoteServer]:
    """Serve ``target`` (an ``App`` class or instance, or a connection handler factory) while the block runs.

    ``port=0`` picks a free port (``server.port``). TLS: ``ssl_certfile`` and ``ssl_keyfile`` (PEM).
    ``options`` go to each agent connection (``versions``, ``strict_capabilities``, its limits).
    Raises :class:`Refused` for a non-loopback ``host`` with neither ``token`` nor ``insecure``.
    """
    check_exposure(host, token, insecure)
    limits = limits if limits is not None else Limits()
    hosts = list(allowed_hosts)
    if not is_loopback(host) and host not in ("0.0.0.0", "::"):
        hosts.append(host)
    app = AcpAsgiApp(
        target, token=token, allowed_origins=allowed_origins, allowed_hosts=hosts, limits=limits, **options
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        ssl_certfile=ssl_certfile,
        ssl_keyfile=ssl_keyfile,
        http=type("_Http", (_HeaderDeadline,), {"header_timeout": limits.header_timeout}),
        ws="websockets-sansio",
        ws_max_size=limits.max_message_size,
        ws_ping_interval=limits.ping_interval,
        ws_ping_timeout=limits.ping_interval,
        ws_per_message_deflate=False,
        lifespan="on",
        log_level=log_level,
        access_log=False,
        server_header=False,
        limit_concurrency=limits.max_sockets,
        timeout_keep_alive=5,
    )
    server = _Server(config)
    server.acp_app = app
    sock = _bind(host, port)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
            raise Stopped("the server was stopped (SIGINT or SIGTERM) before it listened")
        await asyncio.sleep(0.01)
    running = RemoteServer(app, task, host, sock.getsockname()[1], ssl_certfile is not None)
    try:
        yield running
    finally:
        server.should_exit = True
        await app.close()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def serve(target: Any, host: str = "127.0.0.1", port: int = 8765, **kwargs: Any) -> None:
    """Serve ``target`` on ``http://host:port/acp`` (and ``ws://``) until cancelled; see :func:`start_server`."""
    async with start_server(target, host, port, **kwargs) as server:
        await server.wait()


if TYPE_CHECKING:  # typed like spawn_agent: one overload per version, generated (acp_types/remote/_typed.pyi)

    class _ConnectOptions(_Options, total=False):
        token: str | None
        headers: Mapping[str, str] | None
        ssl: _ssl.SSLContext | None
        max_message_size: int
        open_timeout: float

    from acp_types.remote._typed import connect as connect
else:
    connect = contextlib.asynccontextmanager(_connect)
    connect.__name__ = connect.__qualname__ = "connect"
    connect.__doc__ = """Connect to the remote agent at ``url`` and yield a ``ClientConnection`` to it, as ``spawn_agent`` does.

    ``ws://`` and ``wss://`` use the WebSocket profile, ``http://`` and ``https://`` Streamable HTTP;
    a URL without a path means ``/acp``. ``token`` is sent as ``Authorization: Bearer``, ``headers``
    with every request; ``ssl`` is the TLS context for ``wss``/``https``. ``max_message_size`` bounds
    one message from the server. The other options are the connection's (``versions``, limits).
    Leaving the block closes the connection (Streamable HTTP: a DELETE). A server that cannot be
    reached or refuses is ``connection.ConnectionClosed`` with its status and text.
    """
