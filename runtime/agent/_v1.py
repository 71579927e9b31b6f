"""ACP v1's speaker: the turn ends with the ``session/prompt`` answer.

What v1 writes differently: modes are modes, commands come as an update (its answers have no
field for them), a tool call starts with ``tool_call`` and goes on with ``tool_call_update``, a
diff is ``oldText``/``newText`` (a deletion, which a v1 diff cannot say, is a text block), the
prompt is not echoed live, and the client's files are read with ``fs/read_text_file``.

Hand-written: the source is runtime/agent/_v1.py, copied into the package unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ._speaker import _CHUNK, Speaker, _commands
from ._values import AuthMethod, Edit, PermissionOption, Setup, StopReason, _some

if TYPE_CHECKING:
    from acp_types import v1

    from ..connection import AgentConnection


class V1Speaker(Speaker):
    version = "v1"

    @property
    def m(self) -> Any:
        from acp_types.v1 import models

        return models

    def capabilities(self, *, listing: bool, archive: bool, auth: bool) -> dict[str, Any]:
        # resume, load and close are always there: the default resume replays what was kept
        session: dict[str, Any] = {"close": {}, "resume": {}}
        if listing:
            session["list"] = {}
        if archive:
            session["archive"] = {}
        caps: dict[str, Any] = {"loadSession": True, "sessionCapabilities": session}
        if auth:
            caps["auth"] = {}
        return caps

    def initialize_json(self, caps: Mapping[str, Any], name: str, version: str) -> dict[str, Any]:
        from acp_types.v1 import PROTOCOL_VERSION

        return {"protocolVersion": PROTOCOL_VERSION, "agentCapabilities": caps}

    def initialize(
        self, caps: Mapping[str, Any], auth_methods: Sequence[AuthMethod], name: str, version: str, title: str | None
    ) -> Any:
        m = self.m
        methods: list[Any] = [
            m.AuthMethodAgent(**_some(id=a.id, name=a.name, description=a.description)) for a in auth_methods
        ]
        return m.InitializeResponse(
            protocol_version=1,
            agent_capabilities=m.AgentCapabilities.model_validate(caps),
            auth_methods=methods,
            agent_info=m.Implementation(**_some(name=name, version=version, title=title)),
        )

    def config(self, setup: Setup) -> list[Any]:
        m = self.m
        out = []
        for o in setup.config:
            choices = [m.SessionConfigSelectOption(value=v, name=n) for v, n in o.choices]
            extra: dict[str, Any] = {"id": o.id}
            if o.description is not None:
                extra["description"] = o.description
            if o.category is not None:
                extra["category"] = o.category
            out.append(m.SessionConfigSelect(name=o.name, current_value=o.value, options=choices, **extra))
        return out

    def setup_fields(self, setup: Setup | None) -> dict[str, Any]:
        if setup is None:
            return {}
        m = self.m
        fields: dict[str, Any] = {}
        config = self.config(setup)
        if config:
            fields["config_options"] = config
        if setup.modes:
            fields["modes"] = m.SessionModeState(
                current_mode_id=setup.mode or setup.modes[0].id,
                available_modes=[
                    m.SessionMode(**_some(id=x.id, name=x.name, description=x.description)) for x in setup.modes
                ],
            )
        return fields

    def commands_update(self, setup: Setup) -> Any | None:
        if not setup.commands:
            return None
        return self.m.AvailableCommandsUpdate(available_commands=_commands(self.m, setup.commands))

    async def prompt(self, run: Callable[[], Awaitable[StopReason]], queue: Callable[[], None], user_id: str) -> Any:
        return self.m.PromptResponse(stop_reason=await run())

    def user_shown(self, user_id: str, prompt: Sequence[Any]) -> Any | None:
        return None  # v1 does not echo the prompt

    async def ask_permission(
        self, conn: AgentConnection, session_id: str, tool_id: str, title: str, options: Sequence[PermissionOption]
    ) -> str | None:
        from acp_types.v1.peer import ClientPeer

        m = self.m
        opts = [m.PermissionOption(option_id=o.id, name=o.name, kind=o.kind) for o in options]
        call = m.ToolCallUpdate(tool_call_id=tool_id, title=title)
        answer = await ClientPeer(cast(Any, conn)).session_request_permission(
            m.RequestPermissionRequest(session_id=session_id, tool_call=call, options=opts)
        )
        return getattr(answer.outcome, "option_id", None)

    def reads_files(self, conn: AgentConnection) -> bool:
        fs = getattr(getattr(conn.peer_initialize, "client_capabilities", None), "fs", None)
        return bool(getattr(fs, "read_text_file", False))

    async def read_file(
        self, conn: AgentConnection, session_id: str, path: str, line: int | None, limit: int | None
    ) -> str:
        from acp_types.v1.peer import ClientPeer

        answer = await ClientPeer(cast(Any, conn)).fs_read_text_file(
            self.m.ReadTextFileRequest(**_some(session_id=session_id, path=path, line=line, limit=limit))
        )
        return answer.content

    def peer_v1(self, conn: AgentConnection) -> v1.ClientPeer | None:
        from acp_types.v1.peer import ClientPeer

        return ClientPeer(cast(Any, conn))

    def notification(self, session_id: str, update: Any) -> Any:
        return self.m.SessionNotification(session_id=session_id, update=update)

    def tool_content(self, text: str | None, edits: Sequence[Edit]) -> list[Any]:
        m = self.m
        out: list[Any] = []
        if text is not None:
            out.append(m.Content(content=m.TextContent(text=text)))
        for e in edits:
            if e.new_text is None:  # v1's diff has no deletion: say it in words
                out.append(m.Content(content=m.TextContent(text=f"deleted {e.path}")))
            else:
                out.append(m.Diff(path=e.path, old_text=e.old_text, new_text=e.new_text))
        return out

    def _user(self, mid: str | None, data: Mapping[str, Any]) -> Any | None:
        return None  # v1 does not echo the prompt

    def _tool(self, tool_id: str, new: bool, fields: dict[str, Any]) -> Any:
        if new:
            return self.m.ToolCall(tool_call_id=tool_id, **fields)
        return self.m.ToolCallProgress(tool_call_id=tool_id, **fields)

    def _plan(self, entries: list[Any]) -> Any:
        return self.m.Plan(entries=entries)

    def _mode(self, setup: Mapping[str, Any]) -> Any:
        return self.m.CurrentModeUpdate(current_mode_id=setup["mode"])

    def _raw(self, wire: Any) -> Any:
        return self.m.SessionNotification.model_validate({"sessionId": "-", "update": wire}).update

    def piece(self, kind: str, mid: str, text: str, first: bool, last: bool) -> list[Any]:
        m = self.m
        return [_CHUNK[kind](m)(message_id=mid, content=m.TextContent(text=text))]

    def message(self, role: str, text: str, mid: str, pieces: Sequence[str]) -> list[Any]:
        m = self.m
        return [_CHUNK[role](m)(message_id=mid, content=m.TextContent(text=p)) for p in pieces]

    def user_replay(self, mid: str, blocks: Sequence[Any]) -> list[Any]:
        return [self.m.UserMessageChunk(message_id=mid, content=b) for b in blocks]
