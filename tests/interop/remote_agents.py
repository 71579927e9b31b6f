"""Agents the remote transport's tests serve (``python -m acp_types.remote serve tests/interop/remote_agents.py:Loud``).

``Loud``: a prompt ``loud N SIZE`` streams N chunks of SIZE characters each (the output a slow
reader must not make the server keep); ``tool`` asks permission for a tool call and says ``allowed`` or ``refused``; ``stream N`` streams N one-character chunks (what
``tests/interop/ts/remote_server.mjs`` does with it, for benchmarks/remote.py); ``wait`` streams
nothing and ends only when cancelled; anything else is echoed word by word.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from acp_types import agent


class Loud(agent.App):
    name = "remote-loud"
    version = "1.0"

    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        text = turn.prompt_text
        stream = re.fullmatch(r"stream (\d+)", text)
        if stream:
            text = f"loud {stream.group(1)} 1"
        loud = re.fullmatch(r"loud (\d+) (\d+)", text)
        if loud:
            piece = "x" * int(loud.group(2))
            for _ in range(int(loud.group(1))):
                await turn.text(piece)
            return "end_turn"
        if text == "tool":  # an agent request on the session's stream, answered by the client
            tool = await turn.tool_call("Touch a file")
            await turn.text("allowed" if await turn.allowed(tool) else "refused")
            return "end_turn"
        if text == "wait":
            await asyncio.Event().wait()
        for piece in re.findall(r"\S+\s*", text):
            await turn.text(piece)
        return "end_turn"


class Streamer:
    """A v2 agent on the connection alone (no App, no store), as light as the TypeScript peer it is measured
    against in benchmarks/remote.py: ``stream N`` acknowledges, then streams N one-character chunks."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.count = 0

    async def initialize(self, params: Any) -> Any:
        from acp_types.v2 import models as m

        return m.InitializeResponse(protocol_version=2, info=m.Implementation(name="remote-streamer", version="1"))

    async def session_new(self, params: Any) -> Any:
        from acp_types.v2 import models as m

        self.count += 1
        return m.NewSessionResponse(session_id=f"stream-{self.count}")

    async def session_prompt(self, params: Any) -> Any:
        from acp_types.v2 import models as m

        self.count += 1
        message_id = f"user-{self.count}"
        task = asyncio.ensure_future(self._run(params, message_id))
        self._task = task
        return m.PromptResponse(message_id=message_id)

    async def _run(self, params: Any, message_id: str) -> None:
        from acp_types.v2 import models as m

        peer, sid = self.conn.peer, params.session_id

        async def send(update: Any) -> None:
            await peer.session_update(m.UpdateSessionNotification(session_id=sid, update=update))

        await send(m.UserMessage(message_id=message_id, content=params.prompt))
        await send(m.RunningStateUpdate())
        text = " ".join(getattr(b, "text", "") for b in params.prompt)
        match = re.fullmatch(r"stream (\d+)", text)
        reply = f"reply-{message_id}"
        for _ in range(int(match.group(1)) if match else 0):
            await send(m.AgentMessageChunk(message_id=reply, content=m.TextContent(text="x")))
        await send(m.IdleStateUpdate(stop_reason="end_turn"))
