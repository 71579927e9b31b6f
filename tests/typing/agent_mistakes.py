"""Each line marked ``# E:`` must be an error under mypy --strict (tests/test_agent_typing.py)."""

from __future__ import annotations

from acp_types import agent, v1


class Wrong(agent.App):
    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        await turn.txt("hi")  # E: attr-defined
        peer = turn.session.v1
        if peer is not None:
            chunk = v1.AgentMessageChunk(content=v1.TextContent(text="x"))
            await peer.sesion_update(v1.SessionNotification(session_id="s", update=chunk))  # E: attr-defined
        await turn.tool_call("t", "edti")  # E: arg-type
        return "finished"  # E: return-value
