"""A session as a client sees it: the protocol's ``session/update`` rules applied, for v1 and v2.

``acp_types.v1.SessionState`` and ``acp_types.v2.SessionState`` take every
``session/update`` of one session, in arrival order, and hold what a client
shows: the messages (keyed by ``messageId``, in the order they first
appeared, with their content blocks), the tool calls, plans, terminals (v2),
available commands, config options, modes (v1), session info, usage and the
run state (v2), each typed with the version's own models::

    state = v2.SessionState()
    state.apply(notification)          # a v2.UpdateSessionNotification (or its wire dict)
    for entry in state.transcript:     # messages and tool calls, in order
        ...

Applying is a pure step: the same updates in the same order give the same
state, in any process. A state compares with ``==``, copies with
:meth:`SessionState.copy`, and is written out with ``to_json()`` and read
back with ``from_json()`` to go on applying later.

Checking the agent: every state keeps ``problems``, the rules the stream
broke, each a :class:`Problem` naming its rule (an id of :data:`RULES`), the
rule's level and source, the offending update and its position in the
stream. A lenient state (the default) checks the rules whose breach makes it
guess how to apply an update (an update for another session, a v1
``tool_call_update`` for an unknown call, undecodable terminal bytes...);
``SessionState(strict=True)`` checks every rule of :data:`RULES`. The mode
changes only the report: both apply every update the same way.

Some rules need to know where turns and replays start and end, which
``session/update`` alone does not say: the client marks them with
:meth:`begin_turn`, :meth:`note_cancel`, :meth:`end_turn` (v1, with the
prompt response) or :meth:`finish` (v2), and :meth:`begin_replay` /
:meth:`end_replay` around a ``session/load`` (v1) or a ``session/resume``
with ``replayFrom`` (v2). The helpers of :mod:`acp_types.client` do this.

As an oracle (a conformance kit watching an agent): make a strict state per
session, call ``begin_turn()`` when a ``session/prompt`` is sent,
``note_cancel()`` when a ``session/cancel`` is, ``apply(params)`` for each
``session/update`` (a wire dict is fine), and ``end_turn(response)`` (v1) or
``finish(response)`` (v2, once the client stops waiting for ``idle``) to
close the turn; wrap replays in ``begin_replay()`` / ``end_replay()``. Then
``problems`` holds every broken rule of ``RULES`` with the offending update
and its position; ``Problem.to_wire()`` and ``Rule`` are plain data.

Hand-written: the source is runtime/session_state.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import json
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Generic, Literal, TypeVar

__all__ = [
    "RULES",
    "Compaction",
    "Info",
    "Message",
    "Problem",
    "Rule",
    "StateFormatError",
    "Terminal",
    "ToolCall",
]

FORMAT = 1
"""The version of the ``to_json`` layout; ``from_json`` refuses another."""

_Block = TypeVar("_Block")
_Content = TypeVar("_Content")
_Location = TypeVar("_Location")

Level = Literal["MUST", "MUST NOT", "SHOULD", "REQ", "IMPL"]


@dataclass(frozen=True)
class Rule:
    """One rule a stream of session updates can break.

    ``level`` is the keyword of the source (``REQ`` for required behaviour
    stated without one, ``IMPL`` for what the text implies), ``versions`` the
    protocol versions it holds for, ``source`` the seed or published page and
    its section. ``lenient`` rules are checked in every state, the others only
    in a strict one.
    """

    id: str
    level: Level
    versions: tuple[str, ...]
    source: str
    description: str
    lenient: bool = False


_V2_LIFECYCLE = "docs/protocol/v2/prompt-lifecycle.mdx"
_V2_TOOLS = "docs/protocol/v2/tool-calls.mdx"

_RULE_LIST = (
    Rule(
        "session.other",
        "REQ",
        ("v1", "v2"),
        "v1 prompt-turn.mdx / v2 prompt-lifecycle.mdx: the sessionId of session/update",
        "an update names another session than the one this state follows; it is not applied",
        lenient=True,
    ),
    Rule(
        "message.kind",
        "MUST",
        ("v1", "v2"),
        f"seed 001 § Resuming Sessions; {_V2_LIFECYCLE} § Message IDs; v1 prompt-turn.mdx § 3",
        "a messageId already used by a message of another kind (user, agent, thought); "
        "the update is applied to the message that holds the id",
        lenient=True,
    ),
    Rule(
        "message.reused",
        "MUST",
        ("v1", "v2"),
        f"{_V2_LIFECYCLE} § Message IDs; v1 prompt-turn.mdx § 3 (ids opaque and unique)",
        "a chunk appends to a message of an earlier turn that no message update of this turn "
        "reset: the agent reused a messageId for a new message",
    ),
    Rule(
        "replay.chunk-before-reset",
        "MUST",
        ("v2",),
        "seed 001 § Resuming Sessions",
        "during a replay, a chunk comes for a messageId before any message update "
        "(content: [] or full content) with that id",
    ),
    Rule(
        "turn.user-message",
        "MUST",
        ("v2",),
        f"{_V2_LIFECYCLE} § 2. Prompt Accepted",
        "a prompted turn ended without a user_message or user_message_chunk reporting the inserted prompt",
    ),
    Rule(
        "turn.user-message-id",
        "MUST",
        ("v2",),
        "seed 001 § Resuming Sessions",
        "the prompt response carries a messageId and the turn's user message uses another one",
    ),
    Rule(
        "turn.running",
        "MUST",
        ("v2",),
        f"{_V2_LIFECYCLE} § 3. Agent Reports Output",
        "foreground work ended without a state_update running (or requires_action) when it started",
    ),
    Rule(
        "turn.idle",
        "MUST",
        ("v2",),
        f"{_V2_LIFECYCLE} § 4. Report Completion",
        "a prompted turn was finished without a state_update idle",
    ),
    Rule(
        "turn.stop-reason",
        "MUST",
        ("v2",),
        f"{_V2_LIFECYCLE} § 4. Report Completion",
        "an idle state_update that ends foreground work carries no stopReason",
    ),
    Rule(
        "cancel.stop-reason",
        "MUST",
        ("v1", "v2"),
        f"v1 prompt-turn.mdx § Cancellation; {_V2_LIFECYCLE} § Cancellation",
        "the turn the client cancelled ended with a stop reason other than cancelled",
    ),
    Rule(
        "cancel.after-end",
        "MUST",
        ("v1", "v2"),
        f"v1 prompt-turn.mdx § Cancellation; {_V2_LIFECYCLE} § Cancellation",
        "output of a cancelled turn (v1: any message or tool call update; v2: a message of that turn) "
        "arrives after the turn ended, before the next prompt",
    ),
    Rule(
        "tool-call.unknown",
        "REQ",
        ("v1",),
        "v1 tool-calls.mdx § Updating",
        "a tool_call_update for a toolCallId no tool_call reported; the update creates the call",
        lenient=True,
    ),
    Rule(
        "tool-call.duplicate",
        "REQ",
        ("v1",),
        "v1 tool-calls.mdx § Creating (a toolCallId is unique within the session)",
        "a second tool_call with a known toolCallId; it replaces the call",
    ),
    Rule(
        "tool-call.title",
        "SHOULD",
        ("v2",),
        f"{_V2_TOOLS} § Reporting",
        "the first tool_call_update of a toolCallId has no title",
    ),
    Rule(
        "tool-call.chunk-unknown",
        "IMPL",
        ("v2",),
        f"{_V2_TOOLS} § Streaming Content",
        "a tool_call_content_chunk for a toolCallId no tool_call_update reported; the chunk creates the call",
        lenient=True,
    ),
    Rule(
        "terminal.base64",
        "MUST",
        ("v2",),
        f"{_V2_TOOLS} § Display-only Terminals (RFC 4648 base64)",
        "terminal output data is not valid base64; it is not applied",
        lenient=True,
    ),
    Rule(
        "terminal.cwd",
        "MUST",
        ("v2",),
        f"{_V2_TOOLS} § Display-only Terminals",
        "a terminal_update gives a cwd that is not an absolute path",
    ),
    Rule(
        "update.reserved",
        "MUST NOT",
        ("v2",),
        "docs/protocol/v2/extensibility.mdx § Enum and Tagged-Union Variants",
        "an unknown sessionUpdate without a _ prefix (reserved for future ACP variants); kept in extensions",
    ),
    Rule(
        "value.reserved",
        "MUST",
        ("v2",),
        "docs/protocol/v2/extensibility.mdx § Enum and Tagged-Union Variants (and each field's page)",
        "an unknown enum value or union tag without a _ prefix (state, stopReason, tool kind or status, "
        "plan type, plan entry priority or status, content type)",
    ),
    Rule(
        "session-info.fields",
        "REQ",
        ("v1", "v2"),
        "seed 002 § 更新会话元数据 (updating session metadata)",
        "a session_info_update carries sessionId, cwd or additionalDirectories",
    ),
)

RULES: Mapping[str, Rule] = MappingProxyType({rule.id: rule for rule in _RULE_LIST})
"""Every rule a state checks, by id (stable across releases; new rules get new ids)."""


@dataclass(frozen=True)
class Problem:
    """A rule the stream broke: which, where (``position``: the index of the update in the stream), and the update.

    ``update`` is the offending notification's wire form, or ``None`` for a
    problem found at :meth:`finish` / :meth:`end_turn` (then ``position`` is
    the number of updates applied so far).
    """

    rule: str
    level: str
    source: str
    message: str
    position: int
    update: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "level": self.level,
            "source": self.source,
            "message": self.message,
            "position": self.position,
            "update": self.update,
        }

    def __str__(self) -> str:
        return f"#{self.position} {self.rule} ({self.level}, {self.source}): {self.message}"


class StateFormatError(ValueError):
    """``from_json`` got text that is not a state this version wrote; ``pointer`` is the JSON pointer of the fault."""

    def __init__(self, message: str, pointer: str = "") -> None:
        super().__init__(f"{pointer or '/'}: {message}")
        self.pointer = pointer


# -- records ---------------------------------------------------------------
#
# Plain mutable records: the state owns them and changes them in place as
# updates arrive; read them, do not change them (copy the state first).


@dataclass(eq=True)
class Message(Generic[_Block]):
    """A message of the conversation.

    ``role`` is ``user``, ``agent`` or ``thought``. ``content`` holds the
    version's ``ContentBlock`` models. ``message_id`` is ``None`` only for a
    v1 message streamed without one. ``meta`` is the message's own
    ``_meta`` (set by message updates); ``chunk_meta`` maps an index of
    ``content`` to the ``_meta`` of the chunk that appended it (chunk-scoped,
    never merged into ``meta``).

    Following a growing message: ``text`` joins every text block (cached,
    but O(length) again after each change), so a client that redraws on
    every chunk should instead keep ``(revision, text_length)`` and print
    ``text_since(length)`` while ``revision`` is unchanged (O(new text));
    a changed ``revision`` means the text no longer starts with what it was
    (a message update rewrote it): redraw it from ``text``::

        rev, shown = seen.get(msg.message_id, (None, 0))
        if rev in (None, msg.revision):
            print(msg.text_since(shown), end="")
        else:
            print("(rewritten)", msg.text)
        seen[msg.message_id] = (msg.revision, msg.text_length)
    """

    message_id: str | None
    role: str
    content: list[_Block] = field(default_factory=list)
    meta: Any = None
    chunk_meta: dict[int, Any] = field(default_factory=dict)
    turn: int = 0
    """The turn whose message update (or first chunk) last reset the message."""

    def __post_init__(self) -> None:
        # an index of the text blocks of `content`, kept up to date as blocks are appended
        self._indexed: list[_Block] | None = None  # the content list indexed (replacing it re-indexes)
        self._parts: list[str] = []  # the text of each block indexed ("" for a non-text block)
        self._ends: list[int] = []  # where each part ends in the text
        self._joined: str | None = ""
        self._revision = 0

    def __copy__(self) -> Message[_Block]:
        # a copy indexes its own content (sharing the index would let one's appends corrupt the other's)
        twin = Message(self.message_id, self.role, list(self.content), self.meta, dict(self.chunk_meta), self.turn)
        twin._revision = self._revision
        return twin

    def _sync(self) -> None:
        content, parts = self.content, self._parts
        if content is self._indexed and len(content) == len(parts):
            return
        if content is self._indexed and len(content) > len(parts):  # blocks appended: index the new ones
            self._index(content[len(parts) :])
            return
        old = "".join(parts) if self._joined is None else self._joined
        self._indexed, self._parts, self._ends = content, [], []
        self._index(content)
        self._joined = new = "".join(self._parts)
        if not new.startswith(old):  # not a mere extension: a follower must redraw
            self._revision += 1

    def _index(self, blocks: list[_Block]) -> None:
        end = self._ends[-1] if self._ends else 0
        for block in blocks:
            part = getattr(block, "text", "") if getattr(block, "type", None) == "text" else ""
            part = part if isinstance(part, str) else ""
            end += len(part)
            self._parts.append(part)
            self._ends.append(end)
        if blocks:
            self._joined = None

    @property
    def text(self) -> str:
        """The text of the message's text blocks, joined (cached until the content changes)."""
        self._sync()
        if self._joined is None:
            self._joined = "".join(self._parts)
        return self._joined

    @property
    def text_length(self) -> int:
        """``len(text)``, without joining."""
        self._sync()
        return self._ends[-1] if self._ends else 0

    @property
    def revision(self) -> int:
        """Changes each time the text stops being an extension of what it was (chunks only append: it stays)."""
        self._sync()
        return self._revision

    def text_since(self, start: int) -> str:
        """``text[start:]``, at the cost of the text after ``start`` only (what was appended since a follower looked)."""
        self._sync()
        if start <= 0:
            return self.text
        i = bisect.bisect_right(self._ends, start)
        if i >= len(self._parts):
            return ""
        part = self._parts[i]
        head = part[start - (self._ends[i] - len(part)) :]
        return head + "".join(self._parts[i + 1 :]) if i + 1 < len(self._parts) else head


