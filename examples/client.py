"""An ACP client: spawns an agent, runs one session with a prompt and prints the streamed answer.

    python examples/client.py [--prompt TEXT] [--protocol v2|v1] [--timeout S] -- AGENT COMMAND... [--prompt TEXT]

It asks for ``--protocol`` (default v2) and accepts a v1 agent's answer. The
turn ends with v1's answer or v2's ``idle`` update. When the agent asks for
authentication (-32000) it logs in with the first method the agent
advertised; Ctrl-C or ``--timeout`` sends ``session/cancel`` and waits for
the turn to end. A peer's error is reported in one line (exit 1).
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

from acp_types import connection, v1, v2

T = TypeVar("T")


class Printer:
    """The client's handler: prints agent text, notes v2's idle, refuses permissions (this client asks no one)."""

    def __init__(self, conn: connection.ClientConnection) -> None:
        self.idle = asyncio.Event()
        self.stop_reason: str | None = None

    async def session_update(self, params: v1.SessionNotification | v2.UpdateSessionNotification) -> None:
        update = params.update
        if isinstance(update, (v1.AgentMessageChunk, v2.AgentMessageChunk)):
            print(getattr(update.content, "text", ""), end="", flush=True)
        elif isinstance(update, v2.IdleStateUpdate):
            self.stop_reason = update.stop_reason
            self.idle.set()

    async def session_request_permission(self, params: Any) -> Any:
        m = v1 if isinstance(params, v1.RequestPermissionRequest) else v2
        return m.RequestPermissionResponse(outcome=m.CancelledPermissionOutcome())


async def authenticated(conn: connection.ClientConnection, methods: list[Any], call: Callable[[], Awaitable[T]]) -> T:
    """``call()``, logging in first with the agent's first auth method when it answers -32000."""
    try:
        return await call()
    except connection.RequestError as exc:
        if exc.code != v1.AUTH_REQUIRED or not methods:
            raise
    method = methods[0]
    print(f"the agent asks to authenticate; using {getattr(method, 'name', '?')!r}", file=sys.stderr)
    if conn.version == "v1":
        await conn.peer.authenticate(v1.AuthenticateRequest(method_id=method.id))
    else:
        await conn.peer.auth_login(v2.LoginAuthRequest(method_id=method.method_id))
    return await call()


async def run(command: list[str], prompt: str, protocol: str, timeout: float | None) -> int:
    versions = (protocol, "v1") if protocol == "v2" else ("v1",)
    async with connection.spawn_agent(command, Printer, versions=versions) as conn:
        info = {"name": "example-client", "version": "1.0"}
        if protocol == "v2":
            init: Any = await conn.initialize(v2.InitializeRequest(protocol_version=2, info=info))
        else:
            init = await conn.initialize(v1.InitializeRequest(protocol_version=1, client_info=info))
        m: Any = v1 if conn.version == "v1" else v2  # the agent's answer settled the version
        printer: Printer = conn.handler  # type: ignore[assignment]
        methods = list(init.auth_methods or [])
        new = m.NewSessionRequest(cwd=os.getcwd(), mcp_servers=[])
        session = await authenticated(conn, methods, lambda: conn.peer.session_new(new))
        sid = session.session_id

        async def turn() -> str | None:
            answer = await conn.peer.session_prompt(m.PromptRequest(session_id=sid, prompt=[m.TextContent(text=prompt)]))
            if conn.version == "v1":
                return str(answer.stop_reason)
            await printer.idle.wait()
            return printer.stop_reason

        task = asyncio.ensure_future(turn())
        cancel = lambda: asyncio.ensure_future(conn.peer.session_cancel(m.CancelNotification(session_id=sid)  # noqa: E731
                                                                        if conn.version == "v1" else
                                                                        m.CancelSessionNotification(session_id=sid)))
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, cancel)
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            print("\n(timed out: cancelling)", file=sys.stderr)
            cancel()
        reason = await task
        print()
        if reason not in (None, "end_turn"):
            print(f"(the turn ended: {reason})", file=sys.stderr)
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
    parser.add_argument("--timeout", type=float, default=None, help="seconds before the turn is cancelled")
    options = parser.parse_args(own)
    if not command:
        parser.error("give the agent command after --")
    try:
        return asyncio.run(run(command, options.prompt, options.protocol, options.timeout))
    except connection.RequestError as exc:  # the peer's error, in one line
        data = f" ({exc.data})" if exc.data is not None else ""
        print(f"\nerror from the agent: {exc.message} (code {exc.code}){data}", file=sys.stderr)
    except (connection.ConnectionClosed, connection.UnsupportedVersion, OSError) as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
