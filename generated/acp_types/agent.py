"""One agent for both versions: write the logic once, the library speaks v1 or v2.

Subclass :class:`App`, implement :meth:`App.prompt` (and whatever else you
support), and serve it::

    from acp_types import agent

    class Echo(agent.App):
        name = "echo"

        async def prompt(self, turn: agent.Turn) -> agent.StopReason:
            await turn.text(turn.prompt_text)
            return "end_turn"

    asyncio.run(agent.serve_stdio(Echo()))

The client's ``initialize`` settles the version; from then on the same code
is written out by that version's rules:

- **The turn.** In v1 the ``session/prompt`` answer (with the stop reason)
  ends the turn. In v2 the answer comes first (the acknowledgement), then a
  ``user_message`` with the prompt, ``state_update`` ``running``, the
  updates, and ``state_update`` ``idle`` with the stop reason. Message ids
  are made here (unique, never reused across turns).
- **Stopping.** ``session/cancel``, ``session/close`` and ``session/archive``
  cancel the running turn's task (``asyncio.CancelledError`` at the agent's
  next ``await``): the turn ends ``cancelled`` (v1's answer, v2's ``idle``)
  and nothing of it is sent after. ``session/archive`` closes the session as
  ``session/close`` does (seed 000). A v2 prompt acknowledged behind the
  running turn is never lost: when the session is closed, archived or
  reopened first, it still gets its ``user_message`` and ``idle``
  (``cancelled``), before the close answer, and never runs.
- **Bounds.** A v2 session accepts :attr:`App.max_queued_prompts` prompts
  behind its running turn (and a connection ``max_in_flight`` turns in all);
  more are refused with -32600 until it goes idle.
- **Who may touch a session.** Each connection acts for a *principal*: by
  default one of its own; :func:`serve_stdio` makes it ``local:<user>`` (whoever
  started the process); a transport sets it with ``serve(..., principal=...)``
  (e.g. from a bearer token); :meth:`App.authenticate` may return one after a
  login. A session belongs to the principal that made it (``Session.owner``).
  Every session method (list, load, resume, prompt, cancel, close, archive,
  unarchive, set_mode, set_config_option) reaches only the caller's sessions:
  another's is answered -32002 as if it did not exist, its cancel is
  ignored, and list shows nothing of it. With ``auth_methods``, every one of
  them (and ``session/new``) is refused with -32000 until the peer logged in.
- **Sessions.** The library keeps the sessions it made (id, cwd, title,
  archive state, a transcript of the text said), and answers
  ``session/list`` (``cwd`` matched exactly, ``archived`` filter with an
  unknown value refused -32602, keyset cursors that stay valid when the
  session they follow is archived; a page costs the same whatever the
  total), ``session/archive`` / ``unarchive`` and ``session/close`` from them;
  ``session/load`` (v1) and ``session/resume`` (both) replay that transcript
  unless :meth:`App.resume` is overridden, in updates of at most
  :data:`REPLAY_PIECE` characters (a long message is its update with
  ``content: []``, then chunks).
- **Commands.** :attr:`Setup.commands` are in v2's ``session/new``,
  ``load`` and ``resume`` answers; v1 has no such field, so a v1 client gets
  an ``available_commands_update`` right after the ``session/new`` answer and
  during ``session/load``/``resume``, before their answer.
- **Capabilities** are derived from what the app implements, and checked
  when it starts: :meth:`App.capabilities` may add to them, and a promise
  without its handler (v2's ``session`` promises ``session/resume`` and
  ``session/close``) is refused by :func:`check` naming what is missing.
- **Conversions.** A diff is given as old and new text: v1 writes
  ``oldText``/``newText``, v2 a ``modify``/``add``/``delete`` change plus a
  ``git_patch``. Modes are v1 modes and, in v2 (which has none), a select
  config option of category ``mode`` with id ``mode``. v1's
  ``fs/read_text_file`` is :meth:`Turn.read_file`, ``None`` where the
  client does not offer it (v2 has no fs methods). Version-only features are
  reached through :attr:`Session.v1` / :attr:`Session.v2` (the typed peer,
  ``None`` in the other version) and :meth:`Session.send`.

Hand-written: the source is runtime/agent.py, copied into the package unchanged.
"""

from __future__ import annotations

import asyncio
import base64
import bisect
import contextlib
import difflib
import getpass
import importlib
import logging
import os
import sys
import uuid
from collections.abc import Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from ._errors import RequestError
from .connection import AgentConnection, ConnectionClosed, Reader, Writer, pipe_streams

if TYPE_CHECKING:
    from acp_types import v1, v2
    from acp_types.v1 import models as _m1
    from acp_types.v2 import models as _m2

__all__ = [
    "App",
    "AuthMethod",
    "Command",
    "ConfigOption",
    "Edit",
    "ListQuery",
    "Mode",
    "Page",
    "PermissionOption",
    "PlanEntry",
    "PromiseBroken",
    "Replay",
    "Session",
    "SessionInfo",
    "Setup",
    "StopReason",
    "ToolCall",
    "Turn",
    "check",
    "serve",
    "serve_stdio",
]

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


# -- the version-neutral values an app gives and gets -------------------------


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


# -- sessions, turns, tool calls ---------------------------------------------


