"""The conformance kit's reference client: spawns AGENT..., follows every rule the kit checks in client mode.

    python tests/conformance/ref_client.py [--protocol v1|v2] [--mutant CHECK-ID] -- AGENT COMMAND...

It initializes, opens a session, prompts once, answers the first permission
request by choosing an offered option, and cancels the turn at the second one,
answering it ``cancelled``. ``--mutant ID`` breaks the rule of client check ID.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "generated"))

from acp_types import connection

MUTANT = ""
MUTANTS = {
    "INI-01": "session/new before initialize",
    "INI-02": "no clientInfo",
    "TRN-03": "a line that is not JSON",
    "INI-08": "calls a method the agent did not advertise",
    "SET-24": "a relative cwd",
    "SET-22": "additionalDirectories without the capability",
    "PRM-02": "an image block without the capability",
    "SET-29": "an HTTP MCP server without the capability",
    "PERM-05": "selects an option that was not offered",
    "PRM-08": "answers a pending permission 'selected' after cancelling",
    "CAN-03": "never answers the second permission request",
}


class Handler:
    def __init__(self, conn: connection.ClientConnection) -> None:
        self.conn = conn
        self.asked = 0
        self.idle = asyncio.Event()

    async def session_update(self, params: Any) -> None:
        if getattr(params.update, "state", None) == "idle":  # a v2 turn ends here
            self.idle.set()

    async def session_request_permission(self, params: Any) -> Any:
        self.asked += 1
        if self.asked == 1:
            option = "kit-bogus" if MUTANT == "PERM-05" else params.options[0].option_id
            return {"outcome": {"outcome": "selected", "optionId": option}}
        if MUTANT == "CAN-03":
            await asyncio.Event().wait()
        await self.conn.notify("session/cancel", {"sessionId": params.session_id})
        if MUTANT == "PRM-08":
            return {"outcome": {"outcome": "selected", "optionId": params.options[0].option_id}}
        return {"outcome": {"outcome": "cancelled"}}


async def main(protocol: str, command: list[str]) -> None:
    versions = ("v2", "v1") if protocol == "v2" else ("v1",)
    async with connection.spawn_agent(command, Handler, versions=versions) as conn:
        cwd = os.getcwd()
        if MUTANT == "INI-01":
            await conn.request("session/new", {"cwd": cwd, "mcpServers": []})
        if MUTANT == "TRN-03":
            # the mutant writes past the connection (its own writer) to break the framing on purpose
            conn._writer.write(b"this is not json\n")
        params: dict[str, Any] = {"protocolVersion": 2 if protocol == "v2" else 1}
        info = {"name": "acp-types-reference-client", "version": "1.0"}
        if protocol == "v2":
            params["info"] = info
        elif MUTANT != "INI-02":
            params["clientInfo"] = info
        await conn.request("initialize", params)
        v2 = conn.version == "v2"
        new: dict[str, Any] = {"cwd": "." if MUTANT == "SET-24" else cwd, "mcpServers": []}
        if MUTANT == "SET-22":
            new["additionalDirectories"] = [cwd]
        if MUTANT == "SET-29":
            new["mcpServers"] = [{"type": "http", "name": "x", "url": "http://127.0.0.1:9", "headers": []}]
        session = await conn.request("session/new", new)
        sid = session.session_id
        if MUTANT == "INI-08":
            await conn.request("session/archive" if v2 else "session/list", {"sessionId": sid} if v2 else {})
        blocks: list[dict[str, Any]] = [{"type": "text", "text": "hello"}]
        if MUTANT == "PRM-02":
            blocks.append({"type": "image", "data": "AAAA", "mimeType": "image/png"})
        await conn.request("session/prompt", {"sessionId": sid, "prompt": blocks})
        if v2:
            handler: Any = conn.handler
            await asyncio.wait_for(handler.idle.wait(), 10)


if __name__ == "__main__":
    args = sys.argv[1:]
    cut = args.index("--")
    own, command = args[:cut], args[cut + 1 :]
    protocol = own[own.index("--protocol") + 1] if "--protocol" in own else "v2"
    if "--mutant" in own:
        MUTANT = own[own.index("--mutant") + 1]
        if MUTANT not in MUTANTS:
            sys.exit(f"no mutant {MUTANT!r}")
    try:
        asyncio.run(main(protocol, command))
    except connection.RequestError as exc:  # the kit's agent refused something: fine for a mutant
        sys.exit(f"agent error: {exc}")
