"""A saved state: the JSON layout ``to_json`` writes and ``from_json`` reads back, and :class:`StateFormatError`.

:func:`write_state` makes a state JSON-ready data; :func:`read_state` builds
a state from it, checking each value (models with the version's validators:
strict, wire names only) and raising :class:`StateFormatError` with the JSON
pointer of the first fault. ``BaseSessionState.to_wire`` and ``from_wire``
call them; a version adds its own keys with ``_wire_extra`` and
``_wire_extra_read``. The state is named here for type checking only: this
module comes before ``_base``, which imports it.

Hand-written: the source is runtime/session_state/_saved.py, which the
generator copies into the package unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._rules import Problem
from ._values import Compaction, Info, Message

if TYPE_CHECKING:
    from ._base import BaseSessionState

FORMAT = 1
"""The version of the ``to_json`` layout; ``from_json`` refuses another."""


class StateFormatError(ValueError):
    """``from_json`` got text that is not a state this version wrote; ``pointer`` is the JSON pointer of the fault."""

    def __init__(self, message: str, pointer: str = "") -> None:
        super().__init__(f"{pointer or '/'}: {message}")
        self.pointer = pointer


def _wire(value: Any) -> Any:
    """A model (or a list of them) as its wire form; anything else as it is."""
    if isinstance(value, list):
        return [_wire(item) for item in value]
    to_wire = getattr(value, "to_wire", None)
    return to_wire() if to_wire is not None else value


class _Reader:
    """Reads the ``to_json`` layout back, with a JSON pointer in every error."""

    def __init__(self, validators: Callable[[str], Callable[[Any], Any]]) -> None:
        self._validators = validators

    def get(self, data: Any, key: str, pointer: str, kind: type | tuple[type, ...] | None = None) -> Any:
        if not isinstance(data, dict):
            raise StateFormatError("expected an object", pointer)
        if key not in data:
            raise StateFormatError(f"missing key {key!r}", pointer)
        value = data[key]
        if kind is not None:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            # a bool is an int to isinstance: not here, so that what is read is what is written back
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                raise StateFormatError(f"unexpected {type(value).__name__}", f"{pointer}/{key}")
        return value

    def count(self, data: Any, key: str, pointer: str, *, none: bool = False) -> Any:
        """A non-negative integer (or ``None`` when ``none``)."""
        value = self.get(data, key, pointer, (int, type(None)) if none else int)
        if value is not None and value < 0:
            raise StateFormatError("expected a non-negative integer", f"{pointer}/{key}")
        return value

    def strings(self, data: Any, key: str, pointer: str) -> list[str]:
        """An array of strings."""
        value: list[Any] = self.get(data, key, pointer, list)
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise StateFormatError("expected a string", f"{pointer}/{key}/{i}")
        return value

    def model(self, type_name: str, value: Any, pointer: str) -> Any:
        if value is None:
            return None
        try:
            return self._validators(type_name)(value)
        except (ValueError, TypeError, RecursionError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise StateFormatError(f"not a valid {type_name}: {first}", pointer) from None

    def models(self, type_name: str, value: Any, pointer: str) -> list[Any]:
        if not isinstance(value, list):
            raise StateFormatError("expected an array", pointer)
        return [self.model(type_name, item, f"{pointer}/{i}") for i, item in enumerate(value)]


def _index_map(value: Any, pointer: str) -> dict[int, Any]:
    if not isinstance(value, dict):
        raise StateFormatError("expected an object", pointer)
    out: dict[int, Any] = {}
    for key, meta in value.items():
        # ASCII digits only ("²" is a digit to str.isdigit), written as to_json writes them ("01" is not)
        if not (key.isascii() and key.isdigit() and str(int(key)) == key):
            raise StateFormatError("expected an index", _pointer(pointer, key))
        out[int(key)] = meta
    return out


def _pointer(pointer: str, key: str | int) -> str:
    """``pointer`` one level down (RFC 6901: ``~`` and ``/`` in a key escaped)."""
    return f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"


_DEPTH_SLACK = 2
"""How much deeper than its message a value sits in a state (a problem's update: 2 levels): accepted."""


def _decode(text: str | bytes) -> Any:
    """JSON text within the wire's limits (unique keys, finite numbers, no lone surrogate, bounded depth)."""
    from acp_types import _wire

    try:
        value = _wire._DECODER.decode(text if isinstance(text, str) else bytes(text).decode("utf-8"))
        return _wire.check_value(value, -_DEPTH_SLACK)
    except _wire.JsonLimitError as exc:
        where = "".join(_pointer("", key) for key in exc.path)
        raise StateFormatError(f"not JSON within the limits: {exc.reason}", where) from None
    except RecursionError:
        raise StateFormatError("not JSON within the limits: nested too deep") from None
    except (ValueError, TypeError) as exc:  # UnicodeDecodeError is a ValueError
        raise StateFormatError(f"not JSON: {exc}") from None


# -- a state, written and read -----------------------------------------------


def write_state(state: BaseSessionState) -> dict[str, Any]:
    """``state`` as JSON-ready data (what ``BaseSessionState.to_wire`` gives)."""
    transcript: list[dict[str, Any]] = []
    for entry in state.transcript:
        if isinstance(entry, Message):
            transcript.append(
                {
                    "kind": "message",
                    "messageId": entry.message_id,
                    "role": entry.role,
                    "content": _wire(entry.content),
                    "meta": entry.meta,
                    "chunkMeta": {str(k): v for k, v in sorted(entry.chunk_meta.items())},
                    "turn": entry.turn,
                }
            )
        else:
            transcript.append(
                {
                    "kind": "tool_call",
                    "toolCallId": entry.tool_call_id,
                    "title": entry.title,
                    "toolKind": entry.kind,
                    "status": entry.status,
                    "content": _wire(entry.content),
                    "locations": _wire(entry.locations),
                    "rawInput": entry.raw_input,
                    "rawOutput": entry.raw_output,
                    "name": entry.name,
                    "meta": entry.meta,
                    "chunkMeta": {str(k): v for k, v in sorted(entry.chunk_meta.items())},
                }
            )
    data: dict[str, Any] = {
        "format": FORMAT,
        "version": state.VERSION,
        "sessionId": state.session_id,
        "strict": state.strict,
        "position": state.position,
        "transcript": transcript,
        "plans": {key: _wire(plan) for key, plan in state.plans.items()},
        "availableCommands": _wire(state.available_commands),
        "configOptions": _wire(state.config_options),
        "info": {
            "title": state.info.title,
            "updatedAt": state.info.updated_at,
            "archived": state.info.archived,
            "meta": state.info.meta,
        },
        "usage": _wire(state.usage),
        "turnUsage": _wire(state.turn_usage),
        "stopReason": state.stop_reason,
        "notices": _wire(state.notices),
        "compactions": [
            {"compactionId": c.compaction_id, "status": c.status, "summary": _wire(c.summary), "error": c.error}
            for c in state.compactions.values()
        ],
        "extensions": _wire(state.extensions),
        "turn": {
            "number": state.turn,
            "inTurn": state.in_turn,
            "prompted": state.prompted,
            "cancelled": state.cancelled,
            "started": state._turn_started,
            "cancelledTurn": state._cancelled_turn,
            "userMessages": list(state._turn_user),
        },
        "replay": {"active": state.replaying, "reset": sorted(state._replay_reset)},
        "problems": [p.to_wire() for p in state.problems],
    }
    data.update(state._wire_extra())
    return data


def read_state(cls: type[BaseSessionState], data: Any) -> BaseSessionState:
    """A state of class ``cls`` from what :func:`write_state` gave (what ``BaseSessionState.from_wire`` does)."""
    r = _Reader(cls._validator)
    if r.get(data, "format", "") != FORMAT:
        raise StateFormatError(f"unknown format {data.get('format')!r} (this version writes {FORMAT})", "/format")
    if r.get(data, "version", "") != cls.VERSION:
        raise StateFormatError(f"a {data.get('version')!r} state, not {cls.VERSION!r}", "/version")
    state = cls(r.get(data, "sessionId", "", (str, type(None))), strict=bool(r.get(data, "strict", "", bool)))
    state.position = r.count(data, "position", "")
    for i, entry in enumerate(r.get(data, "transcript", "", list)):
        p = f"/transcript/{i}"
        kind = r.get(entry, "kind", p)
        if kind == "message":
            msg = state._new_message(r.get(entry, "messageId", p, (str, type(None))), r.get(entry, "role", p, str))
            msg.content = r.models("ContentBlock", r.get(entry, "content", p), f"{p}/content")
            msg._sync()
            msg.meta = r.get(entry, "meta", p)
            msg.chunk_meta = _index_map(r.get(entry, "chunkMeta", p), f"{p}/chunkMeta")
            msg.turn = r.count(entry, "turn", p)
        elif kind == "tool_call":
            call, new = state._tool_call(r.get(entry, "toolCallId", p, str))
            if not new:
                raise StateFormatError("a toolCallId already read", f"{p}/toolCallId")
            call.title = r.get(entry, "title", p, (str, type(None)))
            call.kind = r.get(entry, "toolKind", p, (str, type(None)))
            call.status = r.get(entry, "status", p, (str, type(None)))
            call.content = r.models("ToolCallContent", r.get(entry, "content", p), f"{p}/content")
            call.locations = r.models("ToolCallLocation", r.get(entry, "locations", p), f"{p}/locations")
            call.raw_input = r.get(entry, "rawInput", p)
            call.raw_output = r.get(entry, "rawOutput", p)
            call.name = r.get(entry, "name", p, (str, type(None)))
            call.meta = r.get(entry, "meta", p)
            call.chunk_meta = _index_map(r.get(entry, "chunkMeta", p), f"{p}/chunkMeta")
        else:
            raise StateFormatError(f"unknown entry kind {kind!r}", f"{p}/kind")
    plans = r.get(data, "plans", "", dict)
    state.plans = {key: r.model("PlanUpdateContent", value, _pointer("/plans", key)) for key, value in plans.items()}
    commands = r.get(data, "availableCommands", "")
    state.available_commands = (
        None if commands is None else r.models("AvailableCommand", commands, "/availableCommands")
    )
    options = r.get(data, "configOptions", "")
    state.config_options = None if options is None else r.models("SessionConfigOption", options, "/configOptions")
    info = r.get(data, "info", "", dict)
    state.info = Info(
        r.get(info, "title", "/info", (str, type(None))),
        r.get(info, "updatedAt", "/info", (str, type(None))),
        r.get(info, "archived", "/info", (bool, type(None))),
        r.get(info, "meta", "/info"),
    )
    state.usage = r.model("UsageUpdate", r.get(data, "usage", ""), "/usage")
    state.turn_usage = r.model("Usage", r.get(data, "turnUsage", ""), "/turnUsage")
    state.stop_reason = r.get(data, "stopReason", "", (str, type(None)))
    state.notices = r.models("Notice", r.get(data, "notices", ""), "/notices")
    for i, c in enumerate(r.get(data, "compactions", "", list)):
        p = f"/compactions/{i}"
        entry = Compaction(r.get(c, "compactionId", p, str), r.get(c, "status", p))
        entry.summary = r.models("ContentBlock", r.get(c, "summary", p), f"{p}/summary")
        entry.error = r.get(c, "error", p, (str, type(None)))
        if entry.compaction_id in state.compactions:
            raise StateFormatError("a compactionId already read", f"{p}/compactionId")
        state.compactions[entry.compaction_id] = entry
    state.extensions = r.models("SessionUpdate", r.get(data, "extensions", ""), "/extensions")
    turn = r.get(data, "turn", "", dict)
    state.turn = r.count(turn, "number", "/turn")
    state.in_turn = r.get(turn, "inTurn", "/turn", bool)
    state.prompted = r.get(turn, "prompted", "/turn", bool)
    state.cancelled = r.get(turn, "cancelled", "/turn", bool)
    state._turn_started = r.get(turn, "started", "/turn", bool)
    state._cancelled_turn = r.count(turn, "cancelledTurn", "/turn", none=True)
    state._turn_user = list(r.strings(turn, "userMessages", "/turn"))
    replay = r.get(data, "replay", "", dict)
    state.replaying = r.get(replay, "active", "/replay", bool)
    reset = r.strings(replay, "reset", "/replay")
    state._replay_reset = set(reset)
    if len(state._replay_reset) != len(reset):
        raise StateFormatError("a messageId twice", "/replay/reset")
    for i, p in enumerate(r.get(data, "problems", "", list)):
        ptr = f"/problems/{i}"
        state.problems.append(
            Problem(
                r.get(p, "rule", ptr, str),
                r.get(p, "level", ptr, str),
                r.get(p, "source", ptr, str),
                r.get(p, "message", ptr, str),
                r.count(p, "position", ptr),
                r.get(p, "update", ptr, (dict, type(None))),
            )
        )
    state._wire_extra_read(data, r)
    return state
