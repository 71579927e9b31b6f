"""Agents the remote transport's tests serve (``python -m acp_types.remote serve tests/interop/remote_agents.py:Loud``).

``Loud``: a prompt ``loud N SIZE`` streams N chunks of SIZE characters each (the output a slow
reader must not make the server keep); ``wait`` streams nothing and ends only when cancelled;
anything else is echoed word by word.
"""

from __future__ import annotations

import asyncio
import re

from acp_types import agent


class Loud(agent.App):
    name = "remote-loud"
    version = "1.0"

    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        text = turn.prompt_text
        loud = re.fullmatch(r"loud (\d+) (\d+)", text)
        if loud:
            piece = "x" * int(loud.group(2))
            for _ in range(int(loud.group(1))):
                await turn.text(piece)
            return "end_turn"
        if text == "wait":
            await asyncio.Event().wait()
        for piece in re.findall(r"\S+\s*", text):
            await turn.text(piece)
        return "end_turn"