@dataclass(eq=True)
class ToolCall(Generic[_Content, _Location]):
    """A tool call: the fields its updates patched, ``content`` with the version's ``ToolCallContent`` models.

    A field never given (or cleared with ``null`` in v2) is ``None``; a
    status never given means ``pending`` by the protocol's default.
    """

    tool_call_id: str
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    content: list[_Content] = field(default_factory=list)
    locations: list[_Location] = field(default_factory=list)
    raw_input: Any = None
    raw_output: Any = None
    name: str | None = None
    meta: Any = None
    chunk_meta: dict[int, Any] = field(default_factory=dict)


@dataclass(eq=True)
class Terminal:
    """A display-only terminal (v2): ``output`` holds the decoded bytes (snapshots replace, chunks append).

    The bytes are kept in a growing buffer, so a chunk costs its own size;
    ``output`` makes ``bytes`` of the whole once per change. To follow a
    running command, keep ``(revision, output_size)`` and read
    ``output_since(size)`` while ``revision`` is unchanged (a snapshot that
    replaced the bytes with others changes it).
    """

    terminal_id: str
    command: str | None = None
    cwd: str | None = None
    output_meta: Any = None
    exit_status: Any = None
    meta: Any = None
    _buffer: bytearray = field(default_factory=bytearray, repr=False)
    _cache: bytes | None = field(default=b"", compare=False, repr=False)
    _revision: int = field(default=0, compare=False, repr=False)

    @property
    def output(self) -> bytes:
        """Every byte of output, decoded."""
        if self._cache is None:
            self._cache = bytes(self._buffer)
        return self._cache

    @output.setter
    def output(self, data: bytes) -> None:
        """A snapshot: replaces every byte held."""
        if not data.startswith(self._buffer):  # not a mere extension: a follower must redraw
            self._revision += 1
        self._buffer = bytearray(data)
        self._cache = None

    def append(self, data: bytes) -> None:
        """Add a chunk's bytes at the end (amortized O(len(data)))."""
        self._buffer += data
        self._cache = None

    @property
    def output_size(self) -> int:
        return len(self._buffer)

    @property
    def revision(self) -> int:
        """Changes each time a snapshot replaces the output with bytes that do not extend it (chunks leave it)."""
        return self._revision

    def output_since(self, start: int) -> bytes:
        """``output[start:]``, at the cost of those bytes only."""
        return bytes(self._buffer[max(start, 0) :])

    @property
    def exited(self) -> bool:
        return self.exit_status is not None

    def text(self, errors: str = "replace") -> str:
        """The output decoded as UTF-8 (the bytes are whole, so a character split across chunks decodes once)."""
        return self._buffer.decode("utf-8", errors)


