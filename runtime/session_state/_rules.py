"""The rules a stream of ``session/update`` notifications can break, and the :class:`Problem` reporting a breach.

:data:`RULES` is the table every state checks, by id: each :class:`Rule`
gives its level, the protocol versions it holds for and its source. A
state's ``problems`` are :class:`Problem` records. Plain data: the first
layer of :mod:`acp_types.session_state`, importing none of the others.

Hand-written: the source is runtime/session_state/_rules.py, which the
generator copies into the package unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

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
