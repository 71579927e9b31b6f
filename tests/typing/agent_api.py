"""Checked by mypy --strict (tests/test_agent_typing.py): the agent API is typed, a misspelling is caught."""

from __future__ import annotations

from typing_extensions import assert_type

from acp_types import agent, v1, v2


class Typed(agent.App):
    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        assert_type(turn.session, agent.Session)
        assert_type(turn.session.v1, v1.ClientPeer | None)
        assert_type(turn.session.v2, v2.ClientPeer | None)
        assert_type(await turn.read_file("/a"), str | None)
        tool = await turn.tool_call("t", "edit")
        assert_type(tool, agent.ToolCall)
        assert_type(await turn.permission(tool), str | None)
        assert_type(await turn.allowed(tool), bool)
        peer = turn.session.v1
        if peer is not None:
            answer = await peer.fs_read_text_file(v1.ReadTextFileRequest(session_id="s", path="/a"))
            assert_type(answer, v1.ReadTextFileResponse)
        return "end_turn"
