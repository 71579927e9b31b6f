"""``BaseSessionState``: what the v1 and v2 states share (applying, turns and replays, reporting, copying).

A version's class (``acp_types._state_v1``, ``acp_types._state_v2``) maps
its update classes to handlers in ``_handlers`` (:func:`shared_handlers`
gives those both versions apply alike) and adds its own checks and keys.
The rules come from ``_rules``, the records from ``_values``, the JSON form
from ``_saved``; the helpers at the end are shared with the versions'
checks.

Hand-written: the source is runtime/session_state/_base.py, which the
generator copies into the package unchanged.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, Literal

from ._rules import RULES, Problem, Rule
from ._saved import _decode, _Reader, read_state, write_state
from ._values import Compaction, Info, Message, ToolCall


class BaseSessionState:
    """What the v1 and v2 states share; use ``acp_types.v1.SessionState`` or ``acp_types.v2.SessionState``."""

    VERSION: ClassVar[str] = ""
    RULES: ClassVar[Mapping[str, Rule]] = RULES
    """The rules of this version (a subset of :data:`RULES`)."""

    # set by each version's class
    _models: ClassVar[Any] = None
    _notification: ClassVar[type[Any]] = object

    def __init__(self, session_id: str | None = None, *, strict: bool = False) -> None:
        self.session_id: str | None = session_id
        """The session followed: given, or taken from the first update."""
        self.strict = strict
        self.position = 0
        """How many updates have been applied (including those reported and not applied)."""
        self.problems: list[Problem] = []
        self.transcript: list[Message[Any] | ToolCall[Any, Any]] = []
        """Messages and tool calls in the order they first appeared."""
        self.messages: list[Message[Any]] = []
        """Every message, in the order it first appeared."""
        self.tool_calls: dict[str, ToolCall[Any, Any]] = {}
        """Every tool call by ``toolCallId``, in the order it first appeared."""
        self.plans: dict[str, Any] = {}
        """Plans of ``plan_update`` by ``planId``: the version's plan content models (``PlanItems``...).

        v1's stable ``plan`` update is not here: it is ``v1.SessionState.plan``."""
        self.available_commands: list[Any] | None = None
        """The last full list of commands (``None``: never advertised)."""
        self.config_options: list[Any] | None = None
        """The last full list of config options (``None``: never given)."""
        self.info = Info()
        self.usage: Any = None
        """The last ``usage_update`` (context window and cost)."""
        self.turn_usage: Any = None
        """Token usage of the last ended turn, when the agent reported it."""
        self.stop_reason: str | None = None
        """The stop reason of the last ended turn."""
        self.notices: list[Any] = []
        self.compactions: dict[str, Compaction] = {}
        self.extensions: list[Any] = []
        """Updates this version does not know, kept as they came (``UnknownVariant`` models)."""
        # turn and replay bookkeeping (written out by to_json too)
        self.turn = 0
        self.in_turn = False
        self.prompted = False
        self.cancelled = False
        self.replaying = False
        self._turn_user: list[str] = []
        self._turn_started = False
        self._cancelled_turn: int | None = None
        self._replay_reset: set[str] = set()
        self._by_id: dict[str, Message[Any]] = {}

    # -- reading ----------------------------------------------------------

    def message(self, message_id: str) -> Message[Any] | None:
        """The message with this ``messageId``, if any."""
        return self._by_id.get(message_id)

    @property
    def ok(self) -> bool:
        """No problem found so far."""
        return not self.problems

    def rules_broken(self) -> list[str]:
        """The ids of the rules broken so far, each once, in the order first broken."""
        return list(dict.fromkeys(p.rule for p in self.problems))

    # -- applying ---------------------------------------------------------

    def apply(self, notification: Any) -> list[Problem]:
        """Apply one ``session/update`` (its params model, or their wire dict); return the problems it raised.

        A dict is parsed as the version's ``session/update`` params (its
        errors are pydantic's ``ValidationError``, a ``ValueError``). A
        notification of another version is a ``TypeError``.
        """
        if isinstance(notification, dict):
            notification = self._models_module().parse_params("session/update", notification)
        if not isinstance(notification, self._notification):
            raise TypeError(
                f"{type(self).__module__}.SessionState applies {self._notification.__name__}, "
                f"not {type(notification).__module__}.{type(notification).__name__}"
            )
        before = len(self.problems)
        self._current = notification
        self._at = self.position
        self.position += 1
        if self.session_id is None:
            self.session_id = notification.session_id
        if notification.session_id != self.session_id:
            self._report(
                "session.other",
                f"update for session {notification.session_id!r}, this state follows {self.session_id!r}",
            )
        else:
            update = notification.update
            if self._cancelled_turn is not None and not self.replaying and self._late_output(update):
                self._report("cancel.after-end", f"output of the cancelled turn {self._cancelled_turn} after it ended")
                self._cancelled_turn = None  # reported once per turn
            handler = self._handlers.get(type(update))
            if handler is None:
                self._unknown(update)
            else:
                handler(self, update)
        self._current = None
        return self.problems[before:]

    def apply_all(self, notifications: Any) -> list[Problem]:
        """Apply each notification in order; return the problems they raised."""
        found: list[Problem] = []
        for notification in notifications:
            found.extend(self.apply(notification))
        return found

    def apply_setup(self, response: Any) -> None:
        """Take the initial state a setup response carries (``session/new``, ``session/resume``, ``session/load``,
        ``session/set_config_option``): config options, available commands (v2) and modes (v1), when present."""
        fields: set[str] = getattr(response, "model_fields_set", set())
        if "config_options" in fields and response.config_options is not None:
            self.config_options = list(response.config_options)
        if "available_commands" in fields and response.available_commands is not None:
            self.available_commands = list(response.available_commands)
        self._setup_extra(response, fields)

    def _setup_extra(self, response: Any, fields: set[str]) -> None:
        pass

    def _late_output(self, update: Any) -> bool:
        """Whether ``update`` is output of the cancelled turn that has ended (see ``cancel.after-end``)."""
        raise NotImplementedError

    # -- turns and replays ---------------------------------------------------

    def begin_turn(self) -> None:
        """The client sent ``session/prompt``: a new turn starts."""
        self.turn += 1
        self.in_turn = True
        self.prompted = True
        self.cancelled = False
        self._turn_user = []
        self._turn_started = False
        self._cancelled_turn = None

    def note_cancel(self) -> None:
        """The client sent ``session/cancel`` for this session."""
        self.cancelled = True

    def begin_replay(self) -> None:
        """The client asked for a history replay (v1 ``session/load``, v2 ``session/resume`` with ``replayFrom``)."""
        self.replaying = True
        self._replay_reset = set()

    def end_replay(self) -> None:
        """The replay's request was answered: the history is complete."""
        self.replaying = False
        self._replay_reset = set()

    # -- reporting ---------------------------------------------------------

    _current: Any = None
    _at = 0

    def _report(self, rule_id: str, message: str, *, at_end: bool = False) -> None:
        rule = RULES[rule_id]
        if not (self.strict or rule.lenient) or rule_id not in type(self).RULES:
            return
        update = None if at_end or self._current is None else self._current.to_wire()
        position = self.position if at_end else self._at
        self.problems.append(Problem(rule.id, rule.level, rule.source, message, position, update))

    def _check_value(self, what: str, value: Any, known: frozenset[str]) -> None:
        if self.strict and isinstance(value, str) and value not in known and not value.startswith("_"):
            self._report("value.reserved", f"{what} {value!r} is neither known nor _-prefixed")

    # -- messages ------------------------------------------------------------

    def _new_message(self, message_id: str | None, role: str) -> Message[Any]:
        msg: Message[Any] = Message(message_id, role, turn=self.turn)
        self.messages.append(msg)
        self.transcript.append(msg)
        if message_id is not None:
            self._by_id[message_id] = msg
        return msg

    def _check_kind(self, msg: Message[Any], role: str) -> None:
        if msg.role != role:
            self._report(
                "message.kind", f"messageId {msg.message_id!r} belongs to a {msg.role} message, not a {role} one"
            )

    def _message_update(self, role: str, update: Any) -> None:
        """A whole-message upsert (v2): content replaces when given (null or [] clears), _meta patches."""
        message_id = update.message_id
        msg = self._by_id.get(message_id)
        if msg is None:
            msg = self._new_message(message_id, role)
        else:
            self._check_kind(msg, role)
        fields = update.model_fields_set
        if "content" in fields:
            msg.content = list(update.content or [])
            msg.chunk_meta = {}
            msg._sync()
            self._check_blocks(msg.content)
        if "meta" in fields:
            msg.meta = update.meta
        msg.turn = self.turn
        if self.replaying:
            self._replay_reset.add(message_id)
        if role == "user":
            self._turn_user.append(message_id)

    def _message_chunk(self, role: str, update: Any) -> None:
        """A chunk appends one block to its message; its _meta stays with that block."""
        message_id = update.message_id
        if message_id is None:  # v1 without ids: consecutive chunks of one role in one turn are one message
            last = self.transcript[-1] if self.transcript else None
            if isinstance(last, Message) and last.message_id is None and last.role == role and last.turn == self.turn:
                msg = last
            else:
                msg = self._new_message(None, role)
        else:
            found = self._by_id.get(message_id)
            if found is None:
                msg = self._new_message(message_id, role)
            else:
                msg = found
                self._check_kind(msg, role)
                if msg.turn < self.turn and not self.replaying:
                    self._report(
                        "message.reused",
                        f"chunk for messageId {message_id!r} of turn {msg.turn} in turn {self.turn}",
                    )
                    msg.turn = self.turn  # reported once per reuse
            if self.replaying and message_id not in self._replay_reset:
                self._report(
                    "replay.chunk-before-reset",
                    f"replayed chunk for messageId {message_id!r} before a message update resetting it",
                )
                self._replay_reset.add(message_id)  # reported once per message
            if role == "user":
                self._turn_user.append(message_id)
        msg.content.append(update.content)
        msg._sync()
        self._check_blocks([update.content])
        if "meta" in update.model_fields_set and update.meta is not None:
            msg.chunk_meta[len(msg.content) - 1] = update.meta

    def _check_blocks(self, blocks: list[Any]) -> None:
        if self.strict:
            for block in blocks:
                self._check_value(
                    "content block type", getattr(block, "type", None) or _tag(block, "type"), self._block_types
                )

    _block_types: ClassVar[frozenset[str]] = frozenset()

    # -- tool calls ----------------------------------------------------------

    _TOOL_FIELDS = ("title", "kind", "status", "content", "locations", "raw_input", "raw_output", "name", "meta")

    def _tool_call(self, tool_call_id: str) -> tuple[ToolCall[Any, Any], bool]:
        call = self.tool_calls.get(tool_call_id)
        if call is not None:
            return call, False
        call = ToolCall(tool_call_id)
        self.tool_calls[tool_call_id] = call
        self.transcript.append(call)
        return call, True

    def _patch_tool_call(self, call: ToolCall[Any, Any], update: Any, null_clears: bool) -> None:
        fields = update.model_fields_set
        for name in self._TOOL_FIELDS:
            if name not in fields:
                continue
            value = getattr(update, name)
            if value is None and not null_clears:
                continue
            if name in ("content", "locations"):
                setattr(call, name, list(value or []))
                if name == "content":
                    call.chunk_meta = {}
            else:
                setattr(call, name, value)

    # -- the rest ------------------------------------------------------------

    def _session_info(self, update: Any) -> None:
        fields = update.model_fields_set
        info = self.info
        # omitted: unchanged; null clears title and updatedAt; archived null changes nothing (seed 000)
        if "title" in fields:
            info.title = update.title
        if "updated_at" in fields:
            info.updated_at = update.updated_at
        if "archived" in fields and update.archived is not None:
            info.archived = update.archived
        if "meta" in fields:
            info.meta = update.meta
        extra = update.model_extra or {}
        bad = sorted(key for key in ("sessionId", "cwd", "additionalDirectories") if key in extra)
        if bad and self.strict:
            self._report("session-info.fields", f"session_info_update carries {', '.join(bad)}")

    def _commands(self, update: Any) -> None:
        self.available_commands = list(update.available_commands)

    def _config(self, update: Any) -> None:
        self.config_options = list(update.config_options)

    def _usage(self, update: Any) -> None:
        self.usage = update

    def _notice(self, update: Any) -> None:
        self.notices.append(update)

    def _plan_update(self, update: Any) -> None:
        plan = update.plan
        # every plan variant carries a planId, custom ones too (the schema rejects one without)
        plan_id = getattr(plan, "plan_id", None) or _tag(plan, "planId")
        self._check_plan(plan)
        self.plans[plan_id] = plan  # a plan's new content replaces the old, entries and all

    def _check_plan(self, plan: Any) -> None:
        pass

    def _plan_removed(self, update: Any) -> None:
        self.plans.pop(update.plan_id, None)

    def _compaction(self, update: Any) -> None:
        entry = self.compactions.get(update.compaction_id)
        if entry is None:
            entry = self.compactions[update.compaction_id] = Compaction(update.compaction_id)
        fields = update.model_fields_set
        entry.status = update.status
        if "summary" in fields:
            entry.summary = list(update.summary or [])
        if "error" in fields:
            entry.error = update.error

    def _compaction_chunk(self, update: Any) -> None:
        entry = self.compactions.get(update.compaction_id)
        if entry is None:
            entry = self.compactions[update.compaction_id] = Compaction(update.compaction_id)
        entry.summary.append(update.content)

    def _unknown(self, update: Any) -> None:
        self.extensions.append(update)

    _handlers: ClassVar[dict[type, Callable[[Any, Any], None]]] = {}

    # -- comparing, copying, writing out ---------------------------------------

    @classmethod
    def _models_module(cls) -> Any:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BaseSessionState) or type(other) is not type(self):
            return NotImplemented
        return self.to_wire() == other.to_wire()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"<{self.VERSION}.SessionState {self.session_id!r}: {len(self.messages)} messages, "
            f"{len(self.tool_calls)} tool calls, {self.position} updates, {len(self.problems)} problems>"
        )

    def copy(self) -> BaseSessionState:
        """An independent copy (changing one never changes the other)."""
        return self.from_wire(self.to_wire())

    __copy__ = copy

    def __deepcopy__(self, memo: dict[int, Any]) -> BaseSessionState:
        return self.copy()

    def to_json(self) -> str:
        """The whole state as JSON text (keys in a fixed order): ``from_json`` reads it back, in any process."""
        return json.dumps(self.to_wire(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> BaseSessionState:
        """The state ``to_json`` wrote. Bad text raises :class:`StateFormatError` (a ``ValueError``) with a JSON pointer.

        The text must be JSON within the wire's limits (see
        ``acp_types._wire``: unique keys, finite numbers, bounded nesting) and
        every value of the type ``to_json`` writes, so that whatever is read
        is written back by ``to_json`` and read again to an equal state.
        """
        return cls.from_wire(_decode(text))

    def to_wire(self) -> dict[str, Any]:
        """The state as JSON-ready data (what ``to_json`` writes)."""
        return write_state(self)

    def _wire_extra(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_wire(cls, data: Any) -> BaseSessionState:
        """The state :meth:`to_wire` gave (see :meth:`from_json`)."""
        return read_state(cls, data)

    def _wire_extra_read(self, data: dict[str, Any], r: _Reader) -> None:
        pass

    @classmethod
    def _validator(cls, type_name: str) -> Callable[[Any], Any]:
        cache = cls.__dict__.get("_validators_cache")
        if cache is None:
            cache = {}
            cls._validators_cache = cache  # type: ignore[attr-defined]
        found = cache.get(type_name)
        if found is None:
            from acp_types._runtime import _validated, payload_validator

            # validated as the wire is read: strict, wire names only
            validate = payload_validator(getattr(cls._models_module().models, type_name))
            found = cache[type_name] = functools.partial(_validated, validate, strict=True, by_name=False)
        return found


# -- helpers the versions' checks share too ------------------------------


def _tag(model: Any, name: str) -> Any:
    """A property of an ``UnknownVariant`` as it came (``None`` for a known model)."""
    extra = getattr(model, "model_extra", None) or {}
    return extra.get(name)


def _known_values(alias: Any) -> frozenset[str]:
    """The string literals an open enum alias names (``ToolKind`` -> {"read", ...})."""
    found: set[str] = set()

    def walk(tp: Any) -> None:
        tp = getattr(tp, "__value__", tp)
        origin = typing.get_origin(tp)
        if origin is Literal:
            found.update(a for a in typing.get_args(tp) if isinstance(a, str))
        elif origin is not None:
            for arg in typing.get_args(tp):
                walk(arg)

    walk(alias)
    return frozenset(found)


def _is_absolute(path: str) -> bool:
    if path.startswith("/"):
        return True
    # a Windows drive path (C:\ or C:/) or a UNC path
    return (len(path) > 2 and path[0].isalpha() and path[1] == ":" and path[2] in "\\/") or path.startswith("\\\\")


def _decode_base64(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


# -- for the versions' classes and their users -----------------------------


def iter_text(state: BaseSessionState) -> Iterator[str]:
    """Each transcript entry as one line of text (a simple rendering for logs and tests)."""
    for entry in state.transcript:
        if isinstance(entry, Message):
            yield f"{entry.role}: {entry.text}"
        else:
            yield f"tool {entry.tool_call_id} [{entry.status or 'pending'}] {entry.title or ''}".rstrip()


def shared_handlers(m: Any) -> dict[type, Callable[[Any, Any], None]]:
    """The updates both versions apply alike, keyed by the classes of the version's models module ``m``."""
    return {
        m.UserMessageChunk: lambda s, u: s._message_chunk("user", u),
        m.AgentMessageChunk: lambda s, u: s._message_chunk("agent", u),
        m.AgentThoughtChunk: lambda s, u: s._message_chunk("thought", u),
        m.PlanUpdate: BaseSessionState._plan_update,
        m.PlanRemoved: BaseSessionState._plan_removed,
        m.AvailableCommandsUpdate: BaseSessionState._commands,
        m.ConfigOptionUpdate: BaseSessionState._config,
        m.SessionInfoUpdate: BaseSessionState._session_info,
        m.UsageUpdate: BaseSessionState._usage,
        m.Notice: BaseSessionState._notice,
        m.CompactionUpdate: BaseSessionState._compaction,
        m.CompactionSummaryChunk: BaseSessionState._compaction_chunk,
    }