class _Message:
    """One message of the transcript; its chunks are kept as a list and joined when read (``+=`` was O(N^2))."""

    __slots__ = ("_parts", "message_id", "role")

    def __init__(self, role: Literal["user", "agent", "thought"], message_id: str, text: str = "") -> None:
        self.role = role
        self.message_id = message_id
        self._parts = [text]

    def append(self, text: str) -> None:
        self._parts.append(text)

    @property
    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0]

    def __repr__(self) -> str:
        return f"_Message({self.role!r}, {self.message_id!r}, {self.text!r})"


@dataclass
class Session:
    """One session the library keeps for the app; ``data`` is the app's own."""

    id: str
    cwd: str
    additional_directories: Sequence[str] = ()
    title: str | None = None
    updated_at: str | None = None
    archived: bool = False
    data: dict[str, Any] = field(default_factory=dict)
    transcript: list[_Message] = field(default_factory=list)
    setup: Setup = field(default_factory=Setup)
    owner: str | None = None
    """The principal allowed to touch the session (the one that made it); ``None``: any authenticated peer."""
    _order: int = field(default=0, repr=False)  # list order: sessions are listed by (_order, id)
    _conn: AgentConnection | None = field(default=None, repr=False)
    _task: asyncio.Task[StopReason] | None = field(default=None, repr=False)
    _ended: asyncio.Event | None = field(default=None, repr=False)
    _cancelled: bool = field(default=False, repr=False)
    _cancels: int = field(default=0, repr=False)  # session/cancel notifications received
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)
    _tool_titles: dict[str, str] = field(default_factory=dict, repr=False)
    _turns: set[asyncio.Task[None]] = field(default_factory=set, repr=False)  # v2 turns accepted, not ended

    @property
    def connection(self) -> AgentConnection:
        if self._conn is None:
            raise RuntimeError(f"session {self.id!r} is not open on a connection")
        return self._conn

    @property
    def version(self) -> str:
        return self.connection.version

    @property
    def v1(self) -> v1.ClientPeer | None:
        """The typed v1 client, or ``None`` when the connection speaks v2."""
        from acp_types.v1.peer import ClientPeer

        return ClientPeer(cast(Any, self.connection)) if self.version == "v1" else None

    @property
    def v2(self) -> v2.ClientPeer | None:
        """The typed v2 client, or ``None`` when the connection speaks v1."""
        from acp_types.v2.peer import ClientPeer

        return ClientPeer(cast(Any, self.connection)) if self.version == "v2" else None

    def info(self) -> SessionInfo:
        return SessionInfo(self.id, self.cwd, self.title, self.updated_at, self.archived)

    async def send(self, update: _m1.SessionUpdate | _m2.SessionUpdate) -> None:
        """Send one ``session/update`` of the connection's version (a model of the other is a ``TypeError``)."""
        conn = self.connection
        if conn.version == "v1":
            from acp_types.v1 import models as m1

            await conn.notify("session/update", m1.SessionNotification(session_id=self.id, update=cast(Any, update)))
        else:
            from acp_types.v2 import models as m2

            await conn.notify(
                "session/update", m2.UpdateSessionNotification(session_id=self.id, update=cast(Any, update))
            )

    async def set_title(self, title: str | None) -> None:
        self.title = title
        m = _models(self.version)
        await self.send(m.SessionInfoUpdate(title=title))

    async def set_commands(self, commands: Sequence[Command]) -> None:
        m = _models(self.version)
        await self.send(m.AvailableCommandsUpdate(available_commands=_commands(m, commands)))

    async def set_config(self, options: Sequence[ConfigOption]) -> None:
        self.setup.config = options
        m = _models(self.version)
        await self.send(m.ConfigOptionUpdate(config_options=_config(self.version, self.setup)))

    async def set_mode(self, mode: str) -> None:
        self.setup.mode = mode
        if self.version == "v1":
            from acp_types.v1 import models as m1

            await self.send(m1.CurrentModeUpdate(current_mode_id=mode))
        else:
            await self.set_config(self.setup.config)


class ToolCall:
    """A tool call reported in a turn: v1's ``tool_call`` then ``tool_call_update``s, v2's upserts."""

    def __init__(self, turn: Turn, tool_call_id: str, title: str) -> None:
        self.turn = turn
        self.id = tool_call_id
        self.title = title

    async def update(
        self,
        status: ToolStatus | None = None,
        *,
        text: str | None = None,
        edits: Sequence[Edit] = (),
        raw_output: Any = None,
    ) -> None:
        """Report progress; ``text`` and ``edits`` replace the call's content when given."""
        m = _models(self.turn.session.version)
        fields: dict[str, Any] = {}
        if status is not None:
            fields["status"] = status
        if text is not None or edits:
            fields["content"] = _tool_content(self.turn.session.version, text, edits)
        if raw_output is not None:
            fields["raw_output"] = raw_output
        await self.turn.session.send(m.ToolCallProgress(tool_call_id=self.id, **fields))

    async def done(self, text: str | None = None, *, edits: Sequence[Edit] = ()) -> None:
        await self.update("completed", text=text, edits=edits)

    async def failed(self, text: str | None = None) -> None:
        await self.update("failed", text=text)


