"""ACP v2's speaker: the ``session/prompt`` answer acknowledges; the turn follows it.

What v2 writes differently: the answer names the prompt's message id, then the turn shows a
``user_message``, ``state_update`` ``running`` (``requires_action`` while asking the user) and
ends with ``state_update`` ``idle`` and the stop reason; modes are a select config option of
category ``mode``; commands are in the session answers; a tool call is an upsert; a diff is a
``modify``/``add``/``delete`` change with a ``git_patch``; a message replayed in pieces first gets
its whole-message update with ``content: []``. v2 has no fs methods.

Hand-written: the source is runtime/agent/_v2.py, copied into the package unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ._speaker import _CHUNK, _WHOLE, Speaker, _commands, _patch
from ._values import AuthMethod, ConfigOption, Edit, PermissionOption, Setup, StopReason, _setup_from, _some

if TYPE_CHECKING:
    from acp_types import v2

    from ..connection import AgentConnection


class V2Speaker(Speaker):
    version = "v2"

    @property
    def m(self) -> Any:
        from acp_types.v2 import models

        return models

    def capabilities(self, *, listing: bool, archive: bool, auth: bool) -> dict[str, Any]:
        session: dict[str, Any] = {}
        if archive:
            session["archive"] = {}
        return {"session": session}

    def initialize_json(self, caps: Mapping[str, Any], name: str, version: str) -> dict[str, Any]:
        from acp_types.v2 import PROTOCOL_VERSION

        return {"protocolVersion": PROTOCOL_VERSION, "capabilities": caps, "info": {"name": name, "version": version}}

    def initialize(
        self, caps: Mapping[str, Any], auth_methods: Sequence[AuthMethod], name: str, version: str, title: str | None
    ) -> Any:
        m = self.m
        methods: list[Any] = [
            m.AuthMethodAgent(**_some(method_id=a.id, name=a.name, description=a.description)) for a in auth_methods
        ]
        return m.InitializeResponse(
            protocol_version=2,
            capabilities=m.AgentCapabilities.model_validate(caps),
            auth_methods=methods,
            info=m.Implementation(**_some(name=name, version=version, title=title)),
        )

    def config(self, setup: Setup) -> list[Any]:
        m = self.m
        options = list(setup.config)
        if setup.modes:  # v2 has no modes: they are a select option
            current = setup.mode or setup.modes[0].id
            modes = [(x.id, x.name) for x in setup.modes]
            options.insert(0, ConfigOption("mode", "Mode", current, modes, category="mode"))
        out = []
        for o in options:
            choices = [m.SessionConfigSelectOption(value=v, name=n) for v, n in o.choices]
            extra: dict[str, Any] = {"config_id": o.id}
            if o.description is not None:
                extra["description"] = o.description
            if o.category is not None:
                extra["category"] = o.category
            out.append(m.SessionConfigSelect(name=o.name, current_value=o.value, options=choices, **extra))
        return out

    def setup_fields(self, setup: Setup | None) -> dict[str, Any]:
        if setup is None:
            return {}
        fields: dict[str, Any] = {}
        config = self.config(setup)
        if config:
            fields["config_options"] = config
        if setup.commands:
            fields["available_commands"] = _commands(self.m, setup.commands)
        return fields

    def commands_update(self, setup: Setup) -> Any | None:
        return None  # the answers have them

    async def prompt(self, run: Callable[[], Awaitable[StopReason]], queue: Callable[[], None], user_id: str) -> Any:
        queue()
        return self.m.PromptResponse(message_id=user_id)

    def user_shown(self, user_id: str, prompt: Sequence[Any]) -> Any | None:
        return self.m.UserMessage(message_id=user_id, content=list(prompt))

    def running(self) -> Any | None:
        return self.m.RunningStateUpdate()

    def idle(self, reason: StopReason | None) -> Any | None:
        return self.m.IdleStateUpdate(stop_reason=reason) if reason else self.m.IdleStateUpdate()

    def asking(self) -> Any | None:
        return self.m.RequiresActionStateUpdate()

    async def ask_permission(
        self, conn: AgentConnection, session_id: str, tool_id: str, title: str, options: Sequence[PermissionOption]
    ) -> str | None:
        from acp_types.v2.peer import ClientPeer

        m = self.m
        opts = [m.PermissionOption(option_id=o.id, name=o.name, kind=o.kind) for o in options]
        subject = m.ToolCallPermissionSubject(tool_call=m.ToolCallUpdate(tool_call_id=tool_id))
        answer = await ClientPeer(cast(Any, conn)).session_request_permission(
            m.RequestPermissionRequest(session_id=session_id, title=title, subject=subject, options=opts)
        )
        return getattr(answer.outcome, "option_id", None)

    def peer_v2(self, conn: AgentConnection) -> v2.ClientPeer | None:
        from acp_types.v2.peer import ClientPeer

        return ClientPeer(cast(Any, conn))

    def notification(self, session_id: str, update: Any) -> Any:
        return self.m.UpdateSessionNotification(session_id=session_id, update=update)

    def tool_content(self, text: str | None, edits: Sequence[Edit]) -> list[Any]:
        m = self.m
        out: list[Any] = []
        if text is not None:
            out.append(m.Content(content=m.TextContent(text=text)))
        for e in edits:
            op = (
                m.DiffAddChange
                if e.old_text is None
                else m.DiffDeleteChange
                if e.new_text is None
                else m.DiffModifyChange
            )
            out.append(m.Diff(changes=[op(path=e.path)], patch=m.DiffPatch(format="git_patch", text=_patch(e))))
        return out

    def _user(self, mid: str | None, data: Mapping[str, Any]) -> Any | None:
        return self.m.UserMessage(message_id=mid, content=self.blocks(data))  # the prompt, inserted whole

    def _tool(self, tool_id: str, new: bool, fields: dict[str, Any]) -> Any:
        return self.m.ToolCallProgress(tool_call_id=tool_id, **fields)

    def _plan(self, entries: list[Any]) -> Any:
        return self.m.PlanUpdate(plan=self.m.PlanItems(plan_id="plan", entries=entries))

    def _mode(self, setup: Mapping[str, Any]) -> Any:
        return self.m.ConfigOptionUpdate(config_options=self.config(_setup_from(setup)))

    def _raw(self, wire: Any) -> Any:
        return self.m.UpdateSessionNotification.model_validate({"sessionId": "-", "update": wire}).update

    def piece(self, kind: str, mid: str, text: str, first: bool, last: bool) -> list[Any]:
        m = self.m
        chunk = _CHUNK[kind](m)(message_id=mid, content=m.TextContent(text=text))
        if not first:
            return [chunk]
        if last:  # the whole text of this stretch fits one update
            return [_WHOLE[kind](m)(message_id=mid, content=[m.TextContent(text=text)] if text else [])]
        return [_WHOLE[kind](m)(message_id=mid, content=[]), chunk]

    def message(self, role: str, text: str, mid: str, pieces: Sequence[str]) -> list[Any]:
        m = self.m
        if len(pieces) == 1:
            return [_WHOLE[role](m)(message_id=mid, content=[m.TextContent(text=text)])]
        chunks = [_CHUNK[role](m)(message_id=mid, content=m.TextContent(text=p)) for p in pieces]
        return [_WHOLE[role](m)(message_id=mid, content=[]), *chunks]

    def user_replay(self, mid: str, blocks: Sequence[Any]) -> list[Any]:
        return [self.m.UserMessage(message_id=mid, content=list(blocks))]
