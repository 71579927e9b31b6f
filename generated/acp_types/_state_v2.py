"""The v2 session state (``acp_types.v2.SessionState``); the shared machinery is in :mod:`acp_types.session_state`.

The v2 rules applied here, in our words (sources in ``RULES``):

- ``user_message`` / ``agent_message`` / ``agent_thought`` are upserts keyed
  by ``messageId``: ``content`` omitted leaves the content, ``null`` or
  ``[]`` clears it, an array replaces it (chunks appended so far included);
  ``_meta`` is patched the same way. A chunk appends its block; its
  ``_meta`` belongs to that block only.
- ``tool_call_update`` is an upsert keyed by ``toolCallId``: the first one
  creates the call; then each field omitted stays, ``null`` clears, a value
  replaces (``content`` and ``locations`` as whole arrays).
  ``tool_call_content_chunk`` appends one item to the call's content.
- ``terminal_update`` is an upsert keyed by ``terminalId`` with the same
  patch rules; its ``output`` is a snapshot that replaces every byte held.
  ``terminal_output_chunk`` data is decoded on its own and the bytes
  appended.
- ``plan_update`` replaces the content of the plan its ``planId`` names;
  ``plan_removed`` drops it.
- ``available_commands_update`` and ``config_option_update`` carry the whole
  list, which replaces the one held (``[]`` clears).
- ``session_info_update``: omitted stays, ``null`` clears ``title`` and
  ``updatedAt``, ``archived: null`` changes nothing.
- ``state_update`` is the run state (``running``, ``idle`` with its stop
  reason and usage, ``requires_action``); other updates do not change it.
- An unknown ``sessionUpdate`` is kept, as it came, in ``extensions``.

Hand-written: the source is runtime/_state_v2.py, copied into the package unchanged.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from acp_types import v2 as _v2
from acp_types._runtime import UnknownVariant
from acp_types.session_state import (
    RULES,
    BaseSessionState,
    Message,
    Rule,
    StateFormatError,
    Terminal,
    ToolCall,
    _decode_base64,
    _is_absolute,
    _known_values,
    _Reader,
    _tag,
    _wire,
    shared_handlers,
)
from acp_types.v2 import models as m

__all__ = ["SessionState"]

_TOOL_KINDS = _known_values(m.ToolKind)
_TOOL_STATUSES = _known_values(m.ToolCallStatus)
_STOP_REASONS = _known_values(m.StopReason)
_PRIORITIES = _known_values(m.PlanEntryPriority)
_ENTRY_STATUSES = _known_values(m.PlanEntryStatus)
_CONTENT_TYPES = frozenset({"content", "diff", "terminal"})
_PLAN_TYPES = frozenset({"items", "file", "markdown"})
_STATES = frozenset({"running", "idle", "requires_action"})
_KNOWN_UPDATES = frozenset(
    {
        "agent_message",
        "agent_message_chunk",
        "agent_thought",
        "agent_thought_chunk",
        "available_commands_update",
        "compaction_summary_chunk",
        "compaction_update",
        "config_option_update",
        "notice",
        "plan_removed",
        "plan_update",
        "session_info_update",
        "state_update",
        "terminal_output_chunk",
        "terminal_update",
        "tool_call_content_chunk",
        "tool_call_update",
        "usage_update",
        "user_message",
        "user_message_chunk",
    }
)


class SessionState(BaseSessionState):
    """The state of one v2 session, built from its ``session/update`` notifications (see :mod:`acp_types.session_state`).

    Beyond the shared attributes: ``terminals`` (by ``terminalId``) and
    ``run_state`` (the last ``state_update``: ``RunningStateUpdate``,
    ``IdleStateUpdate``, ``RequiresActionStateUpdate``, or an
    ``UnknownVariant`` for a state this version does not know).
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
    terminals: dict[str, Terminal]
    run_state: m.RunningStateUpdate | m.IdleStateUpdate | m.RequiresActionStateUpdate | UnknownVariant | None

    VERSION: ClassVar[str] = "v2"
    RULES: ClassVar[Mapping[str, Rule]] = MappingProxyType({k: r for k, r in RULES.items() if "v2" in r.versions})
    _notification: ClassVar[type[Any]] = m.UpdateSessionNotification
    _block_types: ClassVar[frozenset[str]] = frozenset({"text", "image", "audio", "resource_link", "resource"})

    def __init__(self, session_id: str | None = None, *, strict: bool = False) -> None:
        super().__init__(session_id, strict=strict)
        self.terminals = {}
        self.run_state = None

    def message(self, message_id: str) -> Message[m.ContentBlock] | None:
        """The message with this ``messageId``, if any."""
        return self._by_id.get(message_id)

    @classmethod
    def _models_module(cls) -> Any:
        return _v2

    # -- reading ----------------------------------------------------------

    @property
    def state(self) -> str | None:
        """``running``, ``idle``, ``requires_action`` (or an unknown state's name); ``None`` before any state_update."""
        if self.run_state is None:
            return None
        state = getattr(self.run_state, "state", None) or _tag(self.run_state, "state")
        return state if isinstance(state, str) else None

    @property
    def busy(self) -> bool:
        """Foreground work is under way (running or waiting for the user)."""
        return self.state in ("running", "requires_action")

    # -- turns ------------------------------------------------------------

    def finish(self, response: Any = None) -> list[Any]:
        """The client stops waiting for the turn: check that it reached ``idle`` (``turn.idle``) and the rest.

        ``response`` is the turn's ``PromptResponse``, when the client has it:
        a ``messageId`` in it (newer schemas) is checked against the user
        message the agent reported. Returns the problems found.
        """
        before = len(self.problems)
        if self.in_turn and self.prompted:
            self._report("turn.idle", f"turn {self.turn} finished without an idle state_update", at_end=True)
            self._close_turn(at_end=True)
        self._check_user_id(response)
        return self.problems[before:]

    def _check_user_id(self, response: Any) -> None:
        message_id = getattr(response, "message_id", None)
        if message_id is None:
            extra = getattr(response, "model_extra", None) or {}
            message_id = extra.get("messageId")
        if isinstance(message_id, str) and self._turn_user and message_id not in self._turn_user:
            self._report(
                "turn.user-message-id",
                f"the prompt response names {message_id!r}, the user message is {self._turn_user[0]!r}",
                at_end=True,
            )

    def _close_turn(self, at_end: bool = False) -> None:
        if self.prompted and not self._turn_user:
            self._report("turn.user-message", f"turn {self.turn} reported no user message", at_end=at_end)
        if not self._turn_started:
            self._report("turn.running", f"turn {self.turn} reported no running state", at_end=at_end)
        self.in_turn = False
        self.prompted = False

    # -- the updates -------------------------------------------------------

    def _state(self, update: Any) -> None:
        state = getattr(update, "state", None)
        if isinstance(update, UnknownVariant):
            state = _tag(update, "state")
            self._check_value("state", state, _STATES)
        if state in ("running", "requires_action"):
            if not self.in_turn:  # foreground work the agent started on its own
                self.turn += 1
                self.in_turn = True
                self.prompted = False
                self.cancelled = False
                self._turn_user = []
            self._turn_started = True
        elif state == "idle":
            ends_work = self.in_turn
            stop = update.stop_reason
            if ends_work:
                if stop is None:
                    self._report("turn.stop-reason", "the idle state_update ending the turn has no stopReason")
                elif self.cancelled and stop != "cancelled":
                    self._report("cancel.stop-reason", f"the cancelled turn ended with {stop!r}")
                self._check_value("stopReason", stop, _STOP_REASONS)
                if self.cancelled:
                    self._cancelled_turn = self.turn
                self._close_turn()
                self.stop_reason = stop
                if update.usage is not None:
                    self.turn_usage = update.usage
            # a repeated idle (a snapshot) is no new completion: stop reason and usage stay
        self.run_state = update

    def _late_output(self, update: Any) -> bool:
        # background work may go on while idle: only a message of the cancelled turn counts
        message_id = getattr(update, "message_id", None)
        msg = self._by_id.get(message_id) if isinstance(message_id, str) else None
        return msg is not None and msg.turn == self._cancelled_turn and not self.in_turn

    def _tool_update(self, update: Any) -> None:
        call, new = self._tool_call(update.tool_call_id)
        if new and update.title is None:
            self._check_title(update)
        self._patch_tool_call(call, update, null_clears=True)
        if self.strict:
            self._check_value("tool kind", update.kind, _TOOL_KINDS)
            self._check_value("tool status", update.status, _TOOL_STATUSES)
            for item in update.content or ():
                self._check_content(item)

    def _check_title(self, update: Any) -> None:
        self._report("tool-call.title", f"tool call {update.tool_call_id!r} first reported without a title")

    def _check_content(self, item: Any) -> None:
        kind = getattr(item, "type", None) or _tag(item, "type")
        self._check_value("tool call content type", kind, _CONTENT_TYPES)
        inner = getattr(item, "content", None)
        if inner is not None and kind == "content":
            self._check_blocks([inner])

    def _tool_chunk(self, update: Any) -> None:
        call, new = self._tool_call(update.tool_call_id)
        if new:
            self._report("tool-call.chunk-unknown", f"content chunk for unknown tool call {update.tool_call_id!r}")
        call.content.append(update.content)
        if update.meta is not None:
            call.chunk_meta[len(call.content) - 1] = update.meta
        if self.strict:
            self._check_content(update.content)

    def _terminal(self, terminal_id: str) -> Terminal:
        terminal = self.terminals.get(terminal_id)
        if terminal is None:
            terminal = self.terminals[terminal_id] = Terminal(terminal_id)
        return terminal

    def _terminal_update(self, update: Any) -> None:
        terminal = self._terminal(update.terminal_id)
        fields = update.model_fields_set
        if "command" in fields:
            terminal.command = update.command
        if "cwd" in fields:
            terminal.cwd = update.cwd
            if self.strict and update.cwd is not None and not _is_absolute(update.cwd):
                self._report("terminal.cwd", f"terminal {update.terminal_id!r} cwd {update.cwd!r} is not absolute")
        if "output" in fields:
            if update.output is None:
                terminal.output, terminal.output_meta = b"", None
            else:
                data = _decode_base64(update.output.data)
                if data is None:
                    self._report("terminal.base64", f"terminal {update.terminal_id!r} snapshot is not base64")
                else:  # a snapshot replaces every byte held, never spliced
                    terminal.output, terminal.output_meta = data, update.output.meta
        if "exit_status" in fields:
            terminal.exit_status = update.exit_status
        if "meta" in fields:
            terminal.meta = update.meta

    def _terminal_chunk(self, update: Any) -> None:
        terminal = self._terminal(update.terminal_id)
        data = _decode_base64(update.data)
        if data is None:
            self._report("terminal.base64", f"terminal {update.terminal_id!r} chunk is not base64")
            return
        terminal.append(data)  # each chunk decoded on its own, the bytes appended (not `bytes +=`: O(N^2))

    def _check_plan(self, plan: Any) -> None:
        if not self.strict:
            return
        kind = getattr(plan, "type", None) or _tag(plan, "type")
        self._check_value("plan type", kind, _PLAN_TYPES)
        for entry in getattr(plan, "entries", None) or ():
            self._check_value("plan entry priority", entry.priority, _PRIORITIES)
            self._check_value("plan entry status", entry.status, _ENTRY_STATUSES)

    def _unknown(self, update: Any) -> None:
        tag = _tag(update, "sessionUpdate")
        if tag == "state_update":  # a state this version does not know: still the run state
            self._state(update)
            return
        self.extensions.append(update)
        if isinstance(tag, str) and tag not in _KNOWN_UPDATES and not tag.startswith("_"):
            self._report("update.reserved", f"unknown sessionUpdate {tag!r} without a _ prefix")

    _handlers: ClassVar[dict[type, Callable[[Any, Any], None]]] = {
        m.UserMessage: lambda s, u: s._message_update("user", u),
        m.AgentMessage: lambda s, u: s._message_update("agent", u),
        m.AgentThought: lambda s, u: s._message_update("thought", u),
        m.RunningStateUpdate: _state,
        m.IdleStateUpdate: _state,
        m.RequiresActionStateUpdate: _state,
        m.ToolCallProgress: _tool_update,
        m.ToolCallContentChunk: _tool_chunk,
        m.TerminalUpdate: _terminal_update,
        m.TerminalOutputChunk: _terminal_chunk,
        **shared_handlers(m),
    }

    # -- writing out ---------------------------------------------------------

    def _wire_extra(self) -> dict[str, Any]:
        return {
            "terminals": [
                {
                    "terminalId": t.terminal_id,
                    "command": t.command,
                    "cwd": t.cwd,
                    "output": _b64(t.output),
                    "outputMeta": t.output_meta,
                    "exitStatus": _wire(t.exit_status),
                    "meta": t.meta,
                }
                for t in self.terminals.values()
            ],
            "runState": _wire(self.run_state),
        }

    def _wire_extra_read(self, data: dict[str, Any], r: _Reader) -> None:
        for i, t in enumerate(r.get(data, "terminals", "", list)):
            p = f"/terminals/{i}"
            terminal = Terminal(r.get(t, "terminalId", p, str))
            terminal.command = r.get(t, "command", p, (str, type(None)))
            terminal.cwd = r.get(t, "cwd", p, (str, type(None)))
            output = _decode_base64(r.get(t, "output", p, str))
            if output is None:
                raise StateFormatError("not base64", f"{p}/output")
            terminal.output = output
            terminal.output_meta = r.get(t, "outputMeta", p)
            terminal.exit_status = r.model("TerminalExitStatus", r.get(t, "exitStatus", p), f"{p}/exitStatus")
            terminal.meta = r.get(t, "meta", p)
            if terminal.terminal_id in self.terminals:
                raise StateFormatError("a terminalId already read", f"{p}/terminalId")
            self.terminals[terminal.terminal_id] = terminal
        self.run_state = r.model("SessionUpdate", r.get(data, "runState", ""), "/runState")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