class Turn:
    """One prompt turn: what the user said (:attr:`prompt`, :attr:`prompt_text`), what the agent streams
    back (:meth:`text`, :meth:`thought`, :meth:`plan`, :meth:`tool_call`, :meth:`usage`), what it asks
    (:meth:`permission`, :meth:`allowed`, :meth:`read_file`), and :attr:`session`, the session it runs in."""

    def __init__(self, session: Session, prompt: Sequence[Any], user_message_id: str) -> None:
        self.session = session
        """The session of this turn: its ``id``, ``cwd``, ``setup`` (mode, config), ``data`` (the app's own),
        ``title`` and :meth:`Session.set_title`, :meth:`Session.set_commands`..., and the version's typed client
        (:attr:`Session.v1` / :attr:`Session.v2`)."""
        self.prompt = prompt
        """The prompt's content blocks, as the version's models."""
        self.user_message_id = user_message_id
        self._agent_id = _new_id("msg")
        self._thought_id = _new_id("msg")
        self._tools = 0

    @property
    def prompt_text(self) -> str:
        """The prompt's text blocks, joined."""
        return "".join(getattr(b, "text", "") for b in self.prompt if getattr(b, "type", None) == "text")

    async def text(self, text: str) -> None:
        """Stream agent text; chunks of one turn form one message."""
        _remember(self.session, "agent", self._agent_id, text)
        m = _models(self.session.version)
        await self.session.send(m.AgentMessageChunk(message_id=self._agent_id, content=m.TextContent(text=text)))

    async def thought(self, text: str) -> None:
        _remember(self.session, "thought", self._thought_id, text)
        m = _models(self.session.version)
        await self.session.send(m.AgentThoughtChunk(message_id=self._thought_id, content=m.TextContent(text=text)))

    async def plan(self, entries: Sequence[PlanEntry]) -> None:
        """Replace the plan (v1 ``plan``; v2 ``plan_update`` of the session's one plan)."""
        version = self.session.version
        m = _models(version)
        items = [m.PlanEntry(content=e.content, status=e.status, priority=e.priority) for e in entries]
        if version == "v1":
            from acp_types.v1 import models as m1

            await self.session.send(m1.Plan(entries=items))
        else:
            from acp_types.v2 import models as m2

            await self.session.send(m2.PlanUpdate(plan=m2.PlanItems(plan_id="plan", entries=items)))

    async def usage(self, used: int, size: int) -> None:
        """Context window use: ``used`` of ``size`` tokens."""
        m = _models(self.session.version)
        await self.session.send(m.UsageUpdate(used=used, size=size))

    async def tool_call(
        self,
        title: str,
        kind: ToolKind = "other",
        *,
        locations: Sequence[str] = (),
        raw_input: Any = None,
    ) -> ToolCall:
        """Report a new tool call, ``pending``; the handle reports its progress."""
        self._tools += 1
        tool_id = f"call_{self._tools}_{uuid.uuid4().hex[:8]}"
        self.session._tool_titles[tool_id] = title
        version = self.session.version
        m = _models(version)
        fields: dict[str, Any] = {"title": title, "kind": kind, "status": "pending"}
        if locations:
            fields["locations"] = [m.ToolCallLocation(path=p) for p in locations]
        if raw_input is not None:
            fields["raw_input"] = raw_input
        if version == "v1":
            from acp_types.v1 import models as m1

            await self.session.send(m1.ToolCall(tool_call_id=tool_id, **fields))
        else:
            from acp_types.v2 import models as m2

            await self.session.send(m2.ToolCallProgress(tool_call_id=tool_id, **fields))
        return ToolCall(self, tool_id, title)

    async def permission(self, tool: ToolCall, options: Sequence[PermissionOption] = ALLOW_OR_REJECT) -> str | None:
        """Ask the user; the chosen option's id, or ``None`` when the client cancelled the request.

        v2 reports ``requires_action`` while asking and ``running`` after.
        """
        conn = self.session.connection
        if conn.version == "v1":
            from acp_types.v1 import models as m1
            from acp_types.v1.peer import ClientPeer as P1

            opts1 = [m1.PermissionOption(option_id=o.id, name=o.name, kind=o.kind) for o in options]
            call1 = m1.ToolCallUpdate(tool_call_id=tool.id, title=tool.title)
            answer1 = await P1(cast(Any, conn)).session_request_permission(
                m1.RequestPermissionRequest(session_id=self.session.id, tool_call=call1, options=opts1)
            )
            return getattr(answer1.outcome, "option_id", None)
        from acp_types.v2 import models as m2
        from acp_types.v2.peer import ClientPeer as P2

        opts2 = [m2.PermissionOption(option_id=o.id, name=o.name, kind=o.kind) for o in options]
        subject = m2.ToolCallPermissionSubject(tool_call=m2.ToolCallUpdate(tool_call_id=tool.id))
        await self.session.send(m2.RequiresActionStateUpdate())
        try:
            answer2 = await P2(cast(Any, conn)).session_request_permission(
                m2.RequestPermissionRequest(
                    session_id=self.session.id, title=tool.title, subject=subject, options=opts2
                )
            )
        finally:
            if not self.session._cancelled:
                await self.session.send(m2.RunningStateUpdate())
        return getattr(answer2.outcome, "option_id", None)

    async def allowed(self, tool: ToolCall) -> bool:
        """Ask allow-or-reject; ``True`` when allowed."""
        return await self.permission(tool) == "allow"

    async def read_file(self, path: str, line: int | None = None, limit: int | None = None) -> str | None:
        """The client's view of a text file (v1 ``fs/read_text_file``); ``None`` where the client offers no such read."""
        conn = self.session.connection
        init = conn.peer_initialize
        fs = getattr(getattr(init, "client_capabilities", None), "fs", None)
        if conn.version != "v1" or not getattr(fs, "read_text_file", False):
            return None
        from acp_types.v1 import models as m1
        from acp_types.v1.peer import ClientPeer as P1

        answer = await P1(cast(Any, conn)).fs_read_text_file(
            m1.ReadTextFileRequest(**_some(session_id=self.session.id, path=path, line=line, limit=limit))
        )
        return answer.content


