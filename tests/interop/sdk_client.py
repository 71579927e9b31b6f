"""A client on the official Python SDK (acp): spawns AGENT..., runs a prompt, prints the streamed text.

    python sdk_client.py PROMPT -- AGENT COMMAND...

Then it calls session/load, which our echo agent does not implement, and
prints the error code it got (the agent must not pretend success).
"""

import asyncio
import os
import sys
from typing import Any

from acp import RequestError, text_block
from acp.stdio import spawn_agent_process

# The SDK passes the agent a few variables only: keep our agents' session store where the test put it.
_STORE = {k: v for k, v in os.environ.items() if k == "ACP_TYPES_STORE"}


class Printer:
    def __init__(self) -> None:
        self.text: list[str] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.text.append(getattr(update.content, "text", ""))

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)


async def main(prompt: str, command: list[str]) -> None:
    printer = Printer()
    async with spawn_agent_process(printer, *command, env=_STORE) as (conn, _proc):
        init = await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd="/tmp", mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[text_block(prompt)])
        print(f"protocol {init.protocol_version}")
        print("text " + "".join(printer.text))
        try:
            await conn.load_session(session_id=session.session_id, cwd="/tmp", mcp_servers=[])
            print("load ok")
        except RequestError as exc:
            print(f"load error {exc.code}")


if __name__ == "__main__":
    args = sys.argv[1:]
    cut = args.index("--")
    asyncio.run(main(args[0], args[cut + 1 :]))
