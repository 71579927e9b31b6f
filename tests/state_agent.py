"""A small agent that follows the update rules, for the client helpers' tests (run over pipes by them).

Prompt text decides the turn: ``ask`` requests permission and reports its
outcome; ``slow`` streams until cancelled; ``die`` says ``bye`` and exits
the process in the middle of the turn (v2: after acknowledging the prompt);
anything else is echoed. v2
answers the prompt at once and reports the turn with state updates; v1
answers it when the turn is over. ``session/list`` pages by two with opaque
cursors; ``session/resume`` (v2) / ``session/load`` (v1) replay the history.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "generated"))

from acp_types import connection, v1, v2


class StateAgent:
    def __init__(self, conn: connection.AgentConnection) -> None:
        self.conn = conn
        self.history: dict[str, list[dict[str, Any]]] = {}
        self.cancelled: set[str] = set()
        self.count = 0
        self.tasks: set[asyncio.Task[None]] = set()

    @property
    def v2(self) -> bool:
        return self.conn.version == "v2"

    async def initialize(self, params: Any) -> Any:
        if self.v2:
            return v2.InitializeResponse(
                protocol_version=2, info={"name": "state-agent", "version": "1"}, capabilities={"session": {}}
            )
        return v1.InitializeResponse(
            protocol_version=1, agent_capabilities={"loadSession": True, "sessionCapabilities": {"list": {}}}
        )

    async def session_new(self, params: Any) -> Any:
        self.count += 1
        sid = f"sess_{self.count}"
        self.history[sid] = []
        m = v2 if self.v2 else v1
        return m.NewSessionResponse(session_id=sid)

    async def send(self, sid: str, update: dict[str, Any], keep: bool = True) -> None:
        if keep:
            self.history[sid].append(update)
        await self.conn.notify("session/update", {"sessionId": sid, "update": update})

    async def session_prompt(self, params: Any) -> Any:
        sid = params.session_id
        self.cancelled.discard(sid)
        if not self.v2:
            reason = await self.turn(sid, params)
            return v1.PromptResponse(stop_reason=reason)
        task = asyncio.ensure_future(self.turn(sid, params))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        # the id the turn's user_message will carry (the task starts after this answer is written)
        return v2.PromptResponse(message_id=f"u{len(self.history[sid])}")

    async def turn(self, sid: str, params: Any) -> str:
        n = len(self.history[sid])
        text = " ".join(b.text for b in params.prompt if getattr(b, "type", None) == "text")
        if self.v2:
            await self.send(
                sid,
                {"sessionUpdate": "user_message", "messageId": f"u{n}", "content": [{"type": "text", "text": text}]},
            )
            await self.send(sid, {"sessionUpdate": "state_update", "state": "running"}, keep=False)
        reason = "end_turn"
        if text == "ask":
            await self.send(
                sid,
                {
                    "sessionUpdate": "tool_call" if not self.v2 else "tool_call_update",
                    "toolCallId": f"call{n}",
                    "title": "Edit a file",
                    "status": "pending",
                },
            )
            if self.v2:
                await self.send(sid, {"sessionUpdate": "state_update", "state": "requires_action"}, keep=False)
                params2: dict[str, Any] = {
                    "sessionId": sid,
                    "title": "Edit?",
                    "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"}],
                }
            else:
                params2 = {
                    "sessionId": sid,
                    "toolCall": {"toolCallId": f"call{n}"},
                    "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"}],
                }
            answer = await self.conn.request("session/request_permission", params2)
            outcome = answer.outcome.outcome
            if self.v2:
                await self.send(sid, {"sessionUpdate": "state_update", "state": "running"}, keep=False)
            await self.send(
                sid,
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": f"call{n}",
                    "status": "completed" if outcome != "cancelled" else "cancelled" if self.v2 else "failed",
                },
            )
            await self.send(
                sid,
                {
                    "sessionUpdate": "agent_message_chunk",
                    "messageId": f"a{n}",
                    "content": {"type": "text", "text": f"outcome {outcome}"},
                },
            )
            if sid in self.cancelled or outcome == "cancelled":
                reason = "cancelled"
        elif text == "die":
            await self.send(
                sid,
                {
                    "sessionUpdate": "agent_message_chunk",
                    "messageId": f"a{n}",
                    "content": {"type": "text", "text": "bye"},
                },
            )
            await asyncio.sleep(0.2)  # the acknowledgement and the chunk are out
            os._exit(0)
        elif text == "slow":
            while sid not in self.cancelled:
                await self.send(
                    sid,
                    {
                        "sessionUpdate": "agent_message_chunk",
                        "messageId": f"a{n}",
                        "content": {"type": "text", "text": "."},
                    },
                )
                await asyncio.sleep(0.01)
            reason = "cancelled"
        else:
            for piece in text.split(" "):
                await self.send(
                    sid,
                    {
                        "sessionUpdate": "agent_message_chunk",
                        "messageId": f"a{n}",
                        "content": {"type": "text", "text": piece},
                    },
                )
        if self.v2:
            await self.send(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": reason}, keep=False)
        return reason

    async def session_cancel(self, params: Any) -> None:
        self.cancelled.add(params.session_id)

    async def session_list(self, params: Any) -> Any:
        m = v2 if self.v2 else v1
        ids = [f"listed_{i}" for i in range(5)]
        start = 0 if params.cursor is None else int(params.cursor.strip("§"))
        page = ids[start : start + 2]
        infos = [m.SessionInfo(session_id=sid, cwd="/tmp") for sid in page]
        more = start + 2 < len(ids)
        return m.ListSessionsResponse(sessions=infos, **({"next_cursor": f"§{start + 2}§"} if more else {}))

    async def replay(self, sid: str) -> None:
        # messages as `content: []` then their chunks (v2), tool calls as they were reported
        reset: set[str] = set()
        for update in self.history[sid]:
            kind = update["sessionUpdate"]
            if self.v2 and kind.endswith("_chunk") and update["messageId"] not in reset:
                reset.add(update["messageId"])
                whole = kind.removesuffix("_chunk")
                await self.send(sid, {"sessionUpdate": whole, "messageId": update["messageId"], "content": []}, False)
            await self.send(sid, update, keep=False)

    async def session_resume(self, params: Any) -> Any:
        if params.replay_from is not None:
            await self.replay(params.session_id)
        return v2.ResumeSessionResponse()

    async def session_load(self, params: Any) -> Any:
        await self.replay(params.session_id)
        return v1.LoadSessionResponse()


if __name__ == "__main__":
    asyncio.run(connection.serve_stdio(StateAgent, versions=("v1", "v2")))