class Replay:
    """Writes a session's history back to the client before the load/resume answer."""

    def __init__(self, session: Session) -> None:
        self.session = session

    async def message(
        self, role: Literal["user", "agent", "thought"], text: str, message_id: str | None = None
    ) -> None:
        """Write one message of the history.

        A text longer than :data:`REPLAY_PIECE` characters is written in pieces of that size (one
        line each, so a client's ``max_line_size`` is never reached): v1 as chunks of one message
        id; v2 as the message update with ``content: []`` and then its chunks (seed 001). A v2
        thought is an ``agent_thought``, like ``user_message`` and ``agent_message``.
        """
        version = self.session.version
        mid = message_id or _new_id("msg")
        pieces = [text[i : i + REPLAY_PIECE] for i in range(0, len(text), REPLAY_PIECE)] or [""]
        if version == "v1":
            from acp_types.v1 import models as m1

            kind1 = {"user": m1.UserMessageChunk, "agent": m1.AgentMessageChunk, "thought": m1.AgentThoughtChunk}
            for piece in pieces:
                await self.session.send(kind1[role](message_id=mid, content=m1.TextContent(text=piece)))
            return
        from acp_types.v2 import models as m2

        whole = {"user": m2.UserMessage, "agent": m2.AgentMessage, "thought": m2.AgentThought}[role]
        if len(pieces) == 1:
            await self.session.send(whole(message_id=mid, content=[m2.TextContent(text=text)]))
            return
        chunk = {"user": m2.UserMessageChunk, "agent": m2.AgentMessageChunk, "thought": m2.AgentThoughtChunk}[role]
        await self.session.send(whole(message_id=mid, content=[]))
        for piece in pieces:
            await self.session.send(chunk(message_id=mid, content=m2.TextContent(text=piece)))


# -- the app ------------------------------------------------------------------


class App:
    """The agent's logic, once for both versions; override what you support.

    :meth:`prompt` is required. The library answers ``session/new``,
    ``list``, ``archive``, ``unarchive``, ``close``, ``cancel`` and the
    replaying ``load``/``resume`` itself; the hooks below let the app take
    part. Set ``archive = False`` or ``listing = False`` not to offer those.
    """

    name: str = "acp-types-agent"
    version: str = "0.0.0"
    title: str | None = None
    auth_methods: Sequence[AuthMethod] = ()
    archive: bool = True
    listing: bool = True
    page_size: int = 50
    max_queued_prompts: int = 4
    """v2 prompts a session accepts while a turn runs; more are refused (-32600) until it goes idle."""

    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}
        self._keys: list[tuple[int, str]] = []  # (order, id) of every session, sorted: list's keyset
        self._next_order = 0

    def _add(self, session: Session) -> None:
        self._next_order += 1
        session._order = self._next_order
        self.sessions[session.id] = session
        self._keys.append((session._order, session.id))

    def _index(self) -> list[tuple[int, str]]:
        if len(self._keys) != len(self.sessions):  # the app added or removed sessions itself
            for s in self.sessions.values():
                if not s._order:
                    self._next_order += 1
                    s._order = self._next_order
            self._keys = sorted((s._order, s.id) for s in self.sessions.values())
        return self._keys

    async def prompt(self, turn: Turn) -> StopReason:
        """Run one turn; return why it ended. Cancelling raises ``CancelledError`` at an ``await``."""
        raise NotImplementedError

    async def new_session(self, session: Session) -> Setup | None:
        """A session was made (its id is the library's); return what it starts with."""
        return None

    async def resume(self, session: Session, replay: Replay | None) -> Setup | None:
        """Reopen a session; write its history with ``replay`` when it is not ``None``.

        The default replays the transcript the library kept (text said by the user and the agent).
        """
        if replay is not None:
            for message in session.transcript:
                await replay.message(message.role, message.text, message.message_id)
        return session.setup

    async def set_option(self, session: Session, option_id: str, value: str) -> None:
        """A config option (or, with id ``mode``, the mode) was set by the client; the default records it."""
        if option_id == "mode" and session.setup.modes:
            session.setup.mode = value
            return
        config = list(session.setup.config)
        for i, opt in enumerate(config):
            if opt.id == option_id:
                if value not in [v for v, _ in opt.choices]:
                    raise RequestError(INVALID_PARAMS, f"{value!r} is not a value of {option_id!r}")
                config[i] = ConfigOption(opt.id, opt.name, value, opt.choices, opt.description, opt.category)
                session.setup.config = config
                return
        raise RequestError(INVALID_PARAMS, f"no config option {option_id!r}")

    async def authenticate(self, method_id: str) -> str | None:
        """The client logged in with one of ``auth_methods`` (v1 ``authenticate``, v2 ``auth/login``).

        Return a principal (e.g. the account the credentials name) to make the connection act as
        it: it then reaches the sessions that principal made, from any connection. ``None`` keeps
        the connection's own principal.
        """
        return None

    async def list_sessions(self, query: ListQuery) -> Page:
        """``session/list``; the default pages the sessions kept here, ``cwd`` and ``archived`` filters applied.

        Pages follow the order sessions were made, by a keyset cursor (opaque; it names a
        position, not a session, so it stays valid when that session is archived): a page costs
        what it scans from there, whatever the total. An ``archived`` value other than
        ``exclude``, ``include`` or ``only``, or a malformed cursor, is answered -32602.
        """
        if query.archived not in ("exclude", "include", "only"):
            raise RequestError(INVALID_PARAMS, f"unsupported archived filter {query.archived!r}")
        want = query.archived
        keys = self._index()
        start = 0 if query.cursor is None else bisect.bisect_right(keys, _read_cursor(query.cursor))
        found: list[SessionInfo] = []
        last: tuple[int, str] | None = None
        for i in range(start, len(keys)):
            key = keys[i]
            s = self.sessions.get(key[1])
            if s is None or (s.owner is not None and s.owner != query.principal):
                continue
            if (query.cwd is None or s.cwd == query.cwd) and (want == "include" or s.archived == (want == "only")):
                if len(found) == self.page_size:
                    assert last is not None
                    return Page(found, _cursor(last))
                found.append(s.info())
                last = key
        return Page(found, None)

    def capabilities(self, version: str) -> dict[str, Any]:
        """The capabilities advertised in ``version``, as wire JSON; the default is derived from what is implemented."""
        if version == "v1":
            # resume, load and close are always there: the default resume replays what was kept
            session: dict[str, Any] = {"close": {}, "resume": {}}
            if self.listing:
                session["list"] = {}
            if self.archive:
                session["archive"] = {}
            caps: dict[str, Any] = {"loadSession": True, "sessionCapabilities": session}
            if self.auth_methods:
                caps["auth"] = {}
            return caps
        session2: dict[str, Any] = {}
        if self.archive:
            session2["archive"] = {}
        return {"session": session2}

    # -- what the connection calls (one object per connection) -------------

    def handler(self, conn: AgentConnection) -> _Surface:
        return _Surface(self, conn)


