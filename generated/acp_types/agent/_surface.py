"""The handler one connection gets: each client method answered from the app, the lifecycle once.

Sessions (made, found, claimed in the store, opened on a connection, detached), who may touch
them (principals, login), cancel/close/archive, and the prompt's turn and its bounds are written
here once; what a version writes differently is asked of the connection's speaker, chosen when
the connection settled its version at ``initialize``.

Hand-written: the source is runtime/agent/_surface.py, copied into the package unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Sequence
from typing import Any

from .._errors import RequestError
from .._runtime import to_wire
from ..connection import AgentConnection, ConnectionClosed
from ..store import SessionBusy, SessionStore, StoredSession, StoreError
from ._app import App
from ._session import Replay, Session, Turn, _Outbox, _session_of, _state, speaker_for
from ._speaker import Speaker
from ._values import (
    AUTH_REQUIRED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    RESOURCE_NOT_FOUND,
    ListQuery,
    StopReason,
    _new_id,
    _now,
    _some,
    log,
)


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
        self._speaker: Speaker | None = None
        if not app.archive:
            self.session_archive = None  # type: ignore[assignment]
            self.session_unarchive = None  # type: ignore[assignment]
        if not app.listing:
            self.session_list = None  # type: ignore[assignment]

    @property
    def speaker(self) -> Speaker:
        """How this connection's version writes: chosen at ``initialize``, where the version settles."""
        return self._speaker or speaker_for(self.conn.version)

    @property
    def m(self) -> Any:
        return self.speaker.m

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
        app = self.app
        self._speaker = speaker_for(self.conn.version)
        caps = app.capabilities(self.conn.version)
        return self._speaker.initialize(caps, app.auth_methods, app.name, app.version, app.title)

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
        commands = self.speaker.commands_update(session.setup)
        if commands is not None:  # no commands in the answer (v1): an update, once the answer has named the session
            self._later(self._send_commands(session, commands))
        return self.m.NewSessionResponse(session_id=session.id, **self.speaker.setup_fields(setup))

    async def _pruned(self, store: SessionStore) -> None:
        self.app._made += 1
        if self.app._made >= 64:  # retention applies as sessions are made, not only at start
            self.app._made = 0
            await self.app._prune(store)

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._turns.add(task)
        task.add_done_callback(self._turns.discard)

    async def _send_commands(self, session: Session, update: Any) -> None:
        """The session's commands as an update (not kept: the setup holds them, every load says them)."""
        await asyncio.sleep(0)  # the answer is written in the step the handler returns
        with contextlib.suppress(ConnectionClosed, RuntimeError):
            await session._say(update)

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
        commands = self.speaker.commands_update(session.setup)
        if commands is not None:  # not in the answer (v1): before it
            await session._say(commands)
            await session._drain()
        return self.speaker.setup_fields(session.setup)

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
        return self.m.SetSessionConfigOptionResponse(config_options=self.speaker.config(session.setup))

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

        async def run() -> StopReason:  # the turn inside the answer (v1)
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
            return reason

        def queue() -> None:  # the answer acknowledges the prompt; the turn follows it (v2)
            # Bounded: a turn running and max_queued_prompts waiting per session, max_in_flight turns per connection.
            if len(session._turns) > self.app.max_queued_prompts or len(self._turns) >= self.conn.max_in_flight:
                raise RequestError(
                    INVALID_REQUEST,
                    f"session {session.id!r} has {len(session._turns)} prompts running or waiting "
                    "(or this connection has too many): wait for its idle state, then prompt again",
                )
            task = asyncio.get_running_loop().create_task(self._queued_turn(session, params.prompt, user_id, cancels))
            for turns in (self._turns, session._turns):
                turns.add(task)
                task.add_done_callback(turns.discard)

        return await self.speaker.prompt(run, queue, user_id)

    async def _begin(self, session: Session, prompt: Sequence[Any], user_id: str) -> None:
        """The prompt is inserted: kept (with the id its answer names) and, in v2, shown as ``user_message``."""
        session.updated_at = _now()
        await session._save(updated_at=session.updated_at)
        data = {
            "v": self.speaker.version,
            "content": [to_wire(b) for b in prompt],
            "text": "".join(getattr(b, "text", "") for b in prompt if getattr(b, "type", None) == "text"),
        }
        shown = self.speaker.user_shown(user_id, prompt)
        await session._outbox().put(self.conn, ("user", user_id, data), shown)

    async def _queued_turn(self, session: Session, prompt: Sequence[Any], user_id: str, cancels: int) -> None:
        """A turn that runs after its prompt's answer (v2): ``running``, the turn, ``idle`` with its stop reason."""
        speaker = self.speaker
        conn = self.conn  # written on this connection, even once the session is closed
        async with session._lock:
            ended = session._ended = asyncio.Event()
            try:
                await asyncio.sleep(0)  # the acknowledgement is written before anything of the turn
                await self._begin(session, prompt, user_id)
                await session._say(speaker.running(), conn)
                try:
                    reason: StopReason | None = await self._turn(session, prompt, user_id, cancels)
                except (ConnectionClosed, StoreError):
                    raise
                except Exception:
                    log.exception("the turn of session %r failed (ACP %s)", session.id, speaker.version)
                    reason = None
                await session._say(speaker.idle(reason), conn)
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
