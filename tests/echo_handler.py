"""A raw-handler echo agent on acp_types.connection alone, kept for the connection tests (examples/echo_agent.py is the one on acp_types.agent).

Run as ``python tests/echo_handler.py`` it serves stdin/stdout.
Sessions can be listed, archived and unarchived (-32002 for an unknown session);
``session/cancel`` stops a prompt that is still streaming.
"""

from __future__ import annotations

import asyncio
import itertools
import re
from typing import Any

from acp_types import connection, v1, v2


class EchoAgent:
    """The handler: one method per ACP method it supports, named as in ``v1.Agent`` / ``v2.Agent``."""

    def __init__(self, conn: connection.AgentConnection) -> None:
        self.conn = conn
        self.sessions: dict[str, dict[str, Any]] = {}
        self.cancelled: set[str] = set()
        self.ids = itertools.count(1)

    @property
    def m(self) -> Any:  # the settled version's module: v1 or v2
        return v1 if self.conn.version == "v1" else v2

    async def initialize(self, params: v1.InitializeRequest | v2.InitializeRequest) -> Any:
        info = {"name": "echo-agent", "version": "1.0"}
        if self.conn.version == "v1":
            caps = {"sessionCapabilities": {"list": {}, "archive": {}}}
            return v1.InitializeResponse(protocol_version=1, agent_capabilities=caps, agent_info=info)
        caps2 = {"session": {"archive": {}}}
        return v2.InitializeResponse(protocol_version=2, info=info, capabilities=caps2)

    async def session_new(self, params: v1.NewSessionRequest | v2.NewSessionRequest) -> Any:
        sid = f"sess_{next(self.ids)}"
        self.sessions[sid] = {"cwd": params.cwd, "archived": False}
        return self.m.NewSessionResponse(session_id=sid)

    async def session_prompt(self, params: v1.PromptRequest | v2.PromptRequest) -> Any:
        self.known(params.session_id)
        self.cancelled.discard(params.session_id)
        text = " ".join(b.text for b in params.prompt if getattr(b, "type", None) == "text")
        for piece in re.findall(r"\S+\s*", text):
            if params.session_id in self.cancelled:
                return self.done("cancelled")
            chunk = self.m.AgentMessageChunk(message_id="msg_1", content=self.m.TextContent(text=piece))
            await self.conn.notify("session/update", {"sessionId": params.session_id, "update": chunk.to_wire()})
            await asyncio.sleep(0)
        return self.done("end_turn")

    def done(self, reason: str) -> Any:
        return v1.PromptResponse(stop_reason=reason) if self.conn.version == "v1" else v2.PromptResponse()

    async def session_cancel(self, params: v1.CancelNotification | v2.CancelSessionNotification) -> None:
        self.cancelled.add(params.session_id)

    async def session_list(self, params: v1.ListSessionsRequest | v2.ListSessionsRequest) -> Any:
        want = params.archived or "exclude"
        infos = [
            self.m.SessionInfo(session_id=sid, cwd=s["cwd"], archived=s["archived"])
            for sid, s in self.sessions.items()
            if want == "include" or s["archived"] == (want == "only")
        ]
        return self.m.ListSessionsResponse(sessions=infos)

    async def session_archive(self, params: v1.ArchiveSessionRequest | v2.ArchiveSessionRequest) -> Any:
        self.known(params.session_id)["archived"] = True
        return self.m.ArchiveSessionResponse()

    async def session_unarchive(self, params: v1.UnarchiveSessionRequest | v2.UnarchiveSessionRequest) -> Any:
        self.known(params.session_id)["archived"] = False
        return self.m.UnarchiveSessionResponse()

    def known(self, sid: str) -> dict[str, Any]:
        if sid not in self.sessions:
            raise connection.RequestError(v1.RESOURCE_NOT_FOUND, f"no session {sid!r}")
        return self.sessions[sid]


if __name__ == "__main__":
    asyncio.run(connection.serve_stdio(EchoAgent, versions=("v1", "v2")))