def _some(**fields: Any) -> dict[str, Any]:
    """The fields that have a value: what is not known is omitted, not sent as ``null``."""
    return {k: v for k, v in fields.items() if v is not None}


def _models(version: str) -> Any:
    # Both versions' models share the names used here; which module is
    # settled at run time, the app never sees it.
    if version == "v1":
        from acp_types.v1 import models as m1

        return m1
    from acp_types.v2 import models as m2

    return m2


def _cursor(key: tuple[int, str]) -> str:
    return base64.urlsafe_b64encode(f"{key[0]}:{key[1]}".encode()).decode()


def _read_cursor(cursor: str) -> tuple[int, str]:
    try:
        order, _, sid = base64.urlsafe_b64decode(cursor.encode("ascii")).decode().partition(":")
        if not order.isdigit() or len(order) > 18:
            raise ValueError(order)
        return int(order), sid
    except (ValueError, UnicodeError) as exc:
        raise RequestError(INVALID_PARAMS, "malformed cursor: pass back a nextCursor this agent sent") from exc


def _remember(session: Session, role: Literal["user", "agent", "thought"], mid: str, text: str) -> None:
    last = session.transcript[-1] if session.transcript else None
    if last is not None and last.message_id == mid:
        last.append(text)
    else:
        session.transcript.append(_Message(role, mid, text))


def _commands(m: Any, commands: Sequence[Command]) -> list[Any]:
    out = []
    for c in commands:
        extra: dict[str, Any] = {}
        if c.hint is not None:
            extra["input"] = {"hint": c.hint}
        out.append(m.AvailableCommand(name=c.name, description=c.description, **extra))
    return out


def _config(version: str, setup: Setup) -> list[Any]:
    m = _models(version)
    options = list(setup.config)
    if version == "v2" and setup.modes:  # v2 has no modes: they are a select option
        current = setup.mode or setup.modes[0].id
        options.insert(0, ConfigOption("mode", "Mode", current, [(x.id, x.name) for x in setup.modes], category="mode"))
    key = "id" if version == "v1" else "config_id"
    out = []
    for o in options:
        choices = [m.SessionConfigSelectOption(value=v, name=n) for v, n in o.choices]
        extra: dict[str, Any] = {key: o.id}
        if o.description is not None:
            extra["description"] = o.description
        if o.category is not None:
            extra["category"] = o.category
        out.append(m.SessionConfigSelect(name=o.name, current_value=o.value, options=choices, **extra))
    return out


def _setup_fields(version: str, setup: Setup | None) -> dict[str, Any]:
    if setup is None:
        return {}
    fields: dict[str, Any] = {}
    config = _config(version, setup)
    if config:
        fields["config_options"] = config
    if version == "v1" and setup.modes:
        from acp_types.v1 import models as m1

        fields["modes"] = m1.SessionModeState(
            current_mode_id=setup.mode or setup.modes[0].id,
            available_modes=[
                m1.SessionMode(**_some(id=x.id, name=x.name, description=x.description)) for x in setup.modes
            ],
        )
    if version == "v2" and setup.commands:
        from acp_types.v2 import models as m2

        fields["available_commands"] = _commands(m2, setup.commands)
    return fields


def _patch(edit: Edit) -> str:
    rel = edit.path.lstrip("/")
    old = (edit.old_text or "").splitlines(keepends=True)
    new = (edit.new_text or "").splitlines(keepends=True)
    head = [f"diff --git a/{rel} b/{rel}\n"]
    src = "/dev/null" if edit.old_text is None else f"a/{rel}"
    dst = "/dev/null" if edit.new_text is None else f"b/{rel}"
    body = difflib.unified_diff(old, new, src, dst)
    return "".join(head + [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in body])


