"""Agents on acp_types.agent that put examples/client.py to the test: ``python tests/client_agents.py KIND``.

- ``auth``: answers ``session/new`` with -32000 until the client logs in with ``token``, then echoes.
- ``slow``: says ``working`` and never ends its turn by itself (only ``session/cancel`` ends it).
- ``fails``: answers ``session/new`` with an error that has data.
- ``rewrites`` (v2): streams ``draft`` in chunks, then replaces the message with ``final answer``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "generated"))

from acp_types import agent
from acp_types.connection import RequestError


class Auth(agent.App):
    auth_methods = (agent.AuthMethod("token", "Token"),)

    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        await turn.text(turn.prompt_text)
        return "end_turn"


class Slow(agent.App):
    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        await turn.text("working")
        await asyncio.Event().wait()
        return "end_turn"


class Fails(agent.App):
    async def new_session(self, session: agent.Session) -> agent.Setup | None:
        raise RequestError(-32603, "the model is unavailable", {"retry": False})

    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        return "end_turn"


class Rewrites(agent.App):
    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        from acp_types import v2

        await turn.text("dra")
        await turn.text("ft")
        message_id = turn.session.transcript[-1].message_id
        await turn.session.send(v2.AgentMessage(message_id=message_id, content=[v2.TextContent(text="final answer")]))
        return "end_turn"


if __name__ == "__main__":
    app = {"auth": Auth, "slow": Slow, "fails": Fails, "rewrites": Rewrites}[sys.argv[1]]()
    asyncio.run(agent.serve_stdio(app))
