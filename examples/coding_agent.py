"""A small coding agent, once for ACP v1 and v2: streamed text and thoughts, a plan, a tool call with a
diff behind a permission request, a file read through the client where it allows it.

    python examples/client.py -- python examples/coding_agent.py --prompt "rename x to y in /tmp/a.py"

It edits nothing on disk: it proposes the edit as a diff. Cancel, close, archive,
list (with paging), load and resume come from acp_types.agent; see its docstring.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import _path  # noqa: F401  (acp_types from the checkout when not installed)

from acp_types import agent


class Coder(agent.App):
    name = "coding-agent"
    version = "1.0"

    async def new_session(self, session: agent.Session) -> agent.Setup:
        modes = [agent.Mode("ask", "Ask first"), agent.Mode("auto", "Edit without asking")]
        commands = [agent.Command("rename", "Rename a name in a file", hint="OLD to NEW in PATH")]
        return agent.Setup(modes=modes, mode="ask", commands=commands)

    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        found = re.search(r"rename (\w+) to (\w+) in (\S+)", turn.prompt_text)
        if found is None:
            await turn.text("Tell me what to rename: `rename OLD to NEW in PATH`.")
            return "end_turn"
        old, new, path = found.groups()
        await turn.thought(f"Replace the word {old} with {new} in {path}.")
        steps = [agent.PlanEntry(f"read {path}", "in_progress"), agent.PlanEntry(f"rename {old} to {new}")]
        await turn.plan(steps)
        read = await turn.tool_call(f"Read {path}", "read", locations=[path])
        text = await turn.read_file(path)  # the editor's buffer, when the client offers it
        if text is None:
            text = await asyncio.to_thread(Path(path).read_text)
        await read.done()
        await turn.plan(
            [agent.PlanEntry(f"read {path}", "completed"), agent.PlanEntry(steps[1].content, "in_progress")]
        )
        edited = re.sub(rf"\b{re.escape(old)}\b", new, text)
        edit = await turn.tool_call(f"Rename {old} to {new}", "edit", locations=[path], raw_input={"path": path})
        await edit.update("in_progress", edits=[agent.Edit(path, text, edited)])
        if turn.session.setup.mode != "auto" and not await turn.allowed(edit):
            await edit.failed("The user rejected the edit.")
            await turn.text("Left the file as it was.")
            return "end_turn"
        await edit.done(edits=[agent.Edit(path, text, edited)])
        await turn.plan([agent.PlanEntry(s.content, "completed") for s in steps])
        count = len(re.findall(rf"\b{re.escape(old)}\b", text))
        await turn.text(f"Renamed {count} occurrence{'s' * (count != 1)} of `{old}` to `{new}` in {path}.")
        await turn.usage(used=len(text) // 4, size=128_000)
        return "end_turn"


if __name__ == "__main__":
    asyncio.run(agent.serve_stdio(Coder()))