def _tool_content(version: str, text: str | None, edits: Sequence[Edit]) -> list[Any]:
    m = _models(version)
    out: list[Any] = []
    if text is not None:
        out.append(m.Content(content=m.TextContent(text=text)))
    for e in edits:
        if version == "v1":
            if e.new_text is None:  # v1's diff has no deletion: say it in words
                out.append(m.Content(content=m.TextContent(text=f"deleted {e.path}")))
            else:
                out.append(m.Diff(path=e.path, old_text=e.old_text, new_text=e.new_text))
        else:
            op = (
                m.DiffAddChange
                if e.old_text is None
                else m.DiffDeleteChange
                if e.new_text is None
                else m.DiffModifyChange
            )
            out.append(m.Diff(changes=[op(path=e.path)], patch=m.DiffPatch(format="git_patch", text=_patch(e))))
    return out


class _Surface:
    """The handler object of one connection: each version's methods, written from the app.

    Who may touch a session: the connection's :attr:`principal` that made it (its
    ``owner``), after logging in when the app has ``auth_methods``. Any other caller is
    told there is no such session (-32002), its cancels are ignored, and ``session/list``
    shows it nothing of them; before logging in every session method is refused with
    -32000.
    """

    def __init__(self, app: App, conn: AgentConnection) -> None:
        self.app = app
        self.conn = conn
        self.authenticated = not app.auth_methods
        self.principal = _new_id("peer")
        """Whose sessions this connection reaches: one per connection unless a transport (or login) sets it."""
        self._turns: set[asyncio.Task[None]] = set()
        if not app.archive:
            self.session_archive = None  # type: ignore[assignment]
            self.session_unarchive = None  # type: ignore[assignment]
        if not app.listing:
            self.session_list = None  # type: ignore[assignment]

    @property
    def m(self) -> Any:
        return _models(self.conn.version)

    def _mine(self, session: Session | None) -> bool:
        return session is not None and session.owner in (None, self.principal)

    def _session(self, sid: str) -> Session:
        self._need_auth()
        session = self.app.sessions.get(sid)
        if session is None or not self._mine(session):  # another principal's session is not named
            raise RequestError(RESOURCE_NOT_FOUND, f"no session {sid!r}", {"sessionId": sid})
        return session

    def _need_auth(self) -> None:
        if not self.authenticated:
            methods = ", ".join(a.id for a in self.app.auth_methods)
            raise RequestError(AUTH_REQUIRED, f"Authentication required (methods: {methods})")

    async def initialize(self, params: Any) -> Any:
        version = self.conn.version
        app = self.app
        caps = app.capabilities(version)
        if version == "v1":
            from acp_types.v1 import models as m1

            methods1: list[Any] = [
                m1.AuthMethodAgent(**_some(id=a.id, name=a.name, description=a.description)) for a in app.auth_methods
            ]
            return m1.InitializeResponse(
                protocol_version=1,
                agent_capabilities=m1.AgentCapabilities.model_validate(caps),
                auth_methods=methods1,
                agent_info=m1.Implementation(**_some(name=app.name, version=app.version, title=app.title)),
            )
        from acp_types.v2 import models as m2

        methods2: list[Any] = [
            m2.AuthMethodAgent(**_some(method_id=a.id, name=a.name, description=a.description))
            for a in app.auth_methods
        ]
        return m2.InitializeResponse(
            protocol_version=2,
            capabilities=m2.AgentCapabilities.model_validate(caps),
            auth_methods=methods2,
            info=m2.Implementation(**_some(name=app.name, version=app.version, title=app.title)),
        )

    async def authenticate(self, params: Any) -> Any:
        await self._login(params.method_id)
        return self.m.AuthenticateResponse()

    async def auth_login(self, params: Any) -> Any:
        await self._login(params.method_id)
        return self.m.LoginAuthResponse()

    async def _login(self, method_id: str) -> None:
        if method_id not in [a.id for a in self.app.auth_methods]:
            raise RequestError(INVALID_PARAMS, f"no auth method {method_id!r}")
        who = await self.app.authenticate(method_id)
        if who is not None:
            self.principal = who
        self.authenticated = True

    async def session_new(self, params: Any) -> Any:
        self._need_auth()
        session = Session(_new_id("sess"), params.cwd, list(params.additional_directories or ()))
        session.owner = self.principal
        session._conn = self.conn
        self.app._add(session)
        setup = await self.app.new_session(session)
        if setup is not None:
            session.setup = setup
        if self.conn.version == "v1" and setup is not None and setup.commands:
            # v1 has no commands in the answer: an update, once the answer has named the session
            self._later(self._send_commands(session, setup.commands))
        return self.m.NewSessionResponse(session_id=session.id, **_setup_fields(self.conn.version, setup))

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._turns.add(task)
        task.add_done_callback(self._turns.discard)

    async def _send_commands(self, session: Session, commands: Sequence[Command]) -> None:
        await asyncio.sleep(0)  # the answer is written in the step the handler returns
        with contextlib.suppress(ConnectionClosed):
            from acp_types.v1 import models as m1

            update = m1.AvailableCommandsUpdate(available_commands=_commands(m1, commands))
            await self.conn.notify("session/update", m1.SessionNotification(session_id=session.id, update=update))

    async def _reopen(self, params: Any, replay: bool) -> Any:
        session = self._session(params.session_id)
        session._conn = None  # turns waiting on the other connection (or this one) end cancelled
        await self._stop(session)
        session._conn = self.conn
        session.cwd = params.cwd
        setup = await self.app.resume(session, Replay(session) if replay else None)
        if setup is not None:
            session.setup = setup
            if self.conn.version == "v1" and setup.commands:  # v2 has them in the answer
                await session.set_commands(setup.commands)
        return _setup_fields(self.conn.version, setup)

    async def session_load(self, params: Any) -> Any:
        return self.m.LoadSessionResponse(**await self._reopen(params, True))

    async def session_resume(self, params: Any) -> Any:
        replay = getattr(params, "replay_from", None) is not None
        return self.m.ResumeSessionResponse(**await self._reopen(params, replay))

    async def _close(self, session: Session) -> None:
        """As ``session/close``: the running turn is cancelled, the waiting ones end ``cancelled``, all before this returns."""
        session._conn = None
        await self._stop(session)

    async def session_close(self, params: Any) -> Any:
        await self._close(self._session(params.session_id))
        return self.m.CloseSessionResponse()

    async def session_cancel(self, params: Any) -> None:
        session = self.app.sessions.get(params.session_id)
        if not self.authenticated or session is None or not self._mine(session):
            return
        session._cancels += 1  # also stops a turn accepted but not started yet (see _turn)
        if session._task is not None:
            session._cancelled = True
            session._task.cancel()

    async def session_archive(self, params: Any) -> Any:
        session = self._session(params.session_id)
        if not session.archived and session._conn is self.conn:
            await session.send(self.m.SessionInfoUpdate(archived=True))
        session.archived = True
        await self._close(session)  # seed 000: as if session/close had been called
        return self.m.ArchiveSessionResponse()

    async def session_unarchive(self, params: Any) -> Any:
        self._session(params.session_id).archived = False
        return self.m.UnarchiveSessionResponse()

    async def session_list(self, params: Any) -> Any:
        self._need_auth()
        query = ListQuery(params.cwd, params.cursor, params.archived or "exclude", self.principal)
        page = await self.app.list_sessions(query)
        m = self.m
        infos = [
            m.SessionInfo(
                **_some(session_id=i.session_id, cwd=i.cwd, title=i.title, updated_at=i.updated_at), archived=i.archived
            )
            for i in page.sessions
        ]
        return m.ListSessionsResponse(sessions=infos, **_some(next_cursor=page.next_cursor))

    async def session_set_config_option(self, params: Any) -> Any:
        session = self._session(params.session_id)
        await self.app.set_option(session, params.config_id, str(params.value))
        return self.m.SetSessionConfigOptionResponse(config_options=_config(self.conn.version, session.setup))

    async def session_set_mode(self, params: Any) -> Any:
        session = self._session(params.session_id)
        await self.app.set_option(session, "mode", params.mode_id)
        return self.m.SetSessionModeResponse()

    async def _stop(self, session: Session) -> None:
        """Cancel the session's running turn; wait until it and every v2 turn waiting behind it have ended."""
        task, ended = session._task, session._ended
        if task is not None and not task.done():
            session._cancelled = True
            task.cancel()
        current = asyncio.current_task()
        waiting = [t for t in session._turns if t is not current]
        if waiting:
            await asyncio.wait(waiting)
        if ended is not None:
            await ended.wait()

    async def session_prompt(self, params: Any) -> Any:
        session = self._session(params.session_id)
        if session._conn is not self.conn:
            raise RequestError(INVALID_PARAMS, f"session {session.id!r} is not open on this connection")
        user_id = _new_id("msg")
        cancels = session._cancels  # a session/cancel after this point ends this turn
        if self.conn.version == "v1":
            async with session._lock:
                ended = session._ended = asyncio.Event()
                try:
                    reason = await self._turn(session, params.prompt, user_id, cancels)
                finally:
                    # waiters resume after this step, in which the answer is written
                    ended.set()
            from acp_types.v1 import models as m1

            return m1.PromptResponse(stop_reason=reason)
        # v2: the answer acknowledges the prompt; the turn follows it. Bounded: a turn running and
        # max_queued_prompts waiting per session, max_in_flight turns per connection.
        if len(session._turns) > self.app.max_queued_prompts or len(self._turns) >= self.conn.max_in_flight:
            raise RequestError(
                INVALID_REQUEST,
                f"session {session.id!r} has {len(session._turns)} prompts running or waiting "
                "(or this connection has too many): wait for its idle state, then prompt again",
            )
        task = asyncio.get_running_loop().create_task(self._v2_turn(session, params.prompt, user_id, cancels))
        for turns in (self._turns, session._turns):
            turns.add(task)
            task.add_done_callback(turns.discard)
        from acp_types.v2 import models as m2

        return m2.PromptResponse(message_id=user_id)

    async def _v2_turn(self, session: Session, prompt: Sequence[Any], user_id: str, cancels: int) -> None:
        from acp_types.v2 import models as m2

        conn = self.conn

        async def send(update: Any) -> None:  # on this connection, even once the session is closed
            await conn.notify("session/update", m2.UpdateSessionNotification(session_id=session.id, update=update))

        async with session._lock:
            ended = session._ended = asyncio.Event()
            try:
                await asyncio.sleep(0)  # the acknowledgement is written before anything of the turn
                await send(m2.UserMessage(message_id=user_id, content=list(prompt)))
                await send(m2.RunningStateUpdate())
                try:
                    reason: StopReason | None = await self._turn(session, prompt, user_id, cancels)
                except ConnectionClosed:
                    raise
                except Exception:
                    log.exception("the turn of session %r failed (ACP v2)", session.id)
                    reason = None
                await send(m2.IdleStateUpdate(stop_reason=reason) if reason else m2.IdleStateUpdate())
            except ConnectionClosed:
                pass  # the client is gone: nobody to tell
            finally:
                ended.set()

    async def _turn(self, session: Session, prompt: Sequence[Any], user_id: str, cancels: int) -> StopReason:
        turn = Turn(session, prompt, user_id)
        session._cancelled = False
        _remember(session, "user", user_id, turn.prompt_text)  # acknowledged: kept even when it never runs
        if session._conn is not self.conn:  # closed or reopened elsewhere while this turn waited
            return "cancelled"
        if session._cancels != cancels:  # cancelled after the prompt was accepted, before it started
            return "cancelled"
        task = asyncio.get_running_loop().create_task(self.app.prompt(turn))
        session._task = task
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():  # this request was cancelled ($/cancel_request): end the app's turn too
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
                raise
            if task.cancelled():
                return "cancelled"
            raise
        finally:
            if session._task is task:
                session._task = None


