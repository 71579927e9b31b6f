"""Sessions, turns, tool calls and replays: the lifecycle of what a session shows, written once.

A session's updates go through its :class:`_Outbox` as version-neutral events (kept in the store
first, then written); the connection's speaker (:func:`speaker_for`) renders each one in the
version the connection settled, live and in a replay.

Hand-written: the source is runtime/agent/_session.py, copied into the package unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .._runtime import to_wire
from ..connection import AgentConnection, ConnectionClosed
from ..store import SessionStore, StoredSession
from ._speaker import Speaker
from ._v1 import V1Speaker
from ._v2 import V2Speaker
from ._values import (
    ALLOW_OR_REJECT,
    REPLAY_PIECE,
    Command,
    ConfigOption,
    Edit,
    PermissionOption,
    PlanEntry,
    SessionInfo,
    Setup,
    StopReason,
    ToolKind,
    ToolStatus,
    _content_json,
    _new_id,
    _setup_from,
    _setup_json,
    log,
)

if TYPE_CHECKING:
    from acp_types import v1, v2
    from acp_types.v1 import models as _m1
    from acp_types.v2 import models as _m2

_SPEAKERS: dict[str, Speaker] = {"v1": V1Speaker(), "v2": V2Speaker()}


def speaker_for(version: str) -> Speaker:
    """The speaker of a settled version: the one place the library reads which version it speaks."""
    return _SPEAKERS[version]


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
                            await conn.notify(
                                "session/update", speaker_for(conn.version).notification(self.session_id, update)
                            )
                except Exception as exc:  # the store failed: nothing of this batch or after it is shown
                    self._items.clear()
                    self._error = exc
                    log.error("session %r: %s", self.session_id, exc)
        finally:
            self._task = None
            self._free()


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
    def _speaker(self) -> Speaker:
        return speaker_for(self.connection.version)

    @property
    def v1(self) -> v1.ClientPeer | None:
        """The typed v1 client, or ``None`` when the connection speaks v2."""
        return self._speaker.peer_v1(self.connection)

    @property
    def v2(self) -> v2.ClientPeer | None:
        """The typed v2 client, or ``None`` when the connection speaks v1."""
        return self._speaker.peer_v2(self.connection)

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
        update = speaker_for(conn.version).update(kind, message_id, data)
        await self._outbox().put(conn, (kind, message_id, data), update)

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
        speaker = self._speaker
        if not speaker.owns(update):
            raise TypeError(f"{type(update).__name__} is not an ACP {speaker.version} session update")
        await self._outbox().put(
            self.connection,
            ("raw", getattr(update, "message_id", None), {"v": speaker.version, "update": to_wire(update)}),
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
        session = self.session
        speaker = session._speaker
        await session._drain()  # the client sees the tool call before it is asked about it
        asking = speaker.asking()
        if asking is not None:
            await session._say(asking)
            await session._drain()
        try:
            return await speaker.ask_permission(session.connection, session.id, tool.id, tool.title, options)
        finally:
            running = speaker.running() if asking is not None else None
            if running is not None and not session._cancelled:
                await session._say(running)

    async def allowed(self, tool: ToolCall) -> bool:
        """Ask allow-or-reject; ``True`` when allowed."""
        return await self.permission(tool) == "allow"

    async def read_file(self, path: str, line: int | None = None, limit: int | None = None) -> str | None:
        """The client's view of a text file (v1 ``fs/read_text_file``); ``None`` where the client offers no such read."""
        session = self.session
        speaker, conn = session._speaker, session.connection
        if not speaker.reads_files(conn):
            return None
        await session._drain()
        return await speaker.read_file(conn, session.id, path, line, limit)


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
        session = self.session
        await session.connection.notify("session/update", session._speaker.notification(session.id, update))

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
        mid = message_id or _new_id("msg")
        pieces = [text[i : i + REPLAY_PIECE] for i in range(0, len(text), REPLAY_PIECE)] or [""]
        for update in self.session._speaker.message(role, text, mid, pieces):
            await self._write(update)


async def _replay(replay: Replay, store: SessionStore, after: int) -> None:
    """Write the session's kept events after ``after`` (see :meth:`Replay.stored`)."""
    session = replay.session
    speaker = session._speaker
    seen: set[str] = set()  # message ids of this turn already started on the wire
    group: tuple[str, str] | None = None  # the (kind, id) of the text being joined
    parts: list[str] = []
    size = 0

    async def piece(text: str, last: bool) -> None:
        assert group is not None
        kind, mid = group
        first = mid not in seen
        seen.add(mid)
        for update in speaker.piece(kind, mid, text, first, last):
            await replay._write(update)

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
            for update in speaker.user_replay(mid, speaker.blocks(event.data)):
                await replay._write(update)
            continue
        update = speaker.update(event.kind, event.message_id, event.data)
        if update is not None:
            await replay._write(update)
    await close_group()


def _state(session: Session) -> dict[str, Any]:
    """What the store's JSON snapshot of a session holds."""
    return {"setup": _setup_json(session.setup)}


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
