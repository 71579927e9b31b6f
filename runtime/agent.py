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
- **Sessions** live in the app's :class:`~acp_types.store.SessionStore`
  (``App(store=...)``; by default a SQLite file under the user's state
  directory, see :func:`acp_types.store.default_path`), so they outlive the
  process: list, load, resume, archive and close work in a fresh one. The
  store keeps each session's row (cwd, title, ``updatedAt``, archive state,
  owner, its :class:`Setup`) and, in a version-neutral form, everything its
  client was shown: user, agent and thought messages with their ids, tool
  calls with every patch, plans, usage, commands, config and mode, titles.
  An update is in the store before it is written to the client (a batch of
  them in one transaction), so a replay after a crash never lacks what a
  client saw. ``session/list`` pages the store (``cwd`` matched exactly,
  ``archived`` filter with an unknown value refused -32602, opaque cursors
  that survive a restart); ``session/load`` (v1) and ``session/resume``
  with ``replayFrom`` (v2) replay the log by the seeds' rules unless
  :meth:`App.resume` is overridden, text in updates of at most
  :data:`REPLAY_PIECE` characters (in v2 a message rebuilt from chunks
  first gets its update with ``content: []``). A session started in one
  version can be resumed in the other. A session open on a connection in
  one agent process is *claimed*: another process sharing the store gets
  -32600 for it (naming the holder) until it is closed there or that
  process ends. :attr:`App.sessions` holds only the sessions open in this
  process: memory does not grow with the sessions ever served.
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
import contextlib
import datetime
import difflib
import getpass
import importlib
import logging
import os
import sys
import uuid
from collections.abc import Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from ._errors import RequestError
from ._runtime import to_wire
from .connection import AgentConnection, ConnectionClosed, Reader, Writer, pipe_streams
from .store import SessionBusy, SessionStore, StoredSession, StoreError, default_store, holder_token

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


