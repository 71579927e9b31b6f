"""The v1 session state (``acp_types.v1.SessionState``); the shared machinery is in :mod:`acp_types.session_state`.

The v1 rules applied here, in our words (sources in ``RULES``):

- ``user_message_chunk`` / ``agent_message_chunk`` / ``agent_thought_chunk``
  append their block to the message their ``messageId`` names; chunks
  without one continue the last entry of the transcript when it is a message
  of the same role without an id, of the same turn, and start a new message
  otherwise.
- ``tool_call`` creates a tool call (all of it: a second one for a known id
  replaces it); ``tool_call_update`` patches a known call: each field given
  replaces, each omitted (or ``null``, which v1 does not define as
  clearing) stays, ``content`` and ``locations`` as whole arrays.
- ``plan`` carries every entry and replaces the plan held (``state.plan``;
  ``state.plans`` is for the unstable ``plan_update`` only).
- ``current_mode_update`` sets the current mode.
- ``available_commands_update`` / ``config_option_update`` replace the
  whole list; ``session_info_update`` as in v2 (omitted stays, ``null``
  clears ``title`` and ``updatedAt``, ``archived: null`` changes nothing).
- A turn ends with the ``session/prompt`` response (:meth:`SessionState.end_turn`).
- ``session/load`` replays the whole conversation, so :meth:`begin_replay`
  starts the transcript afresh.

Hand-written: the source is runtime/_state_v1.py, copied into the package unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from acp_types import v1 as _v1
from acp_types.session_state import RULES, BaseSessionState, Message, Rule, ToolCall, _Reader, _wire, shared_handlers
from acp_types.v1 import models as m

__all__ = ["SessionState"]

_TURN_OUTPUT = (m.UserMessageChunk, m.AgentMessageChunk, m.AgentThoughtChunk, m.ToolCall, m.ToolCallProgress, m.Plan)


class SessionState(BaseSessionState):
    """The state of one v1 session, built from its ``session/update`` notifications (see :mod:`acp_types.session_state`).

    Beyond the shared attributes: ``plan`` (the entries of the last
    ``plan``; ``None`` before one), ``current_mode_id`` and
    ``available_modes`` (from :meth:`apply_setup` and ``current_mode_update``).

    Plans, one place each: v1's stable ``plan`` update (one plan, all its
    entries) goes to ``plan`` only; ``plans`` holds only the plans of the
    unstable ``plan_update`` (by ``planId``, as in v2). A v1 agent on the
    stable protocol leaves ``plans`` empty: read ``plan``.
    """

    # the shared attributes, typed with this version's models (a typo such as `state.mesages` is a type error)
    transcript: list[Message[m.ContentBlock] | ToolCall[m.ToolCallContent, m.ToolCallLocation]]
    messages: list[Message[m.ContentBlock]]
    tool_calls: dict[str, ToolCall[m.ToolCallContent, m.ToolCallLocation]]
    plans: dict[str, m.PlanUpdateContent]
    available_commands: list[m.AvailableCommand] | None
    config_options: list[m.SessionConfigOption] | None
    usage: m.UsageUpdate | None
    turn_usage: m.Usage | None
    notices: list[m.Notice]
    extensions: list[m.SessionUpdate]
    plan: list[m.PlanEntry] | None
    current_mode_id: str | None
    available_modes: list[m.SessionMode] | None

    VERSION: ClassVar[str] = "v1"
    RULES: ClassVar[Mapping[str, Rule]] = MappingProxyType({k: r for k, r in RULES.items() if "v1" in r.versions})
    _notification: ClassVar[type[Any]] = m.SessionNotification
    _block_types: ClassVar[frozenset[str]] = frozenset({"text", "image", "audio", "resource_link", "resource"})

    def __init__(self, session_id: str | None = None, *, strict: bool = False) -> None:
        super().__init__(session_id, strict=strict)
        self.plan = None
        self.current_mode_id = None
        self.available_modes = None

    def message(self, message_id: str) -> Message[m.ContentBlock] | None:
        """The message with this ``messageId``, if any."""
        return self._by_id.get(message_id)

    @classmethod
    def _models_module(cls) -> Any:
        return _v1

    def _setup_extra(self, response: Any, fields: set[str]) -> None:
        if "modes" in fields and response.modes is not None:
            self.current_mode_id = response.modes.current_mode_id
            self.available_modes = list(response.modes.available_modes)

    # -- turns and replays ---------------------------------------------------

    def end_turn(self, response: Any) -> list[Any]:
        """The ``session/prompt`` response arrived: the turn ends with its stop reason (and usage). Returns the problems found."""
        before = len(self.problems)
        stop = getattr(response, "stop_reason", None)
        if self.cancelled and stop != "cancelled":
            self._report("cancel.stop-reason", f"the cancelled turn ended with {stop!r}", at_end=True)
        self.stop_reason = stop
        if self.cancelled:
            self._cancelled_turn = self.turn
        usage = getattr(response, "usage", None)
        if usage is not None:
            self.turn_usage = usage
        self.in_turn = False
        self.prompted = False
        return self.problems[before:]

    def finish(self, response: Any = None) -> list[Any]:
        """The same as :meth:`end_turn` when given the response; without one, nothing to check in v1."""
        return self.end_turn(response) if response is not None else []

    def begin_replay(self) -> None:
        """``session/load`` replays the whole conversation: the transcript starts afresh."""
        super().begin_replay()
        self.transcript = []
        self.messages = []
        self.tool_calls = {}
        self._by_id = {}
        self.plan = None
        self.plans = {}

    # -- the updates -------------------------------------------------------

    def _late_output(self, update: Any) -> bool:
        # v1 has no background work: after the response, nothing of the turn may come
        return isinstance(update, _TURN_OUTPUT)

    def _tool_call_start(self, update: Any) -> None:
        call, new = self._tool_call(update.tool_call_id)
        if not new:
            self._report("tool-call.duplicate", f"tool_call for known toolCallId {update.tool_call_id!r}")
            fresh = type(call)(call.tool_call_id)
            for name in self._TOOL_FIELDS:
                setattr(call, name, getattr(fresh, name))
            call.chunk_meta = {}
        self._patch_tool_call(call, update, null_clears=False)

    def _tool_call_update(self, update: Any) -> None:
        call, new = self._tool_call(update.tool_call_id)
        if new:
            self._report("tool-call.unknown", f"tool_call_update for unknown toolCallId {update.tool_call_id!r}")
        self._patch_tool_call(call, update, null_clears=False)

    def _plan(self, update: Any) -> None:
        self.plan = list(update.entries)

    def _mode(self, update: Any) -> None:
        self.current_mode_id = update.current_mode_id

    _handlers: ClassVar[dict[type, Callable[[Any, Any], None]]] = {
        m.ToolCall: _tool_call_start,
        m.ToolCallProgress: _tool_call_update,
        m.Plan: _plan,
        m.CurrentModeUpdate: _mode,
        **shared_handlers(m),
    }

    # -- writing out ---------------------------------------------------------

    def _wire_extra(self) -> dict[str, Any]:
        return {
            "plan": _wire(self.plan),
            "currentModeId": self.current_mode_id,
            "availableModes": _wire(self.available_modes),
        }

    def _wire_extra_read(self, data: dict[str, Any], r: _Reader) -> None:
        plan = r.get(data, "plan", "")
        self.plan = None if plan is None else r.models("PlanEntry", plan, "/plan")
        self.current_mode_id = r.get(data, "currentModeId", "", (str, type(None)))
        modes = r.get(data, "availableModes", "")
        self.available_modes = None if modes is None else r.models("SessionMode", modes, "/availableModes")
