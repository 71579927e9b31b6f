"""Starting an app: :func:`check` its promises, then :func:`serve` it on a stream pair or :func:`serve_stdio`.

Hand-written: the source is runtime/agent/_serve.py, copied into the package unchanged.
"""

from __future__ import annotations

import contextlib
import getpass
import importlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any, cast

from ..connection import AgentConnection, Reader, Transport, Writer, pipe_streams
from ..store import StoreError
from ._app import App
from ._session import speaker_for
from ._surface import _Surface
from ._values import PromiseBroken

_LIBRARY = {
    "session_new",
    "session_close",
    "session_cancel",
    "session_load",
    "session_resume",
    "session_set_config_option",
    "session_set_mode",
    "authenticate",
    "auth_login",
    "initialize",
}


def check(app: App, versions: Sequence[str] = ("v1", "v2")) -> None:
    """Refuse an app whose advertised capabilities promise a handler it does not have (:class:`PromiseBroken`)."""
    if type(app).prompt is App.prompt:
        raise PromiseBroken(f"{type(app).__name__} does not implement prompt(), which session/prompt needs")
    for version in versions:
        module = importlib.import_module(f"acp_types.{version}")
        allowed = importlib.import_module(f"acp_types.{version}.capabilities").method_allowed
        caps = app.capabilities(version)
        init = speaker_for(version).initialize_json(caps, app.name, app.version)
        response = module.METHODS["initialize"].validate_result(init)
        probe = _Surface(app, AgentConnection.__new__(AgentConnection))
        for name, spec in module.METHODS.items():
            if spec.side != "agent" or spec.capability is None:
                continue
            if not allowed(name, response):
                continue
            fn = getattr(probe, spec.handler, None)
            if fn is None:
                raise PromiseBroken(
                    f"{type(app).__name__} advertises {'.'.join(spec.capability[1:])} in ACP {version}, "
                    f"which promises {name}, but implements no handler {spec.handler!r}"
                )


def _local_principal() -> str:
    try:
        return f"local:{getpass.getuser()}"
    except Exception:  # no user name (a container without one): the uid, or one local user
        return f"local:{getattr(os, 'getuid', lambda: '')()}"


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[int]:
    """Keep fd 1 for the wire and point ``sys.stdout`` (and fd 1 for children) at stderr."""
    sys.stdout.flush()
    wire = os.dup(1)
    saved = sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        yield wire
    finally:
        sys.stdout = saved
        os.dup2(wire, 1)
        os.close(wire)


async def serve(
    app: App,
    reader: Reader | None = None,
    writer: Writer | None = None,
    *,
    transport: Transport | None = None,
    versions: Sequence[str] = ("v1", "v2"),
    strict_capabilities: bool = False,
    principal: str | None = None,
    **options: Any,
) -> None:
    """Run ``app`` on a reader/writer pair, or on ``transport``, until the client goes away.

    Give exactly one of ``reader`` and ``writer`` (both) or ``transport`` (any
    :class:`acp_types.connection.Transport`: a WebSocket, an HTTP stream...);
    ``options`` go to the connection.

    ``strict_capabilities=True`` refuses, before sending, a client method the
    client did not advertise (``connection.CapabilityNotAdvertised`` in the app).
    ``principal`` names who the peer is (e.g. from a bearer token a transport
    checked): it reaches the sessions made under that name, from any connection.
    ``None``, the default, makes the connection a principal of its own (until
    :meth:`App.authenticate` returns one).
    """
    if transport is None:
        if reader is None or writer is None:
            raise TypeError("serve() needs a reader and a writer, or a transport")
    elif reader is not None or writer is not None:
        raise TypeError("serve() takes a reader and a writer, or a transport, not both")
    check(app, versions)
    await app._store()  # a store that cannot be used fails here, before the client is answered
    app._users += 1
    try:
        if transport is not None:
            conn = AgentConnection.on_transport(
                transport, app.handler, versions=versions, strict_capabilities=strict_capabilities, **options
            )
        else:
            assert reader is not None and writer is not None
            conn = AgentConnection(
                reader, writer, app.handler, versions=versions, strict_capabilities=strict_capabilities, **options
            )
        surface = cast(_Surface, conn.handler)
        if principal is not None:
            surface.principal = principal
        async with conn:
            await conn.wait_closed()
        for session in [s for s in app.sessions.values() if s._conn is conn]:
            await surface._detach(session)
    finally:
        app._users -= 1
        if not app._users:
            await app.aclose()


async def serve_stdio(
    app: App,
    *,
    versions: Sequence[str] = ("v1", "v2"),
    protect_stdout: bool = True,
    strict_capabilities: bool = False,
    principal: str | None = None,
    **options: Any,
) -> None:
    """Run ``app`` on stdin/stdout; with ``protect_stdout`` what the app prints goes to stderr, not the wire.

    The peer is the local user who started the process: its principal is
    ``local:<user name>`` unless ``principal`` says otherwise.
    """
    options["strict_capabilities"] = strict_capabilities
    options["principal"] = principal if principal is not None else _local_principal()
    check(app, versions)
    try:
        await app._store()
    except StoreError as exc:  # one line and an exit code, never a traceback on the wire
        raise SystemExit(f"{app.name}: {exc}") from None
    if not protect_stdout:
        reader, writer = await pipe_streams(sys.stdin.buffer, sys.stdout.buffer)
        await serve(app, reader, writer, versions=versions, **options)
        return
    with _stdout_to_stderr() as wire, open(wire, "wb", buffering=0, closefd=False) as out:
        reader, writer = await pipe_streams(sys.stdin.buffer, out)
        await serve(app, reader, writer, versions=versions, **options)