class _Outbox:
    """What one session shows its clients, in order: each batch in the store first, then on the wire.

    A producer (the turn) queues and goes on; one task takes everything queued, appends its events
    in one transaction, then writes the updates. So a replay never lacks what a client saw, and
    the store costs a transaction per batch, not per chunk. At :attr:`LIMIT` queued items the
    producer waits until the writer takes them (so at most two batches are held: bounded memory under a
    slow client, while the next batch fills as the last is written). Anything else written for the session
    (a request to the client, a prompt's answer, a replay) first waits for :meth:`drain`.
    """

    LIMIT = 256

    def __init__(self, store: SessionStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self._items: list[tuple[AgentConnection, tuple[str, str | None, Mapping[str, Any]] | None, Any]] = []
        self._task: asyncio.Task[None] | None = None
        self._error: BaseException | None = None
        self._room: asyncio.Future[None] | None = None  # producers waiting for the queue to be taken

    def _free(self) -> None:
        room, self._room = self._room, None
        if room is not None and not room.done():
            room.set_result(None)

    async def put(
        self, conn: AgentConnection, event: tuple[str, str | None, Mapping[str, Any]] | None, update: Any
    ) -> None:
        self._raise()
        if conn.closed:
            raise ConnectionClosed("the client's connection is closed")
        self._items.append((conn, event, update))
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        if len(self._items) >= self.LIMIT:  # wait until the writer takes this batch (it may still be writing one)
            if self._room is None:
                self._room = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._room)
            self._raise()

    async def drain(self) -> None:
        """Wait until everything queued is in the store and written (or the client is gone)."""
        while self._task is not None:
            await asyncio.shield(self._task)
        self._raise()

    def _raise(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    async def _run(self) -> None:
        try:
            while self._items:
                batch, self._items = self._items, []
                self._free()
                events = [event for _, event, _ in batch if event is not None]
                try:
                    if events:
                        await self.store.append(self.session_id, events)
                    for conn, _, update in batch:
                        if update is None or conn.closed:
                            continue
                        with contextlib.suppress(ConnectionClosed):  # the turn learns it at its next update
                            await conn.notify("session/update", _notification(conn.version, self.session_id, update))
                except Exception as exc:  # the store failed: nothing of this batch or after it is shown
                    self._items.clear()
                    self._error = exc
                    log.error("session %r: %s", self.session_id, exc)
        finally:
            self._task = None
            self._free()


def _notification(version: str, session_id: str, update: Any) -> Any:
    if version == "v1":
        from acp_types.v1 import models as m1

        return m1.SessionNotification(session_id=session_id, update=update)
    from acp_types.v2 import models as m2

    return m2.UpdateSessionNotification(session_id=session_id, update=update)


@dataclass
class Session:
    """One session the library keeps for the app (in the app's store); ``data`` is the app's own.

    ``data`` lives with this process only: an app that needs more of a session after a restart
    keeps it itself (its :meth:`App.new_session` / :meth:`App.resume` hooks see the session id).
    """

    id: str
    cwd: str
    additional_directories: Sequence[str] = ()
    title: str | None = None
    updated_at: str | None = None
    archived: bool = False
    data: dict[str, Any] = field(default_factory=dict)
    setup: Setup = field(default_factory=Setup)
    owner: str | None = None
    """The principal allowed to touch the session (the one that made it); ``None``: any authenticated peer."""
    _out: _Outbox | None = field(default=None, repr=False)
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

    @property
    def store(self) -> SessionStore:
        """The store this session is kept in."""
        return self._outbox().store

    def _outbox(self) -> _Outbox:
        if self._out is None:
            raise RuntimeError(f"session {self.id!r} is not kept by an App")
        return self._out

    async def _emit(
        self, kind: str, message_id: str | None, data: Mapping[str, Any], conn: AgentConnection | None = None
    ) -> None:
        """Keep one event and show it to the client (in the connection's version)."""
        conn = conn or self.connection
        await self._outbox().put(conn, (kind, message_id, data), _update(conn.version, kind, message_id, data))

    async def _say(self, update: Any, conn: AgentConnection | None = None) -> None:
        """Show the client an update that is not kept (a turn's state: running, idle...)."""
        await self._outbox().put(conn or self.connection, None, update)

    async def _drain(self) -> None:
        if self._out is not None:
            await self._out.drain()

    async def _save(self, **fields: Any) -> None:
        await self.store.update(self.id, **fields)

    async def send(self, update: _m1.SessionUpdate | _m2.SessionUpdate) -> None:
        """Send one ``session/update`` of the connection's version (a model of the other is a ``TypeError``).

        It is kept as it is and replayed to clients of the same version only.
        """
        version = self.version
        if not type(update).__module__.startswith(f"acp_types.{version}."):
            raise TypeError(f"{type(update).__name__} is not an ACP {version} session update")
        await self._outbox().put(
            self.connection,
            ("raw", getattr(update, "message_id", None), {"v": version, "update": to_wire(update)}),
            update,
        )

    async def set_title(self, title: str | None) -> None:
        self.title = title
        await self._save(title=title)
        await self._emit("title", None, {"title": title})

    async def set_commands(self, commands: Sequence[Command]) -> None:
        self.setup.commands = list(commands)
        await self._save(state=_state(self))
        await self._emit("commands", None, {"commands": [[c.name, c.description, c.hint] for c in commands]})

    async def set_config(self, options: Sequence[ConfigOption]) -> None:
        self.setup.config = options
        await self._save(state=_state(self))
        await self._emit("config", None, {"setup": _setup_json(self.setup)})

    async def set_mode(self, mode: str) -> None:
        self.setup.mode = mode
        await self._save(state=_state(self))
        await self._emit("mode", None, {"setup": _setup_json(self.setup)})


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
        data: dict[str, Any] = {"id": self.id}
        if status is not None:
            data["status"] = status
        if text is not None or edits:
            data["content"] = _content_json(text, edits)
        if raw_output is not None:
            data["raw_output"] = raw_output
        await self.turn.session._emit("tool", None, data)

    async def done(self, text: str | None = None, *, edits: Sequence[Edit] = ()) -> None:
        await self.update("completed", text=text, edits=edits)

    async def failed(self, text: str | None = None) -> None:
        await self.update("failed", text=text)


class Turn:
    """One prompt turn: what the user said (:attr:`prompt`, :attr:`prompt_text`), what the agent streams
    back (:meth:`text`, :meth:`thought`, :meth:`plan`, :meth:`tool_call`, :meth:`usage`), what it asks
    (:meth:`permission`, :meth:`allowed`, :meth:`read_file`), and :attr:`session`, the session it runs in.

    What it streams is queued: in the store first, then written to the client in order (see the
    module's docstring); a request to the client (:meth:`permission`, :meth:`read_file`) and the
    turn's end wait until everything before them is written."""

    def __init__(self, session: Session, prompt: Sequence[Any], user_message_id: str) -> None:
        self.session = session
        """The session of this turn: its ``id``, ``cwd``, ``setup`` (mode, config), ``data`` (the app's own),
        ``title`` and :meth:`Session.set_title`, :meth:`Session.set_commands`..., and the version's typed client
        (:attr:`Session.v1` / :attr:`Session.v2`)."""
        self.prompt = prompt
        """The prompt's content blocks, as the version's models."""
        self.user_message_id = user_message_id
        self.agent_message_id = _new_id("msg")
        """The id of the agent's message of this turn (what :meth:`text` streams)."""
        self.thought_id = _new_id("msg")
        """The id of the agent's thought of this turn (what :meth:`thought` streams)."""
        self._tools = 0

    @property
    def prompt_text(self) -> str:
        """The prompt's text blocks, joined."""
        return "".join(getattr(b, "text", "") for b in self.prompt if getattr(b, "type", None) == "text")

    async def text(self, text: str) -> None:
        """Stream agent text; chunks of one turn form one message."""
        await self.session._emit("agent", self.agent_message_id, {"text": text})

    async def thought(self, text: str) -> None:
        await self.session._emit("thought", self.thought_id, {"text": text})

    async def plan(self, entries: Sequence[PlanEntry]) -> None:
        """Replace the plan (v1 ``plan``; v2 ``plan_update`` of the session's one plan)."""
        data = {"entries": [[e.content, e.status, e.priority] for e in entries]}
        await self.session._emit("plan", None, data)

    async def usage(self, used: int, size: int) -> None:
        """Context window use: ``used`` of ``size`` tokens."""
        await self.session._emit("usage", None, {"used": used, "size": size})

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
        data: dict[str, Any] = {"id": tool_id, "new": True, "title": title, "kind": kind, "status": "pending"}
        if locations:
            data["locations"] = list(locations)
        if raw_input is not None:
            data["raw_input"] = raw_input
        await self.session._emit("tool", None, data)
        return ToolCall(self, tool_id, title)

    async def permission(self, tool: ToolCall, options: Sequence[PermissionOption] = ALLOW_OR_REJECT) -> str | None:
        """Ask the user; the chosen option's id, or ``None`` when the client cancelled the request.

        v2 reports ``requires_action`` while asking and ``running`` after.
        """
        conn = self.session.connection
        await self.session._drain()  # the client sees the tool call before it is asked about it
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
        await self.session._say(m2.RequiresActionStateUpdate())
        await self.session._drain()
        try:
            answer2 = await P2(cast(Any, conn)).session_request_permission(
                m2.RequestPermissionRequest(
                    session_id=self.session.id, title=tool.title, subject=subject, options=opts2
                )
            )
        finally:
            if not self.session._cancelled:
                await self.session._say(m2.RunningStateUpdate())
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

        await self.session._drain()
        answer = await P1(cast(Any, conn)).fs_read_text_file(
            m1.ReadTextFileRequest(**_some(session_id=self.session.id, path=path, line=line, limit=limit))
        )
        return answer.content


class Replay:
    """Writes a session's history back to the client before the load/resume answer.

    :meth:`stored` writes what the store kept (the default :meth:`App.resume` calls it); an app
    that keeps its own history writes it with :meth:`message` instead. Nothing written here is
    kept again.
    """

    def __init__(self, session: Session, after: int = 0) -> None:
        self.session = session
        self._after = after

    async def _write(self, update: Any) -> None:
        conn = self.session.connection
        await conn.notify("session/update", _notification(conn.version, self.session.id, update))

    async def stored(self) -> None:
        """Write everything the client was shown, from the cursor the client asked for, as it was shown.

        Read from the store a page at a time (bounded memory whatever the session's length); the
        chunks of a message are joined into pieces of at most :data:`REPLAY_PIECE` characters; a
        v2 message rebuilt from chunks first gets its message update with ``content: []``; user
        messages keep the ids their prompts were answered with.
        """
        await _replay(self, self.session.store, self._after)

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
        m = _models(version)
        if version == "v1" or len(pieces) > 1:
            if version == "v2":
                await self._write(_WHOLE[role](m)(message_id=mid, content=[]))
            for piece in pieces:
                await self._write(_CHUNK[role](m)(message_id=mid, content=m.TextContent(text=piece)))
            return
        await self._write(_WHOLE[role](m)(message_id=mid, content=[m.TextContent(text=text)]))


_CHUNK: dict[str, Any] = {
    "user": lambda m: m.UserMessageChunk,
    "agent": lambda m: m.AgentMessageChunk,
    "thought": lambda m: m.AgentThoughtChunk,
}
_WHOLE: dict[str, Any] = {
    "user": lambda m: m.UserMessage,
    "agent": lambda m: m.AgentMessage,
    "thought": lambda m: m.AgentThought,
}


async def _replay(replay: Replay, store: SessionStore, after: int) -> None:
    """Write the session's kept events after ``after`` (see :meth:`Replay.stored`)."""
    session = replay.session
    version = session.version
    m = _models(version)
    seen: set[str] = set()  # message ids of this turn already started on the wire
    group: tuple[str, str] | None = None  # the (kind, id) of the text being joined
    parts: list[str] = []
    size = 0

    async def piece(text: str, last: bool) -> None:
        assert group is not None
        kind, mid = group
        if version == "v2" and mid not in seen:
            seen.add(mid)
            if last:  # the whole text of this stretch fits one update
                await replay._write(_WHOLE[kind](m)(message_id=mid, content=[m.TextContent(text=text)] if text else []))
                return
            await replay._write(_WHOLE[kind](m)(message_id=mid, content=[]))
        seen.add(mid)
        await replay._write(_CHUNK[kind](m)(message_id=mid, content=m.TextContent(text=text)))

    async def close_group() -> None:
        nonlocal group, parts, size
        if group is not None:
            await piece("".join(parts), True)
        group, parts, size = None, [], 0

    async for event in store.events(session.id, after):
        if event.kind in ("agent", "thought") and event.message_id is not None:
            if group != (event.kind, event.message_id):
                await close_group()
                group = (event.kind, event.message_id)
            parts.append(event.data["text"])
            size += len(event.data["text"])
            while size > REPLAY_PIECE:
                text = "".join(parts)
                await piece(text[:REPLAY_PIECE], False)
                parts, size = [text[REPLAY_PIECE:]], len(text) - REPLAY_PIECE
            continue
        await close_group()
        if event.kind == "user":
            seen.clear()
            mid = event.message_id or _new_id("msg")
            blocks = _blocks(version, event.data)
            if version == "v2":
                await replay._write(m.UserMessage(message_id=mid, content=blocks))
            else:
                for block in blocks:
                    await replay._write(m.UserMessageChunk(message_id=mid, content=block))
            continue
        update = _update(version, event.kind, event.message_id, event.data)
        if update is not None:
            await replay._write(update)
    await close_group()


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

    keep_sessions: int | None = None
    """Retention: at most this many sessions are kept in the store (the oldest go first); ``None``: all."""
    keep_days: float | None = None
    """Retention: sessions made more than this many days ago are deleted; ``None``: kept."""

    def __init__(self, store: SessionStore | None = None) -> None:
        self.sessions: dict[str, Session] = {}
        """The sessions open on a connection in this process (the store has the rest)."""
        self.store = store
        """Where sessions are kept; ``None`` until served: then :func:`acp_types.store.default_store` (SQLite)."""
        self._holder = holder_token()  # this process, in the store's claims
        self._open = False
        self._users = 0  # serve() calls running
        self._made = 0  # sessions made since the last prune

    async def _store(self) -> SessionStore:
        """The store, opened (and pruned by the retention settings) on first use."""
        store = self.store
        if store is None:
            store = self.store = default_store(self.name)
        if not self._open:
            await store.open()
            self._open = True
            await self._prune(store)
        return store

    async def _prune(self, store: SessionStore) -> None:
        if self.keep_sessions is not None or self.keep_days is not None:
            age = None if self.keep_days is None else self.keep_days * 86400
            await store.prune(max_sessions=self.keep_sessions, max_age=age)

    async def aclose(self) -> None:
        """Close the store (served apps do it when the last connection ends)."""
        if self.store is not None and self._open:
            self._open = False
            await self.store.close()

    async def prompt(self, turn: Turn) -> StopReason:
        """Run one turn; return why it ended. Cancelling raises ``CancelledError`` at an ``await``."""
        raise NotImplementedError

    async def new_session(self, session: Session) -> Setup | None:
        """A session was made (its id is the library's); return what it starts with."""
        return None

    async def resume(self, session: Session, replay: Replay | None) -> Setup | None:
        """Reopen a session; write its history with ``replay`` when it is not ``None``.

        The default replays everything the store kept (:meth:`Replay.stored`) and keeps the setup
        the session had.
        """
        if replay is not None:
            await replay.stored()
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
        """``session/list``; the default pages the sessions in the store, ``cwd`` and ``archived`` filters applied.

        Pages follow the order sessions were made, by the store's keyset cursor (opaque; it names a
        position, not a session, so it stays valid when that session is archived, and across
        restarts): a page costs an index seek, whatever the total. An ``archived`` value other
        than ``exclude``, ``include`` or ``only``, or a malformed cursor, is answered -32602.
        """
        if query.archived not in ("exclude", "include", "only"):
            raise RequestError(INVALID_PARAMS, f"unsupported archived filter {query.archived!r}")
        store = await self._store()
        try:
            rows, cursor = await store.list(
                cwd=query.cwd,
                archived=cast(ArchivedFilter, query.archived),
                cursor=query.cursor,
                limit=self.page_size,
                owner=query.principal,
            )
        except ValueError as exc:
            raise RequestError(INVALID_PARAMS, "malformed cursor: pass back a nextCursor this agent sent") from exc
        return Page([SessionInfo(r.session_id, r.cwd, r.title, r.updated_at, r.archived) for r in rows], cursor)

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


def _state(session: Session) -> dict[str, Any]:
    """What the store's JSON snapshot of a session holds."""
    return {"setup": _setup_json(session.setup)}


def _blocks(version: str, data: Mapping[str, Any]) -> list[Any]:
    """A user message's content blocks in ``version``; blocks the other version cannot say become their text."""
    m = _models(version)
    if data.get("v") == version:
        return [
            m.UserMessageChunk.model_validate(
                {"sessionUpdate": "user_message_chunk", "messageId": "-", "content": b}
            ).content
            for b in data["content"]
        ]
    out = []
    for block in data["content"]:
        try:
            out.append(
                m.UserMessageChunk.model_validate(
                    {"sessionUpdate": "user_message_chunk", "messageId": "-", "content": block}
                ).content
            )
        except ValueError:
            log.warning(
                "a %s content block of type %r has no %s form: replayed as text",
                data.get("v"),
                block.get("type"),
                version,
            )
            if block.get("text"):
                out.append(m.TextContent(text=block["text"]))
    return out


def _update(version: str, kind: str, mid: str | None, data: Mapping[str, Any]) -> Any | None:
    """The ``session/update`` an event is shown as live, in ``version`` (``None``: nothing to show)."""
    m = _models(version)
    if kind in ("agent", "thought"):
        return _CHUNK[kind](m)(message_id=mid, content=m.TextContent(text=data["text"]))
    if kind == "user":  # v1 does not echo the prompt; v2 inserts it as a whole message
        return m.UserMessage(message_id=mid, content=_blocks(version, data)) if version == "v2" else None
    if kind == "tool":
        fields: dict[str, Any] = {
            k: data[k] for k in ("title", "kind", "status", "raw_input", "raw_output") if k in data
        }
        if "locations" in data:
            fields["locations"] = [m.ToolCallLocation(path=p) for p in data["locations"]]
        if "content" in data:
            edits = [Edit(*e) for e in data["content"]["edits"]]
            fields["content"] = _tool_content(version, data["content"]["text"], edits)
        if version == "v1" and data.get("new"):
            return m.ToolCall(tool_call_id=data["id"], **fields)
        return m.ToolCallProgress(tool_call_id=data["id"], **fields)
    if kind == "plan":
        items = [m.PlanEntry(content=c, status=st, priority=p) for c, st, p in data["entries"]]
        if version == "v1":
            return m.Plan(entries=items)
        return m.PlanUpdate(plan=m.PlanItems(plan_id="plan", entries=items))
    if kind == "usage":
        return m.UsageUpdate(used=data["used"], size=data["size"])
    if kind == "commands":
        return m.AvailableCommandsUpdate(available_commands=_commands(m, [Command(*c) for c in data["commands"]]))
    if kind == "title":
        return m.SessionInfoUpdate(title=data["title"])
    if kind == "mode" and version == "v1":
        return m.CurrentModeUpdate(current_mode_id=data["setup"]["mode"])
    if kind in ("config", "mode"):
        return m.ConfigOptionUpdate(config_options=_config(version, _setup_from(data["setup"])))
    if kind == "raw":
        if data["v"] != version:
            return None
        return (
            m.SessionNotification.model_validate({"sessionId": "-", "update": data["update"]}).update
            if version == "v1"
            else m.UpdateSessionNotification.model_validate({"sessionId": "-", "update": data["update"]}).update
        )
    log.warning("an event of unknown kind %r is not shown", kind)
    return None


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

    def _need_auth(self) -> None:
        if not self.authenticated:
            methods = ", ".join(a.id for a in self.app.auth_methods)
            raise RequestError(AUTH_REQUIRED, f"Authentication required (methods: {methods})")

    def _not_found(self, sid: str) -> RequestError:
        return RequestError(RESOURCE_NOT_FOUND, f"no session {sid!r}", {"sessionId": sid})

    async def _find(self, sid: str) -> Session:
        """The caller's session: open in this process, or as the store keeps it (not opened)."""
        self._need_auth()
        session = self.app.sessions.get(sid)
        if session is None:
            store = await self.app._store()
            stored = await store.get(sid)
            if stored is not None:
                session = _session_of(stored, store)
        if session is None or not self._mine(session):  # another principal's session is not named
            raise self._not_found(sid)
        return session

    async def _open(self, sid: str) -> Session:
        """The caller's session open on this connection (prompt, mode, config)."""
        session = await self._find(sid)
        if session._conn is not self.conn:
            raise RequestError(INVALID_PARAMS, f"session {sid!r} is not open on this connection: load or resume it")
        return session

    async def _claim(self, session: Session) -> None:
        try:
            await session.store.claim(session.id, self.app._holder)
        except SessionBusy as exc:
            raise RequestError(
                INVALID_REQUEST,
                f"session {session.id!r} is open in another agent process: close it there, or wait for that "
                f"process to end ({exc})",
                {"sessionId": session.id},
            ) from None

    async def _detach(self, session: Session) -> None:
        """The session leaves this process: its turns end, its claim is released, it is kept in the store only."""
        session._conn = None
        await self._stop(session)
        await session._drain()
        if self.app.sessions.get(session.id) is session and session._conn is None:
            del self.app.sessions[session.id]
            with contextlib.suppress(StoreError):
                await session.store.release(session.id, self.app._holder)

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
        store = await self.app._store()
        dirs = list(params.additional_directories or ())
        session = Session(_new_id("sess"), params.cwd, dirs, owner=self.principal, updated_at=_now())
        await store.create(
            StoredSession(session.id, session.cwd, tuple(dirs), None, session.updated_at, False, session.owner)
        )
        session._out = _Outbox(store, session.id)
        await store.claim(session.id, self.app._holder)
        session._conn = self.conn
        self.app.sessions[session.id] = session
        try:
            setup = await self.app.new_session(session)
            if setup is not None:
                session.setup = setup
            await session._save(state=_state(session))
        except BaseException:  # no session was made: nothing of it is kept
            self.app.sessions.pop(session.id, None)
            with contextlib.suppress(StoreError):
                await store.delete(session.id)
            raise
        await self._pruned(store)
        if self.conn.version == "v1" and session.setup.commands:
            # v1 has no commands in the answer: an update, once the answer has named the session
            self._later(self._send_commands(session))
        return self.m.NewSessionResponse(session_id=session.id, **_setup_fields(self.conn.version, setup))

    async def _pruned(self, store: SessionStore) -> None:
        self.app._made += 1
        if self.app._made >= 64:  # retention applies as sessions are made, not only at start
            self.app._made = 0
            await self.app._prune(store)

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._turns.add(task)
        task.add_done_callback(self._turns.discard)

    async def _send_commands(self, session: Session) -> None:
        """v1: the session's commands as an update (not kept: the setup holds them, every load says them)."""
        await asyncio.sleep(0)  # the answer is written in the step the handler returns
        with contextlib.suppress(ConnectionClosed, RuntimeError):
            from acp_types.v1 import models as m1

            await session._say(m1.AvailableCommandsUpdate(available_commands=_commands(m1, session.setup.commands)))

    async def _reopen(self, params: Any, after: int | None) -> Any:
        """load / resume: the session opens on this connection; ``after`` is where replay starts (``None``: none)."""
        found = await self._find(params.session_id)
        if found.id not in self.app.sessions:
            await self._claim(found)  # not open in this process: is it in another?
        session = self.app.sessions.setdefault(found.id, found)  # one object per open session in a process
        session._conn = None  # turns waiting on the other connection (or this one) end cancelled
        await self._stop(session)
        await session._drain()
        session._conn = self.conn
        if session.cwd != params.cwd:
            session.cwd = params.cwd
            await session._save(cwd=params.cwd)
        try:
            setup = await self.app.resume(session, Replay(session, after) if after is not None else None)
        except BaseException:
            await self._detach(session)
            raise
        if setup is not None:
            session.setup = setup
            await session._save(state=_state(session))
        if self.conn.version == "v1" and session.setup.commands:  # v2 has them in the answer
            await self._send_commands_now(session)
        return _setup_fields(self.conn.version, session.setup)

    async def _send_commands_now(self, session: Session) -> None:
        from acp_types.v1 import models as m1

        await session._say(m1.AvailableCommandsUpdate(available_commands=_commands(m1, session.setup.commands)))
        await session._drain()

    async def session_load(self, params: Any) -> Any:
        return self.m.LoadSessionResponse(**await self._reopen(params, 0))

    async def session_resume(self, params: Any) -> Any:
        cursor = getattr(params, "replay_from", None)
        after: int | None = None
        if cursor is not None:
            if getattr(cursor, "type", None) != "start":
                raise RequestError(INVALID_PARAMS, "unsupported replayFrom cursor: this agent replays from the start")
            after = 0
        return self.m.ResumeSessionResponse(**await self._reopen(params, after))

    async def _close(self, session: Session) -> None:
        """As ``session/close``: the running turn is cancelled, the waiting ones end ``cancelled``, all before this returns."""
        if self.app.sessions.get(session.id) is session:
            await self._detach(session)

    async def session_close(self, params: Any) -> Any:
        await self._close(await self._find(params.session_id))
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
        session = await self._find(params.session_id)
        if not session.archived and session._conn is self.conn:
            await session._say(self.m.SessionInfoUpdate(archived=True))
        session.archived = True
        await session.store.update(session.id, archived=True)
        await self._close(session)  # seed 000: as if session/close had been called
        return self.m.ArchiveSessionResponse()

    async def session_unarchive(self, params: Any) -> Any:
        session = await self._find(params.session_id)
        session.archived = False
        await session.store.update(session.id, archived=False)
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
        session = await self._open(params.session_id)
        value = params.value
        if not isinstance(value, str):  # the select options this library offers take strings
            raise RequestError(INVALID_PARAMS, f"the value of {params.config_id!r} must be a string")
        await self.app.set_option(session, params.config_id, value)
        await session._save(state=_state(session))
        return self.m.SetSessionConfigOptionResponse(config_options=_config(self.conn.version, session.setup))

    async def session_set_mode(self, params: Any) -> Any:
        session = await self._open(params.session_id)
        await self.app.set_option(session, "mode", params.mode_id)
        await session._save(state=_state(session))
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
        session = await self._open(params.session_id)
        user_id = _new_id("msg")
        cancels = session._cancels  # a session/cancel after this point ends this turn
        if self.conn.version == "v1":
            async with session._lock:
                ended = session._ended = asyncio.Event()
                try:
                    await self._begin(session, params.prompt, user_id)
                    reason = await self._turn(session, params.prompt, user_id, cancels)
                    await session._drain()  # every update of the turn is written before its answer
                except BaseException:
                    with contextlib.suppress(Exception):
                        await session._drain()
                    raise
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

    async def _begin(self, session: Session, prompt: Sequence[Any], user_id: str) -> None:
        """The prompt is inserted: kept (with the id its answer names) and, in v2, shown as ``user_message``."""
        session.updated_at = _now()
        await session._save(updated_at=session.updated_at)
        data = {
            "v": self.conn.version,
            "content": [to_wire(b) for b in prompt],
            "text": "".join(getattr(b, "text", "") for b in prompt if getattr(b, "type", None) == "text"),
        }
        shown = self.m.UserMessage(message_id=user_id, content=list(prompt)) if self.conn.version == "v2" else None
        await session._outbox().put(self.conn, ("user", user_id, data), shown)

    async def _v2_turn(self, session: Session, prompt: Sequence[Any], user_id: str, cancels: int) -> None:
        from acp_types.v2 import models as m2

        conn = self.conn  # written on this connection, even once the session is closed
        async with session._lock:
            ended = session._ended = asyncio.Event()
            try:
                await asyncio.sleep(0)  # the acknowledgement is written before anything of the turn
                await self._begin(session, prompt, user_id)
                await session._say(m2.RunningStateUpdate(), conn)
                try:
                    reason: StopReason | None = await self._turn(session, prompt, user_id, cancels)
                except (ConnectionClosed, StoreError):
                    raise
                except Exception:
                    log.exception("the turn of session %r failed (ACP v2)", session.id)
                    reason = None
                await session._say(m2.IdleStateUpdate(stop_reason=reason) if reason else m2.IdleStateUpdate(), conn)
                await session._drain()
            except ConnectionClosed:
                pass  # the client is gone: nobody to tell
            except StoreError:
                log.exception("the session store failed during a turn of session %r", session.id)
            finally:
                ended.set()

    async def _turn(self, session: Session, prompt: Sequence[Any], user_id: str, cancels: int) -> StopReason:
        turn = Turn(session, prompt, user_id)
        session._cancelled = False
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


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _session_of(stored: StoredSession, store: SessionStore) -> Session:
    """A session as the store keeps it, not open on any connection."""
    session = Session(
        stored.session_id,
        stored.cwd,
        list(stored.additional_directories),
        stored.title,
        stored.updated_at,
        stored.archived,
        setup=_setup_from(stored.state.get("setup", {})),
        owner=stored.owner,
    )
    session._out = _Outbox(store, session.id)
    return session


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
    await app._store()  # a store that cannot be used fails here, before the client is answered
    app._users += 1
    try:
        conn = AgentConnection(
            reader, writer, app.handler, versions=versions, strict_capabilities=strict_capabilities, **options
        )
        surface = cast(_Surface, conn.handler)
        if principal is not None:
            surface.principal = principal
        async with conn:
            await conn.wait_closed()
        for session in [s for s in app.sessions.values() if s._conn is conn]:
            await surface._detach(session)
    finally:
        app._users -= 1
        if not app._users:
            await app.aclose()


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
    try:
        await app._store()
    except StoreError as exc:  # one line and an exit code, never a traceback on the wire
        raise SystemExit(f"{app.name}: {exc}") from None
    if not protect_stdout:
        reader, writer = await pipe_streams(sys.stdin.buffer, sys.stdout.buffer)
        await serve(app, reader, writer, versions=versions, **options)
        return
    with _stdout_to_stderr() as wire, open(wire, "wb", buffering=0, closefd=False) as out:
        reader, writer = await pipe_streams(sys.stdin.buffer, out)
        await serve(app, reader, writer, versions=versions, **options)