# -- starting ----------------------------------------------------------------

_LIBRARY = {
    "session_new",
    "session_close",
    "session_cancel",
    "session_load",
    "session_resume",
    "session_set_config_option",
    "session_set_mode",
    "authenticate",
    "auth_login",
    "initialize",
}


def check(app: App, versions: Sequence[str] = ("v1", "v2")) -> None:
    """Refuse an app whose advertised capabilities promise a handler it does not have (:class:`PromiseBroken`)."""
    if type(app).prompt is App.prompt:
        raise PromiseBroken(f"{type(app).__name__} does not implement prompt(), which session/prompt needs")
    for version in versions:
        module = importlib.import_module(f"acp_types.{version}")
        allowed = importlib.import_module(f"acp_types.{version}.capabilities").method_allowed
        caps = app.capabilities(version)
        init = {
            "protocolVersion": module.PROTOCOL_VERSION,
            "agentCapabilities" if version == "v1" else "capabilities": caps,
        }
        if version == "v2":
            init["info"] = {"name": app.name, "version": app.version}
        response = module.METHODS["initialize"].validate_result(init)
        probe = _Surface(app, AgentConnection.__new__(AgentConnection))
        for name, spec in module.METHODS.items():
            if spec.side != "agent" or spec.capability is None:
                continue
            if not allowed(name, response):
                continue
            fn = getattr(probe, spec.handler, None)
            if fn is None:
                raise PromiseBroken(
                    f"{type(app).__name__} advertises {'.'.join(spec.capability[1:])} in ACP {version}, "
                    f"which promises {name}, but implements no handler {spec.handler!r}"
                )


