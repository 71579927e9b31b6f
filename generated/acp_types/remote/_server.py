"""The server: one ASGI application serving both profiles of the RFD on one endpoint.

:class:`AcpAsgiApp` checks every request first (the path, a browser's ``Origin``, the ``Host``
without a token, the bearer token with one), keeps the open connections of both profiles, and hands
each request to its profile: Streamable HTTP (``_http.py``: POST, SSE GET, DELETE) or WebSocket
(``_websocket.py``: a GET with ``Upgrade: websocket``). A connection of either (``_remote.py``) runs
the agent on a transport of its profile: one ``App`` for all, or a handler from the factory for each.

Hand-written: the source is runtime/remote/_server.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

from .. import connection as _connection
from ._asgi import Headers, Receive, Scope, Send, send_text
from ._http import HttpRemote, StreamableHttp
from ._limits import PATH, Limits, host_of, is_loopback
from ._remote import Remote, ServerTransport
from ._websocket import WebSocket

_R = TypeVar("_R", bound=Remote)


def principal_of(token: str) -> str:
    """A stable name for who holds ``token`` that does not reveal it."""
    return "token:" + hashlib.sha256(token.encode()).hexdigest()[:16]


class AcpAsgiApp:
    """The ASGI application of a remote agent: mount it anywhere, or run it with :func:`serve`.

    ``target``: an ``acp_types.agent.App`` (class or instance; one instance serves every
    connection, so its sessions are shared and a client that reconnects resumes them) or a
    connection handler factory (called once per connection, as by ``connection.serve``).
    ``token``: the bearer token every request must carry (checked in constant time); without one,
    only a loopback ``Host`` is served (against DNS rebinding) unless ``allowed_hosts`` lists more.
    ``allowed_origins``: browser origins accepted besides loopback pages. ``options`` go to each
    agent connection (``versions``, ``strict_capabilities``, its limits).
    """

    def __init__(
        self,
        target: Any,
        *,
        token: str | None = None,
        allowed_origins: Sequence[str] = (),
        allowed_hosts: Sequence[str] = (),
        limits: Limits | None = None,
        path: str = PATH,
        **options: Any,
    ) -> None:
        from ..agent import App

        if "max_line_size" in options:
            raise TypeError(
                "max_line_size is the stdio transport's: a remote message is bounded by Limits.max_message_size"
            )
        if isinstance(target, type) and issubclass(target, App):
            target = target()
        self._app: App | None = target if isinstance(target, App) else None
        if self._app is not None:
            from ..agent import check

            check(
                self._app, options.get("versions", ("v1", "v2"))
            )  # a broken promise stops the start, not a connection
        elif not callable(target):
            raise TypeError(f"an App or a connection handler factory is needed, not {target!r}")
        self._factory = target
        self._token = token.encode() if token is not None else None
        self.principal = principal_of(token) if token is not None else "remote:anonymous"
        self._origins = {o.rstrip("/").lower() for o in allowed_origins}
        self._hosts = {h.lower() for h in allowed_hosts}
        self.limits = limits if limits is not None else Limits()
        self.path = path
        self._options = options
        self._connections: dict[str, Remote] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._streamable_http = StreamableHttp(self)
        self.stopping = False

    @property
    def connections(self) -> int:
        """The connections open now, of both profiles."""
        return len(self._connections)

    async def run_agent(self, transport: ServerTransport, principal: str | None) -> None:
        if self._app is not None:
            from ..agent import serve as serve_app

            await serve_app(self._app, transport=transport, principal=principal, **self._options)
        else:
            await _connection.serve_transport(transport, self._factory, **self._options)

    def forget(self, remote: Remote) -> None:
        if self._connections.get(remote.id) is remote:
            del self._connections[remote.id]

    async def close(self) -> None:
        """End every connection (what a server shutting down does: WebSockets are closed with 1001)."""
        self.stopping = True
        for remote in list(self._connections.values()):
            remote.close()
        if self._sweeper is not None:
            self._sweeper.cancel()

    # -- ASGI

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind not in ("http", "websocket"):
            return
        headers = Headers(scope)
        refusal = self._refuse(scope, headers)
        if kind == "websocket":
            del headers  # not kept while the connection lasts
            socket = WebSocket(self, scope, receive, send)
            await socket.run(refusal)
            return
        if refusal is not None:
            await send_text(send, *refusal)
            return
        await self._streamable_http.handle(scope, receive, send, headers)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _refuse(self, scope: Scope, headers: Headers) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        """The status and text a request is refused with before anything else, or None."""
        path = scope.get("path", "")
        root = scope.get("root_path", "")
        if path != self.path and path != root + self.path:
            return 404, f"Not Found: ACP is served on {self.path}", []
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin):
            return 403, "Forbidden: this Origin is not allowed", []
        if self._token is None:
            host = headers.get("host")
            if host is not None and not is_loopback(host_of(host)) and host_of(host).lower() not in self._hosts:
                return 403, "Forbidden: this Host is not served", []
        else:
            scheme, _, given = (headers.get("authorization") or "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self._token):
                return 401, "Unauthorized: a bearer token is required", [(b"www-authenticate", b'Bearer realm="acp"')]
        return None

    def _origin_allowed(self, origin: str) -> bool:
        if origin.rstrip("/").lower() in self._origins:
            return True
        host = urlsplit(origin).hostname
        return host is not None and is_loopback(host)

    def find(self, cid: str) -> Remote | None:
        """The open connection ``cid``, of either profile."""
        return self._connections.get(cid)

    def new_remote(self, kind: type[_R]) -> _R | None:
        """A new connection of a profile (``HttpRemote``, ``WebSocketRemote``); None at ``max_connections``."""
        if len(self._connections) >= self.limits.max_connections:
            return None
        remote = kind(self)
        self._connections[remote.id] = remote
        if isinstance(remote, HttpRemote) and self._sweeper is None:
            self._sweeper = asyncio.ensure_future(self._sweep())
        return remote

    async def _sweep(self) -> None:
        """End the Streamable HTTP connections idle past ``idle_timeout``."""
        loop = asyncio.get_running_loop()
        period = min(self.limits.idle_timeout / 4, 30.0)
        while True:
            await asyncio.sleep(period)
            now = loop.time()
            for remote in list(self._connections.values()):
                if remote.idle_past(now):
                    remote.close(f"idle for {self.limits.idle_timeout} s")
