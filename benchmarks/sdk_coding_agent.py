"""The comparison for examples/coding_agent.py: the same agent on the official Python SDK
(agent-client-protocol 0.12.1), which speaks ACP v1 only.

Kept to count lines against ours (see benchmarks/lines_agent.py); it runs in the interop venv
(.venv-interop). The SDK has no session/archive: the routes are added by patching its router
builder, and the capability goes in as an unknown key. Load and resume, which ours gets from the
library, are left out here, so the count is in the SDK's favour.
"""

import asyncio
import re
import uuid
from pathlib import Path
from typing import Any

import acp.agent.connection as sdk_connection
from acp import (
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    text_block,
    update_agent_message,
)
from acp.agent.router import build_agent_router
from acp.helpers import (
    plan_entry,
    start_tool_call,
    tool_diff_content,
    update_agent_thought,
    update_available_commands,
    update_plan,
    update_tool_call,
)
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    AvailableCommand,
    ListSessionsResponse,
    PermissionOption,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionModeResponse,
    ToolCallLocation,
    ToolCallUpdate,
    UnstructuredCommandInput,
    UsageUpdate,
)
from pydantic import BaseModel, ConfigDict, Field

PAGE = 50


class ArchiveParams(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    session_id: str = Field(alias="sessionId")


def _router_with_archive(agent: Any, use_unstable_protocol: bool = False) -> Any:
    router = build_agent_router(agent, use_unstable_protocol=use_unstable_protocol)
    router.route_request("session/archive", ArchiveParams, agent, "archive_session")
    router.route_request("session/unarchive", ArchiveParams, agent, "unarchive_session")
    return router


sdk_connection.build_agent_router = _router_with_archive  # the SDK has no archive routes


class Coder(Agent):
    def on_connect(self, conn: Any) -> None:
        self.conn = conn
        self.sessions: dict[str, dict[str, Any]] = {}
        self.tasks: dict[str, asyncio.Task[str]] = {}
        self.can_read = False

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        fs = getattr(client_capabilities, "fs", None)
        self.can_read = bool(getattr(fs, "read_text_file", False))
        session = SessionCapabilities(list=SessionListCapabilities(), archive={})  # type: ignore[call-arg]
        return InitializeResponse(
            protocol_version=1, agent_capabilities=AgentCapabilities(session_capabilities=session)
        )

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        sid = f"sess_{uuid.uuid4().hex}"
        self.sessions[sid] = {"cwd": cwd, "archived": False, "mode": "ask"}
        modes = SessionModeState(
            current_mode_id="ask",
            available_modes=[
                SessionMode(id="ask", name="Ask first"),
                SessionMode(id="auto", name="Edit without asking"),
            ],
        )
        hint = UnstructuredCommandInput(hint="OLD to NEW in PATH")
        commands = [AvailableCommand(name="rename", description="Rename a name in a file", input=hint)]
        asyncio.get_running_loop().call_soon(
            lambda: asyncio.ensure_future(
                self.conn.session_update(session_id=sid, update=update_available_commands(commands))
            )
        )
        return NewSessionResponse(session_id=sid, modes=modes)

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        self.known(session_id)["mode"] = mode_id
        return SetSessionModeResponse()

    def known(self, session_id: str) -> dict[str, Any]:
        if session_id not in self.sessions:
            raise RequestError(-32002, f"no session {session_id!r}")
        return self.sessions[session_id]

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        archived = kwargs.get("archived") or (kwargs.get("field_meta") or {}).get("archived") or "exclude"
        found = [
            SessionInfo(session_id=sid, cwd=s["cwd"], archived=s["archived"])  # type: ignore[call-arg]
            for sid, s in self.sessions.items()
            if (cwd is None or s["cwd"] == cwd) and (archived == "include" or s["archived"] == (archived == "only"))
        ]
        ids = [s.session_id for s in found]
        if cursor is not None and cursor not in ids:
            raise RequestError.invalid_params({"cursor": cursor})
        start = ids.index(cursor) if cursor else 0
        more = found[start + PAGE : start + PAGE + 1]
        return ListSessionsResponse(
            sessions=found[start : start + PAGE], next_cursor=more[0].session_id if more else None
        )

    async def archive_session(self, params: ArchiveParams) -> dict[str, Any]:
        session = self.known(params.session_id)
        if not session["archived"]:
            info = {"sessionUpdate": "session_info_update", "archived": True}
            await self.conn.session_update(session_id=params.session_id, update=info)
        session["archived"] = True
        await self.stop(params.session_id)
        return {}

    async def unarchive_session(self, params: ArchiveParams) -> dict[str, Any]:
        self.known(params.session_id)["archived"] = False
        return {}

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        task = self.tasks.get(session_id)
        if task is not None:
            task.cancel()

    async def stop(self, session_id: str) -> None:
        task = self.tasks.get(session_id)
        if task is not None and not task.done():
            task.cancel()
            try:
                await asyncio.shield(task)
            except BaseException:
                pass

    async def prompt(self, prompt: Any, session_id: str, **kwargs: Any) -> PromptResponse:
        self.known(session_id)
        task = asyncio.ensure_future(self.turn(session_id, prompt))
        self.tasks[session_id] = task
        try:
            return PromptResponse(stop_reason=await asyncio.shield(task))
        except asyncio.CancelledError:
            if not task.cancelled():
                task.cancel()
                raise
            return PromptResponse(stop_reason="cancelled")
        finally:
            self.tasks.pop(session_id, None)

    async def say(self, sid: str, text: str, message_id: str) -> None:
        chunk = update_agent_message(text_block(text))
        chunk.message_id = message_id
        await self.conn.session_update(session_id=sid, update=chunk)

    async def turn(self, sid: str, prompt: Any) -> str:
        text_in = "".join(getattr(b, "text", "") for b in prompt)
        reply_id = f"msg_{uuid.uuid4().hex}"
        found = re.search(r"rename (\w+) to (\w+) in (\S+)", text_in)
        if found is None:
            await self.say(sid, "Tell me what to rename: `rename OLD to NEW in PATH`.", reply_id)
            return "end_turn"
        old, new, path = found.groups()
        thought = update_agent_thought(text_block(f"Replace the word {old} with {new} in {path}."))
        thought.message_id = f"msg_{uuid.uuid4().hex}"
        await self.conn.session_update(session_id=sid, update=thought)
        steps = [f"read {path}", f"rename {old} to {new}"]
        await self.conn.session_update(
            session_id=sid, update=update_plan([plan_entry(steps[0], status="in_progress"), plan_entry(steps[1])])
        )
        read_id, edit_id = f"call_{uuid.uuid4().hex}", f"call_{uuid.uuid4().hex}"
        where = [ToolCallLocation(path=path)]
        await self.conn.session_update(
            session_id=sid,
            update=start_tool_call(read_id, f"Read {path}", kind="read", status="pending", locations=where),
        )
        if self.can_read:
            text = (await self.conn.read_text_file(session_id=sid, path=path)).content
        else:
            text = await asyncio.to_thread(Path(path).read_text)
        await self.conn.session_update(session_id=sid, update=update_tool_call(read_id, status="completed"))
        await self.conn.session_update(
            session_id=sid,
            update=update_plan([plan_entry(steps[0], status="completed"), plan_entry(steps[1], status="in_progress")]),
        )
        edited = re.sub(rf"\b{re.escape(old)}\b", new, text)
        diff = [tool_diff_content(path, edited, text)]
        title = f"Rename {old} to {new}"
        start = start_tool_call(
            edit_id, title, kind="edit", status="pending", locations=where, raw_input={"path": path}
        )
        await self.conn.session_update(session_id=sid, update=start)
        await self.conn.session_update(
            session_id=sid, update=update_tool_call(edit_id, status="in_progress", content=diff)
        )
        if self.sessions[sid]["mode"] != "auto":
            options = [
                PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
                PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
            ]
            answer = await self.conn.request_permission(
                session_id=sid, tool_call=ToolCallUpdate(tool_call_id=edit_id, title=title), options=options
            )
            if not (isinstance(answer.outcome, AllowedOutcome) and answer.outcome.option_id == "allow"):
                rejected = [tool_content_text("The user rejected the edit.")]
                await self.conn.session_update(
                    session_id=sid, update=update_tool_call(edit_id, status="failed", content=rejected)
                )
                await self.say(sid, "Left the file as it was.", reply_id)
                return "end_turn"
        await self.conn.session_update(
            session_id=sid, update=update_tool_call(edit_id, status="completed", content=diff)
        )
        await self.conn.session_update(
            session_id=sid, update=update_plan([plan_entry(s, status="completed") for s in steps])
        )
        count = len(re.findall(rf"\b{re.escape(old)}\b", text))
        await self.say(
            sid, f"Renamed {count} occurrence{'s' * (count != 1)} of `{old}` to `{new}` in {path}.", reply_id
        )
        usage = UsageUpdate(session_update="usage_update", used=len(text) // 4, size=128_000)
        await self.conn.session_update(session_id=sid, update=usage)
        return "end_turn"


def tool_content_text(text: str) -> Any:
    from acp.helpers import tool_content

    return tool_content(text_block(text))


if __name__ == "__main__":
    asyncio.run(run_agent(Coder()))
