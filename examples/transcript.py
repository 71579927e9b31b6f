"""A client that prints a live transcript from the session state: python examples/transcript.py TEXT -- AGENT...

Each update is applied to the session's state by ``client.SessionClient``
first; the printer then shows what changed, so a message the agent rewrites
(a full ``agent_message`` after chunks, a replay) is shown again, not glued on.
With ``--strict`` it lists the rules the agent broke.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import _path  # noqa: F401  (acp_types from the checkout when not installed)

from acp_types import client, connection, v2

seen: dict[int, str] = {}  # index of a message -> its text as printed


def show(state: Any, notification: Any) -> None:
    for i, msg in enumerate(state.messages):
        old, new = seen.get(i), msg.text
        if old == new:
            continue
        if old is None:
            print(f"{chr(10) if seen else ''}{msg.role}: {new}", end="")
        elif new.startswith(old):
            print(new[len(old) :], end="")
        else:
            print(f"\n{msg.role} (rewritten): {new}", end="")
        seen[i] = new
    sys.stdout.flush()


async def main(text: str, command: list[str], strict: bool) -> int:
    factory = lambda conn: client.SessionClient(conn, strict=strict, on_update=show)  # noqa: E731
    async with connection.spawn_agent(command, factory) as conn:
        await conn.initialize(v2.InitializeRequest(protocol_version=2, info={"name": "transcript", "version": "1"}))
        acp = conn.handler
        session_id = await acp.new_session(os.getcwd())
        turn = await acp.prompt(session_id, text, idle_timeout=2)  # v1 or v2: returns when the turn is over
        print(f"\n[{turn.stop_reason or 'no stop reason'}]")
        for problem in acp.states[session_id].problems:
            print(problem)
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    strict = "--strict" in args[: args.index("--")] if "--" in args else False
    own = [a for a in args[: args.index("--")] if a != "--strict"] if "--" in args else []
    if not own or "--" not in args:
        sys.exit(__doc__)
    sys.exit(asyncio.run(main(" ".join(own), args[args.index("--") + 1 :], strict)))
