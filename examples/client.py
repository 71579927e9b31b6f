"""An ACP client: spawns an agent, runs one session with a prompt and prints the streamed answer.

    python examples/client.py [--prompt TEXT] [--protocol v2|v1] -- AGENT COMMAND... [--prompt TEXT]

It asks for ``--protocol`` (default v2) and accepts a v1 agent's answer. A
trailing ``--prompt TEXT`` after the agent command is the client's too.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

import _path  # noqa: F401  (acp_types from the checkout when not installed)

from acp_types import connection, v1, v2


class Printer:
    """The client's handler: prints the text of every agent_message_chunk."""

    def __init__(self, conn: connection.ClientConnection) -> None:
        self.conn = conn

    async def session_update(self, params: v1.SessionNotification | v2.UpdateSessionNotification) -> None:
        update = params.update
        if getattr(update, "session_update", None) == "agent_message_chunk":
            print(getattr(update.content, "text", ""), end="", flush=True)


async def run(command: list[str], prompt: str, protocol: str) -> int:
    versions = (protocol, "v1") if protocol == "v2" else ("v1",)
    async with connection.spawn_agent(command, Printer, versions=versions) as conn:
        info = {"name": "example-client", "version": "1.0"}
        if protocol == "v2":
            await conn.initialize(v2.InitializeRequest(protocol_version=2, info=info))
        else:
            await conn.initialize(v1.InitializeRequest(protocol_version=1, client_info=info))
        m: Any = v1 if conn.version == "v1" else v2  # the agent's answer settled the version
        agent = conn.peer  # typed calls: m.AgentPeer
        session = await agent.session_new(m.NewSessionRequest(cwd=os.getcwd(), mcp_servers=[]))
        blocks = [m.TextContent(text=prompt)]
        await agent.session_prompt(m.PromptRequest(session_id=session.session_id, prompt=blocks))
        print()
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
    options = parser.parse_args(own)
    if not command:
        parser.error("give the agent command after --")
    return asyncio.run(run(command, options.prompt, options.protocol))


if __name__ == "__main__":
    sys.exit(main())