@dataclass(eq=True)
class Info:
    """Session metadata from ``session_info_update``; ``None`` means never given (or cleared)."""

    title: str | None = None
    updated_at: str | None = None
    archived: bool | None = None
    meta: Any = None


@dataclass(eq=True)
class Compaction:
    """A context compaction (unstable surface): its status, summary blocks and error."""

    compaction_id: str
    status: Any = None
    summary: list[Any] = field(default_factory=list)
    error: str | None = None


# -- helpers ---------------------------------------------------------------


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


# -- the shared machinery -------------------------------------------------


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
        transcript: list[dict[str, Any]] = []
        for entry in self.transcript:
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
            "version": self.VERSION,
            "sessionId": self.session_id,
            "strict": self.strict,
            "position": self.position,
            "transcript": transcript,
            "plans": {key: _wire(plan) for key, plan in self.plans.items()},
            "availableCommands": _wire(self.available_commands),
            "configOptions": _wire(self.config_options),
            "info": {
                "title": self.info.title,
                "updatedAt": self.info.updated_at,
                "archived": self.info.archived,
                "meta": self.info.meta,
            },
            "usage": _wire(self.usage),
            "turnUsage": _wire(self.turn_usage),
            "stopReason": self.stop_reason,
            "notices": _wire(self.notices),
            "compactions": [
                {"compactionId": c.compaction_id, "status": c.status, "summary": _wire(c.summary), "error": c.error}
                for c in self.compactions.values()
            ],
            "extensions": _wire(self.extensions),
            "turn": {
                "number": self.turn,
                "inTurn": self.in_turn,
                "prompted": self.prompted,
                "cancelled": self.cancelled,
                "started": self._turn_started,
                "cancelledTurn": self._cancelled_turn,
                "userMessages": list(self._turn_user),
            },
            "replay": {"active": self.replaying, "reset": sorted(self._replay_reset)},
            "problems": [p.to_wire() for p in self.problems],
        }
        data.update(self._wire_extra())
        return data

    def _wire_extra(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_wire(cls, data: Any) -> BaseSessionState:
        """The state :meth:`to_wire` gave (see :meth:`from_json`)."""
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
        state.plans = {
            key: r.model("PlanUpdateContent", value, _pointer("/plans", key)) for key, value in plans.items()
        }
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


def _tag(model: Any, name: str) -> Any:
    """A property of an ``UnknownVariant`` as it came (``None`` for a known model)."""
    extra = getattr(model, "model_extra", None) or {}
    return extra.get(name)


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
