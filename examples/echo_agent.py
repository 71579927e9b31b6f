"""An ACP agent that echoes each prompt back as streamed text; one class serves v1 and v2 clients.

Run by a client over stdin/stdout: ``python examples/client.py -- python examples/echo_agent.py``.
The library does the rest: message ids, v2's acknowledge/running/idle order,
``session/cancel`` (and close, archive) stopping a running echo with
``cancelled``, ``session/list`` with its filters and pages, archive.
"""

from __future__ import annotations

import asyncio
import re

import _path  # noqa: F401  (acp_types from the checkout when not installed)

from acp_types import agent


class Echo(agent.App):
    name = "echo-agent"
    version = "1.0"

    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        for piece in re.findall(r"\S+\s*", turn.prompt_text):
            await turn.text(piece)
            await asyncio.sleep(0)  # a point where session/cancel can stop the turn
        return "end_turn"


if __name__ == "__main__":
    asyncio.run(agent.serve_stdio(Echo()))
