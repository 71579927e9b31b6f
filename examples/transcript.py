"""A client that prints a live transcript from the session state.

    python examples/transcript.py [--strict] [--idle-timeout SECONDS] TEXT -- AGENT COMMAND...

Each update is applied to the session's state by ``client.SessionClient``
first; the printer then shows what changed, so a message the agent rewrites
(a full ``agent_message`` after chunks, a replay) is shown again, not glued on.
With ``--strict`` it lists the rules the agent broke. A v2 turn ends with the
agent's ``idle`` state update; ``--idle-timeout`` gives up waiting for it that
many seconds after the prompt was acknowledged (for agents that never send one).
An error from the agent, an answer that does not validate or an agent that
exits early is one line on stderr, exit 1.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

import _path  # noqa: F401  (acp_types from the checkout when not installed)

from acp_types import client, connection, v2

seen: dict[int, tuple[Any, int, int]] = {}  # id() of a message -> (the message, its revision, length printed)


def show(state: Any, notification: Any) -> None:
    """Print what changed: only the message the update names, and only the text appended since last time."""
    message_id = getattr(getattr(notification, "update", None), "message_id", None)
    if notification is None:
        changed = state.messages
    elif isinstance(message_id, str):
        changed = [m for m in (state.message(message_id),) if m is not None]
    else:
        changed = state.messages[-1:]  # a v1 chunk without an id continues the last message
    for msg in changed:
        _, revision, printed = seen.get(id(msg), (msg, None, None))
        if revision is None:
            print(f"{chr(10) if seen else ''}{msg.role}: {msg.text}", end="")
        elif revision == msg.revision:
            print(msg.text_since(printed), end="")
        else:
            print(f"\n{msg.role} (rewritten): {msg.text}", end="")
        seen[id(msg)] = (msg, msg.revision, msg.text_length)
    sys.stdout.flush()


async def main(text: str, command: list[str], strict: bool, idle_timeout: float | None) -> int:
    factory = lambda conn: client.SessionClient(conn, strict=strict, on_update=show)  # noqa: E731
    async with connection.spawn_agent(command, factory) as conn:
        info = v2.Implementation(name="transcript", version="1")
        await conn.initialize(v2.InitializeRequest(protocol_version=2, info=info))
        acp = conn.handler
        session_id = await acp.new_session(os.getcwd())
        turn = await acp.prompt(session_id, text, idle_timeout=idle_timeout)  # v1 or v2: returns when the turn is over
        print(f"\n[{turn.stop_reason or 'no stop reason'}]")
        for problem in acp.states[session_id].problems:
            print(problem)
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    split = args.index("--") if "--" in args else len(args)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--strict", action="store_true")
    parser.add_argument("--idle-timeout", type=float, default=None)
    parser.add_argument("text", nargs="+")
    options = parser.parse_args(args[:split])
    if not args[split + 1 :]:
        parser.error("give the agent command after --")
    try:
        sys.exit(asyncio.run(main(" ".join(options.text), args[split + 1 :], options.strict, options.idle_timeout)))
    except (connection.RequestError, v2.MessageError, connection.ConnectionClosed, OSError) as exc:
        if seen:
            print()  # end the transcript's last line
        flat = " ".join(str(exc).split())  # one line, whatever the agent wrote
        print(f"error: {flat[:1000]}", file=sys.stderr)
        sys.exit(1)
