"""An agent that needs a login: every session method answers -32000 until the client authenticates.

    python tests/conformance/locked_agent.py

It advertises one auth method, ``token``, that needs nothing to complete (as an
env-var method would, with the variable set). The kit's ``--auth token`` logs in;
without it, what needs the login must be SKIPPED, never failed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "generated"))

from acp_types import agent


class Locked(agent.App):
    name = "locked-agent"
    version = "1.0"
    auth_methods = (agent.AuthMethod("token", "A token from the environment"),)

    async def authenticate(self, method_id: str) -> str | None:
        return None

    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        await turn.text("Logged in.")
        return "end_turn"


if __name__ == "__main__":
    asyncio.run(agent.serve_stdio(Locked()))
