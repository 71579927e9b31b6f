"""An agent on the official Python SDK (acp) for our client: echo, a tool call behind a permission, a turn that waits.

A prompt is echoed word by word; ``tool`` reports a tool call and asks
permission for it; ``wait`` says ``working`` and ends only with ``session/cancel``.
"""

import asyncio
import re
from typing import Any

from acp import (
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    run_agent,
    start_tool_call,
    text_block,
    update_agent_message,
    update_tool_call,
)
from acp.schema import PermissionOption, ToolCallUpdate


class SdkTools(Agent):
    def on_connect(self, conn: Any) -> None:
        self.conn = conn
        self.cancelled: dict[str, asyncio.Event] = {}

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=1)

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="sdk-session")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    async def say(self, session_id: str, text: str) -> None:
        await self.conn.session_update(session_id=session_id, update=update_agent_message(text_block(text)))

    async def prompt(self, prompt: Any, session_id: str, **kwargs: Any) -> PromptResponse:
        text = " ".join(getattr(b, "text", "") for b in prompt)
        if text == "wait":
            self.cancelled[session_id] = asyncio.Event()
            await self.say(session_id, "working")
            await self.cancelled[session_id].wait()
            return PromptResponse(stop_reason="cancelled")
        if text == "tool":
            call = "sdk-call-1"
            await self.conn.session_update(
                session_id=session_id, update=start_tool_call(call, "Touch a file", kind="edit", status="pending")
            )
            options = [
                PermissionOption(option_id="yes", name="Yes", kind="allow_once"),
                PermissionOption(option_id="no", name="No", kind="reject_once"),
            ]
            answer = await self.conn.request_permission(
                session_id=session_id,
                options=options,
                tool_call=ToolCallUpdate(tool_call_id=call, title="Touch a file"),
            )
            allowed = getattr(answer.outcome, "option_id", None) == "yes"
            await self.conn.session_update(
                session_id=session_id, update=update_tool_call(call, status="completed" if allowed else "failed")
            )
            await self.say(session_id, "touched" if allowed else "left alone")
            return PromptResponse(stop_reason="end_turn")
        for piece in re.findall(r"\S+\s*", text):
            await self.say(session_id, piece)
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(SdkTools()))