def _local_principal() -> str:
    try:
        return f"local:{getpass.getuser()}"
    except Exception:  # no user name (a container without one): the uid, or one local user
        return f"local:{getattr(os, 'getuid', lambda: '')()}"


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[int]:
    """Keep fd 1 for the wire and point ``sys.stdout`` (and fd 1 for children) at stderr."""
    sys.stdout.flush()
    wire = os.dup(1)
    saved = sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        yield wire
    finally:
        sys.stdout = saved
        os.dup2(wire, 1)
        os.close(wire)


async def serve(
    app: App,
    reader: Reader,
    writer: Writer,
    *,
    versions: Sequence[str] = ("v1", "v2"),
    strict_capabilities: bool = False,
    principal: str | None = None,
    **options: Any,
) -> None:
    """Run ``app`` on a reader/writer pair until the client goes away (``options`` go to the connection).

    ``strict_capabilities=True`` refuses, before sending, a client method the
    client did not advertise (``connection.CapabilityNotAdvertised`` in the app).
    ``principal`` names who the peer is (e.g. from a bearer token a transport
    checked): it reaches the sessions made under that name, from any connection.
    ``None``, the default, makes the connection a principal of its own (until
    :meth:`App.authenticate` returns one).
    """
    check(app, versions)
    conn = AgentConnection(
        reader, writer, app.handler, versions=versions, strict_capabilities=strict_capabilities, **options
    )
    if principal is not None:
        cast(_Surface, conn.handler).principal = principal
    async with conn:
        await conn.wait_closed()
    for session in app.sessions.values():
        if session._conn is conn:
            session._conn = None


async def serve_stdio(
    app: App,
    *,
    versions: Sequence[str] = ("v1", "v2"),
    protect_stdout: bool = True,
    strict_capabilities: bool = False,
    principal: str | None = None,
    **options: Any,
) -> None:
    """Run ``app`` on stdin/stdout; with ``protect_stdout`` what the app prints goes to stderr, not the wire.

    The peer is the local user who started the process: its principal is
    ``local:<user name>`` unless ``principal`` says otherwise.
    """
    options["strict_capabilities"] = strict_capabilities
    options["principal"] = principal if principal is not None else _local_principal()
    check(app, versions)
    if not protect_stdout:
        reader, writer = await pipe_streams(sys.stdin.buffer, sys.stdout.buffer)
        await serve(app, reader, writer, versions=versions, **options)
        return
    with _stdout_to_stderr() as wire, open(wire, "wb", buffering=0, closefd=False) as out:
        reader, writer = await pipe_streams(sys.stdin.buffer, out)
        await serve(app, reader, writer, versions=versions, **options)
