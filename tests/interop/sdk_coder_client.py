"""A client on the official Python SDK (acp) that drives our coding agent through a turn and a cancel.

    python sdk_coder_client.py FILE -- AGENT COMMAND...

It offers ``fs/read_text_file`` and answers with an editor buffer that is not
what the disk holds (three ``x`` where the file has two), allows the edit,
then asks again and cancels while the permission is asked, then lists
sessions. Prints one line per fact it checked.
"""

import asyncio
import os
import sys
from typing import Any

from acp import text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileResponse,
    RequestPermissionResponse,
)
from acp.stdio import spawn_agent_process

# The SDK passes the agent a few variables only: keep our agents' session store where the test put it.
_STORE = {k: v for k, v in os.environ.items() if k == "ACP_TYPES_STORE"}

BUFFER = "x = x * x\n"


class Client:
    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.conn: Any = None
        self.cancel_when_asked = False

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kwargs: Any) -> Any:
        if self.cancel_when_asked:
            await self.conn.cancel(session_id=session_id)
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        allow = next(o.option_id for o in options if o.kind == "allow_once")
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=allow))

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> Any:
        return ReadTextFileResponse(content=BUFFER)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)


def summary(updates: list[Any]) -> tuple[str, str, bool]:
    text = "".join(u.content.text for u in updates if u.session_update == "agent_message_chunk")
    tools = " ".join(u.status for u in updates if u.session_update.startswith("tool_call") and u.status)
    diff = any(
        getattr(c, "old_text", None) == BUFFER
        for u in updates
        for c in (getattr(u, "content", None) or [])
        if isinstance(getattr(u, "content", None), list)
    )
    return text, tools, diff


async def main(path: str, command: list[str]) -> None:
    client = Client()
    async with spawn_agent_process(client, *command, env=_STORE) as (conn, _proc):
        client.conn = conn
        caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True))
        init = await conn.initialize(protocol_version=1, client_capabilities=caps)
        print(f"protocol {init.protocol_version}")
        session = await conn.new_session(cwd="/tmp", mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block(f"rename x to y in {path}")])
        text, tools, diff = summary(client.updates)
        print(f"stop {answer.stop_reason}; tools {tools}; diff of the buffer {diff}")
        print(f"text {text}")
        client.updates, client.cancel_when_asked = [], True
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block(f"rename x to y in {path}")])
        print(f"cancelled: stop {answer.stop_reason}; tools {summary(client.updates)[1]}")
        listed = await conn.list_sessions(cwd="/tmp")
        print(f"listed {[s.session_id for s in listed.sessions] == [session.session_id]}")


if __name__ == "__main__":
    args = sys.argv[1:]
    cut = args.index("--")
    asyncio.run(main(args[0], args[cut + 1 :]))
