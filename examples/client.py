"""An ACP client: spawns an agent, runs one prompt and prints the transcript as it streams.

    python examples/client.py [--prompt TEXT] [--protocol v2|v1] [--timeout S] [--auth METHOD_ID] [--yes]
                              -- AGENT COMMAND...
    python examples/client.py [same options] --url URL [--token-env VAR]

``--url`` reaches a remote agent instead of spawning one: ``ws://`` / ``wss://`` over
WebSocket, ``http://`` / ``https://`` over Streamable HTTP (``acp_types.remote``, the
``remote`` extra); ``--token-env VAR`` sends that variable's value as a bearer token.

It asks for ``--protocol`` (default v2) and accepts a v1 agent's answer. What
it prints comes from the session's state (``acp_types.client.SessionClient``
applies every update by the protocol's rules): the agent's text as it grows
(a message the agent rewrites is shown again), and a line for each tool
call whenever its status changes. The turn ends with v1's answer or v2's
``idle`` update. Permission requests are rejected unless ``--yes``.

Login: ``--auth METHOD_ID`` logs in with that method right after
``initialize``. Without it, when the agent asks for authentication (-32000)
the client picks a method it can complete: an environment-variable method
(``type: "env_var"``) whose variables are all set (the agent inherits them),
else the first method the agent handles itself (``type: "agent"``, which may
wait for a browser: ``--timeout`` bounds it); it never picks a terminal
method, and says what to set or pass when nothing fits.

``--timeout`` bounds every step: ``initialize``, the login and
``session/new`` each fail after that many seconds (one line, exit 1); the
turn is then cancelled (``session/cancel``) and given as long again to end.
Ctrl-C cancels too (a second Ctrl-C gives up). A peer's error, or an answer
that does not validate, is reported in one line (exit 1).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import _path  # noqa: F401  (acp_types from the checkout when not installed)

from acp_types import client, connection, session_state, v1, v2

T = TypeVar("T")


def touched(state: Any, notification: Any) -> list[Any]:
    """The transcript entries an update may have changed: the message or tool call it names, else the last entry."""
    update = getattr(notification, "update", None)
    message_id = getattr(update, "message_id", None)
    if isinstance(message_id, str):
        found = state.message(message_id)
        return [found] if found is not None else []
    tool_call_id = getattr(update, "tool_call_id", None)
    if isinstance(tool_call_id, str):
        call = state.tool_calls.get(tool_call_id)
        return [call] if call is not None else []
    last: list[Any] = state.transcript[-1:]  # a v1 chunk without an id continues (or starts) the last message
    return last


class Render:
    """Prints what changed in the session's state since the last update: agent text as it grows, tool call statuses.

    Only what the update touched is looked at, and a growing message costs
    what was appended (``Message.text_since``), not its whole text.
    """

    def __init__(self) -> None:
        # id() of a transcript entry -> (the entry, kept so its id is not reused; what was shown of it)
        self.shown: dict[int, tuple[Any, Any]] = {}
        self.line_start = True

    def out(self, text: str) -> None:
        if text:
            print(text, end="", flush=True)
            self.line_start = text.endswith("\n")

    def end_line(self) -> None:
        if not self.line_start:
            self.out("\n")

    def line(self, text: str) -> None:
        self.end_line()
        self.out(text + "\n")

    def __call__(self, state: Any, notification: Any) -> None:
        for entry in touched(state, notification):
            old = self.shown.get(id(entry), (None, None))[1]
            now: Any
            if isinstance(entry, session_state.ToolCall):
                now = f"[{entry.kind or 'tool'}] {entry.title or entry.tool_call_id}: {entry.status or 'pending'}"
                if now != old:
                    self.line(now)
            elif entry.role == "agent":
                now = (entry.revision, entry.text_length)
                if old is None or old[0] == entry.revision:
                    self.out(entry.text_since(old[1] if old else 0))
                else:  # the agent replaced the message's content
                    self.line(f"(rewritten) {entry.text}")
            else:
                continue
            self.shown[id(entry)] = (entry, now)


class StepTimedOut(Exception):
    """A step of the session did not finish within ``--timeout``."""


async def step(what: str, awaitable: Awaitable[T], timeout: float | None) -> T:
    """``awaitable``, bounded by ``timeout`` seconds (``StepTimedOut`` naming ``what``)."""
    try:
        return await asyncio.wait_for(awaitable, timeout)
    except asyncio.TimeoutError:
        raise StepTimedOut(f"no answer to {what} within {timeout:g} s") from None


def _field(method: Any, attribute: str, wire: str) -> Any:
    """A field of an auth method, typed or (an extra or unknown variant) as it came."""
    value = getattr(method, attribute, None)
    return value if value is not None else (getattr(method, "model_extra", None) or {}).get(wire)


def method_id(method: Any) -> str:
    return str(_field(method, "method_id", "methodId") or _field(method, "id", "id"))


def env_vars(method: Any) -> list[str]:
    """The variables an ``env_var`` method needs."""
    found = _field(method, "vars", "vars") or []
    names = (v.get("name") if isinstance(v, dict) else getattr(v, "name", None) for v in found)
    return [name if isinstance(name, str) else "" for name in names]


def choose_method(methods: list[Any], wanted: str | None) -> Any:
    """The auth method to use: ``wanted``, else one this client can complete (see the module's help)."""
    offered = ", ".join(method_id(m) for m in methods) or "none"
    if wanted is not None:
        for method in methods:
            if method_id(method) == wanted:
                return method
        raise LoginImpossible(f"the agent offers no auth method {wanted!r} (it offers: {offered})")
    for method in methods:  # variables already set: the agent, spawned with our environment, has them
        names = env_vars(method)
        if _field(method, "type", "type") == "env_var" and names and all(os.environ.get(n) for n in names if n):
            return method
    for method in methods:  # the agent logs in by itself (maybe through a browser: --timeout bounds it)
        if _field(method, "type", "type") in (None, "agent"):
            return method
    needs = [f"set {' and '.join(env_vars(m))} for {method_id(m)!r}" for m in methods if env_vars(m)]
    hint = f"; {'; '.join(needs)}" if needs else ""
    raise LoginImpossible(f"no auth method this client can complete (the agent offers: {offered}){hint}")


class LoginImpossible(Exception):
    """No auth method fits, or the one asked for is not offered."""


async def login(conn: connection.ClientConnection, method: Any, timeout: float | None) -> None:
    print(f"logging in with {_field(method, 'name', 'name') or method_id(method)!r}", file=sys.stderr)
    if conn.version == "v1":  # each version's login, on the connection typed for it
        request = conn.as_version("v1").peer.authenticate(v1.AuthenticateRequest(method_id=method_id(method)))
        await step("authenticate", request, timeout)
    else:
        login = conn.as_version("v2").peer.auth_login(v2.LoginAuthRequest(method_id=method_id(method)))
        await step("auth/login", login, timeout)


async def authenticated(
    conn: connection.ClientConnection, methods: list[Any], call: Callable[[], Awaitable[T]], timeout: float | None
) -> T:
    """``call()``, logging in first (with :func:`choose_method`) when the agent answers -32000."""
    try:
        return await step("session/new", call(), timeout)
    except connection.RequestError as exc:
        if exc.code != v1.AUTH_REQUIRED or not methods:
            raise
    await login(conn, choose_method(methods, None), timeout)
    return await step("session/new", call(), timeout)


def allow_first(params: Any) -> str | None:
    """``--yes``: the first option that allows."""
    return next((o.option_id for o in params.options if o.kind in ("allow_once", "allow_always")), None)


def open_agent(command: list[str], url: str | None, token: str | None, make: Any, versions: Any) -> Any:
    """The connection to the agent: a spawned ``command``, or the remote agent at ``url``."""
    if url is None:
        return connection.spawn_agent(command, make, versions=versions)
    from acp_types import remote  # the remote extra, only when asked for

    return remote.connect(url, make, versions=versions, token=token)


async def run(
    render: Render,
    command: list[str],
    prompt: str,
    protocol: str,
    timeout: float | None,
    yes: bool,
    auth: str | None,
    url: str | None = None,
    token: str | None = None,
) -> int:
    def make(conn: connection.ClientConnection) -> client.SessionClient:
        return client.SessionClient(conn, on_update=render, permission=allow_first if yes else None)

    versions = (protocol, "v1") if protocol == "v2" else ("v1",)
    async with open_agent(command, url, token, make, versions) as conn:
        if protocol == "v2":
            info = v2.Implementation(name="example-client", version="1.0")
            init: v1.InitializeResponse | v2.InitializeResponse = await step(
                "initialize", conn.initialize(v2.InitializeRequest(protocol_version=2, info=info)), timeout
            )
        else:
            client_info = v1.Implementation(name="example-client", version="1.0")
            request = v1.InitializeRequest(protocol_version=1, client_info=client_info)
            init = await step("initialize", conn.initialize(request), timeout)
        acp = conn.handler
        methods = list(init.auth_methods or [])
        if auth is not None:
            await login(conn, choose_method(methods, auth), timeout)
        session_id = await authenticated(conn, methods, lambda: acp.new_session(os.getcwd()), timeout)
        turn = asyncio.ensure_future(acp.prompt(session_id, prompt))
        interrupts = 0

        def cancel(why: str) -> None:
            nonlocal interrupts
            interrupts += 1
            if interrupts > 1:  # asked twice: stop waiting for the agent
                turn.cancel()
                return
            render.line(f"({why}: cancelling)")
            asyncio.ensure_future(acp.cancel(session_id))

        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, cancel, "interrupted")
        done, _ = await asyncio.wait({turn}, timeout=timeout)
        if not done:
            cancel("timed out")
            done, _ = await asyncio.wait({turn}, timeout=timeout)  # as long again for the turn to end
            if not done:
                turn.cancel()
        try:
            ended = await turn
        except asyncio.CancelledError:
            render.line("(gave up waiting for the agent)")
            return 130 if interrupts > 1 else 1
        render.end_line()
        if ended.stop_reason not in (None, "end_turn"):
            print(f"(the turn ended: {ended.stop_reason})", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    command = args[args.index("--") + 1 :] if "--" in args else []
    own = args[: args.index("--")] if "--" in args else args
    if len(command) >= 2 and command[-2] == "--prompt":  # `-- AGENT... --prompt TEXT`
        own, command = [*own, *command[-2:]], command[:-2]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompt", default="hello")
    parser.add_argument("--protocol", choices=("v1", "v2"), default="v2")
    parser.add_argument(
        "--timeout", type=float, default=None, help="seconds each step may take (default: no limit); see above"
    )
    parser.add_argument("--auth", metavar="METHOD_ID", help="log in with this auth method first")
    parser.add_argument("--yes", action="store_true", help="allow what the agent asks permission for")
    parser.add_argument("--url", help="a remote agent's URL (ws://, wss://, http://, https://) instead of a command")
    parser.add_argument("--token-env", metavar="VAR", help="with --url: send this variable's value as a bearer token")
    options = parser.parse_args(own)
    if options.url is None and not command:
        parser.error("give the agent command after --, or --url URL")
    if options.url is not None and command:
        parser.error("give either --url or an agent command, not both")
    token = None
    if options.token_env is not None:
        token = os.environ.get(options.token_env)
        if not token:
            parser.error(f"--token-env {options.token_env}: the variable is unset or empty")
    if options.url is not None:
        try:
            from acp_types import remote
        except ImportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        try:
            remote._client._url(options.url)
        except ValueError as exc:
            parser.error(str(exc))
    render = Render()
    try:
        return asyncio.run(
            run(
                render,
                command,
                options.prompt,
                options.protocol,
                options.timeout,
                options.yes,
                options.auth,
                options.url,
                token,
            )
        )
    except connection.RequestError as exc:  # the peer's error, in one line
        data = f" ({exc.data!r})" if exc.data is not None else ""
        error = f"error from the agent: {exc.message} (code {exc.code}){data}"
    except v2.MessageError as exc:  # an answer that does not validate (a result, or an error object)
        error = f"error: the agent's answer is not valid ACP: {exc}"
    except (StepTimedOut, LoginImpossible) as exc:
        error = f"error: {exc}"
    except (connection.ConnectionClosed, connection.UnsupportedVersion, OSError) as exc:
        error = f"error: {exc}"
    render.end_line()  # end a line of agent text the error cut short
    print(one_line(error), file=sys.stderr)
    return 1


def one_line(text: str, limit: int = 1000) -> str:
    """``text`` on one line (what an agent wrote may hold line breaks and escapes), cut at ``limit`` characters."""
    flat = "".join(c if c.isprintable() else " " for c in text)
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


if __name__ == "__main__":
    sys.exit(main())
