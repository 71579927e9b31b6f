"""The values an app gives and gets, version-neutral: the dataclasses, the limits, the ids.

Also the JSON forms the store keeps of them (see the events table below). Nothing here knows a
version; :mod:`._speaker` and the two speakers write these values out in one.

Hand-written: the source is runtime/agent/_values.py, copied into the package unchanged.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

log = logging.getLogger("acp_types.agent")

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
ToolStatus = Literal["pending", "in_progress", "completed", "failed"]
ArchivedFilter = Literal["exclude", "include", "only"]

AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002
INVALID_PARAMS = -32602
INVALID_REQUEST = -32600

REPLAY_PIECE = 64 * 1024
"""Characters of text per replayed update: at most 768 KiB of JSON even when every one is escaped."""


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _some(**fields: Any) -> dict[str, Any]:
    """The fields that have a value: what is not known is omitted, not sent as ``null``."""
    return {k: v for k, v in fields.items() if v is not None}


@dataclass(frozen=True)
class Edit:
    """A change to one file: ``old_text`` ``None`` creates it, ``new_text`` ``None`` deletes it.

    v1 writes a ``diff`` with ``oldText``/``newText`` (a deletion, which v1's
    diff cannot say, is written as a text block naming the file); v2 writes
    the change's operation and a ``git_patch`` of the texts.
    """

    path: str
    old_text: str | None
    new_text: str | None


@dataclass(frozen=True)
class PermissionOption:
    id: str
    name: str
    kind: Literal["allow_once", "allow_always", "reject_once", "reject_always"]


ALLOW_OR_REJECT = (
    PermissionOption("allow", "Allow", "allow_once"),
    PermissionOption("reject", "Reject", "reject_once"),
)


@dataclass(frozen=True)
class PlanEntry:
    content: str
    status: Literal["pending", "in_progress", "completed"] = "pending"
    priority: Literal["high", "medium", "low"] = "medium"


@dataclass(frozen=True)
class Command:
    """A slash command the agent offers; ``hint`` says what input it takes."""

    name: str
    description: str
    hint: str | None = None


@dataclass(frozen=True)
class Mode:
    id: str
    name: str
    description: str | None = None


@dataclass(frozen=True)
class ConfigOption:
    """A select option: ``value`` is one of ``choices`` (value, name)."""

    id: str
    name: str
    value: str
    choices: Sequence[tuple[str, str]]
    description: str | None = None
    category: str | None = None


@dataclass
class Setup:
    """What a new, loaded or resumed session starts with."""

    modes: Sequence[Mode] = ()
    mode: str | None = None
    config: Sequence[ConfigOption] = ()
    commands: Sequence[Command] = ()


@dataclass(frozen=True)
class AuthMethod:
    id: str
    name: str
    description: str | None = None


@dataclass(frozen=True)
class SessionInfo:
    session_id: str
    cwd: str
    title: str | None = None
    updated_at: str | None = None
    archived: bool = False


@dataclass(frozen=True)
class ListQuery:
    cwd: str | None
    """Matched exactly: a session in ``/a/b`` or ``/ab`` is not listed for ``/a``."""
    cursor: str | None
    archived: str
    """``exclude`` (the default), ``include``, ``only``, or an unknown value a client sent (-32602 by default)."""
    principal: str | None = None
    """Who asks: only the sessions this principal owns (or that have no owner) are listed."""


@dataclass(frozen=True)
class Page:
    sessions: Sequence[SessionInfo]
    next_cursor: str | None = None


class PromiseBroken(ValueError):
    """An agent advertises a capability without the handler it promises."""


# -- events: what a client was shown, version-neutral ------------------------------
#
# kind       message_id   data
# user       its id       {"v": version, "content": [wire blocks], "text": its text}
# agent      its id       {"text": chunk}
# thought    its id       {"text": chunk}
# tool       -            {"id", "new"?, "title"?, "kind"?, "status"?, "content"?: {"text", "edits"}, "locations"?,
#                          "raw_input"?, "raw_output"?}
# plan       -            {"entries": [[content, status, priority]]}
# usage      -            {"used", "size"}
# commands   -            {"commands": [[name, description, hint]]}
# config     -            {"setup": setup}    (the config options then)
# mode       -            {"setup": setup}    (the mode then: v1's current_mode_update, v2's config options)
# title      -            {"title"}
# raw        its id?      {"v": version, "update": wire}  (Session.send: replayed in that version only)


def _content_json(text: str | None, edits: Sequence[Edit]) -> dict[str, Any]:
    return {"text": text, "edits": [[e.path, e.old_text, e.new_text] for e in edits]}


def _setup_json(setup: Setup) -> dict[str, Any]:
    return {
        "modes": [[x.id, x.name, x.description] for x in setup.modes],
        "mode": setup.mode,
        "config": [
            [o.id, o.name, o.value, [list(c) for c in o.choices], o.description, o.category] for o in setup.config
        ],
        "commands": [[c.name, c.description, c.hint] for c in setup.commands],
    }


def _setup_from(data: Mapping[str, Any]) -> Setup:
    return Setup(
        modes=[Mode(*x) for x in data.get("modes", ())],
        mode=data.get("mode"),
        config=[ConfigOption(i, n, v, [(a, b) for a, b in ch], d, c) for i, n, v, ch, d, c in data.get("config", ())],
        commands=[Command(*c) for c in data.get("commands", ())],
    )
