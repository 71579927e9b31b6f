"""Client helpers on a connection: turns that return when they end, the session state kept as updates stream.

Pass :class:`SessionClient` as the handler of a client connection; it keeps
one ``SessionState`` (of the settled version) per session and gives one API
for v1 and v2 agents::

    from acp_types import client, connection

    async with connection.spawn_agent(command, client.SessionClient) as conn:
        acp = conn.handler
        await conn.initialize(v2.InitializeRequest(protocol_version=2, info=info))
        session_id = await acp.new_session(os.getcwd())
        turn = await acp.prompt(session_id, "hello")
        print(turn.stop_reason, acp.states[session_id].messages[-1].text)

- :meth:`SessionClient.prompt` sends ``session/prompt`` and returns when the
  turn has ended: in v1 with the response's stop reason; in v2, where the
  response only acknowledges the prompt, with the stop reason of the
  ``idle`` state update that ends the turn. Every update of the turn has
  been applied to the state by then. If the connection ends first (the
  agent exited after acknowledging), it raises ``ConnectionClosed``.
  Prompts on one session go one at a time (a second call waits for the
  first turn to end).
- ``SessionClient(conn, permission=...)`` decides ``session/request_permission``:
  a plain function or an ``async`` one, given the request's params, returning
  an ``optionId``, a whole result dict, or ``None`` (``cancelled``).
- ``states[session_id]`` / ``state(session_id)`` is a :data:`SessionState`:
  ``v1.SessionState`` or ``v2.SessionState`` by the settled version, typed
  (``isinstance`` narrows it). States of sessions this client did not open
  are capped (``max_other_sessions``).
- :meth:`SessionClient.cancel` sends ``session/cancel`` and answers the
  session's pending ``session/request_permission`` requests with the
  ``cancelled`` outcome, as both versions require.
- :meth:`SessionClient.replay` reopens a session with its history replayed
  (v1 ``session/load``, v2 ``session/resume`` with ``replayFrom``) into the state.
- :func:`list_sessions` walks ``session/list`` pages, following
  ``nextCursor`` until it is missing; cursors are passed back untouched.

Hand-written: the source is runtime/client.py, which the generator copies
into the package unchanged.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ForwardRef, Union

if TYPE_CHECKING:
    from typing import TypeAlias

    from acp_types import _state_v1, _state_v2
    from acp_types.session_state import Problem

    SessionState: TypeAlias = "_state_v1.SessionState | _state_v2.SessionState"
else:  # the same at run time, without importing both versions' models
    SessionState = Union[ForwardRef("acp_types.v1.SessionState"), ForwardRef("acp_types.v2.SessionState")]  # noqa: UP007
"""The state a :class:`SessionClient` keeps: ``v1.SessionState`` or ``v2.SessionState``, by the settled version
(``isinstance`` tells which; a type checker knows the attributes both have)."""

__all__ = ["CursorLoop", "SessionClient", "SessionState", "Turn", "list_sessions"]

PermissionPolicy = Callable[[Any], "Awaitable[Any] | Any"]
"""Decides a permission request: given its params, returns an ``optionId`` (or a result dict); may be async."""

UpdateHook = Callable[[Any, Any], "Awaitable[None] | None"]
"""Called after each update was applied, with the session's state and the notification; may be async."""


class CursorLoop(RuntimeError):
    """The agent answered ``session/list`` with a ``nextCursor`` it had given before: the listing would never end."""


@dataclass
class Turn:
    """How a prompted turn ended.

    ``stop_reason`` is ``None`` when the agent never reported one (a v2
    agent that sent no ``idle`` before ``idle_timeout``: then ``timed_out``).
    ``problems`` are the rules the turn broke, as far as the state checks
    them (all of them in a strict client).
    """

    stop_reason: str | None
    response: Any
    state: SessionState
    problems: list[Problem] = field(default_factory=list)
    timed_out: bool = False


@dataclass
class _Queue:
    """The prompts of one session waiting for their turn (``users``: the calls holding or waiting for ``lock``)."""

    lock: asyncio.Lock
    users: int = 0


def _module(conn: Any) -> Any:
    from acp_types import v1, v2

    return v1 if conn.version == "v1" else v2


def _prompt_blocks(m: Any, prompt: str | Sequence[Any]) -> list[Any]:
    if isinstance(prompt, str):
        return [m.TextContent(text=prompt)]
    return list(prompt)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class SessionClient:
    """A client connection's handler that applies every ``session/update`` to a per-session state.

    ``strict`` makes the states strict (every rule checked). ``permission``
    decides ``session/request_permission``: it gets the params and returns
    the chosen ``optionId`` (or a whole result dict); without it the first
    ``reject_once`` / ``reject_always`` option is chosen, or the request is
    answered ``cancelled`` when there is none. ``on_update`` is called after
    each update was applied.

    A session this client opened (:meth:`new_session`, :meth:`replay`,
    :meth:`prompt`, or :meth:`state` called for it) keeps its state for the
    life of the client. Updates for other sessions (an agent may name any id)
    get a state too, but at most ``max_other_sessions`` of them are kept: the
    one updated least recently is dropped first (``0``: such updates are
    ignored), so an agent naming fresh ids cannot grow the client without bound.
    """

    def __init__(
        self,
        conn: Any,
        *,
        strict: bool = False,
        permission: PermissionPolicy | None = None,
        on_update: UpdateHook | None = None,
        max_other_sessions: int = 16,
    ) -> None:
        self.conn = conn
        self.strict = strict
        self.permission = permission
        self.on_update = on_update
        self.max_other_sessions = max_other_sessions
        self.states: dict[str, SessionState] = {}
        """One ``SessionState`` per session id (those of sessions it did not open: the last few updated)."""
        self._others: dict[str, None] = {}  # ids of the states kept for sessions not opened here, least recent first
        self._idle: dict[str, asyncio.Future[Any]] = {}
        self._prompting: dict[str, _Queue] = {}
        self._pending: dict[str, set[asyncio.Future[None]]] = {}

    def state(self, session_id: str) -> SessionState:
        """The session's state (made on first use, of the connection's settled version); it is kept from now on."""
        self._others.pop(session_id, None)
        found = self.states.get(session_id)
        if found is None:
            found = self.states[session_id] = _module(self.conn).SessionState(session_id, strict=self.strict)
        return found

    def _state_for_update(self, session_id: str) -> SessionState | None:
        found = self.states.get(session_id)
        if found is not None:
            if session_id in self._others:  # the most recently updated goes last
                del self._others[session_id]
                self._others[session_id] = None
            return found
        if self.max_other_sessions <= 0:
            return None
        while len(self._others) >= self.max_other_sessions:
            oldest = next(iter(self._others))
            del self._others[oldest]
            del self.states[oldest]
        self._others[session_id] = None
        made: SessionState = _module(self.conn).SessionState(session_id, strict=self.strict)
        self.states[session_id] = made
        return made

    # -- what the agent calls ----------------------------------------------------

    async def session_update(self, params: Any) -> None:
        state = self._state_for_update(params.session_id)
        if state is None:
            return
        state.apply(params)
        waiter = self._idle.get(params.session_id)
        if (
            waiter is not None
            and not waiter.done()
            and not state.in_turn
            and getattr(params.update, "state", None) == "idle"
        ):
            waiter.set_result(params.update)
        if self.on_update is not None:
            await _maybe_await(self.on_update(state, params))

    async def session_request_permission(self, params: Any) -> Any:
        cancelled: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        pending = self._pending.setdefault(params.session_id, set())
        pending.add(cancelled)
        decision = asyncio.ensure_future(self._decide(params))
        try:
            await asyncio.wait({decision, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            pending.discard(cancelled)
            if not pending and self._pending.get(params.session_id) is pending:
                del self._pending[params.session_id]  # nothing kept per session id once answered
        if not decision.done():  # the turn was cancelled first: the protocol's answer is `cancelled`
            decision.cancel()
            return {"outcome": {"outcome": "cancelled"}}
        return decision.result()

    async def _decide(self, params: Any) -> Any:
        if self.permission is not None:
            choice = await _maybe_await(self.permission(params))
            if isinstance(choice, dict):
                return choice
            if choice is not None:
                return {"outcome": {"outcome": "selected", "optionId": choice}}
            return {"outcome": {"outcome": "cancelled"}}
        for option in params.options:
            if option.kind in ("reject_once", "reject_always"):
                return {"outcome": {"outcome": "selected", "optionId": option.option_id}}
        return {"outcome": {"outcome": "cancelled"}}

    # -- what the client calls ----------------------------------------------------

    async def new_session(self, cwd: str, mcp_servers: Sequence[Any] = (), **fields: Any) -> str:
        """``session/new``; the response's initial state (config options, commands, modes) goes into the state."""
        m = _module(self.conn)
        response = await self.conn.peer.session_new(
            m.NewSessionRequest(cwd=cwd, mcp_servers=list(mcp_servers), **fields)
        )
        self.state(response.session_id).apply_setup(response)
        return str(response.session_id)

    async def prompt(self, session_id: str, prompt: str | Sequence[Any], *, idle_timeout: float | None = None) -> Turn:
        """Send ``session/prompt`` (text or content blocks) and return when the turn has ended.

        v1: the response's stop reason. v2: the stop reason of the ``idle``
        state update that ends the turn (before or after the response); a v2
        agent that never sends one is waited for ``idle_timeout`` seconds
        after the response (forever when ``None``), then the turn counts as
        finished without a stop reason and the state reports ``turn.idle``
        (strict clients). When the connection ends before the turn does
        (the agent exited after acknowledging), it raises
        ``connection.ConnectionClosed``, as a pending request does.

        Prompts on one session go one at a time: a second call for the same
        session waits until the first turn has ended, then sends its prompt
        (each call returns its own turn's stop reason).
        """
        entry = self._prompting.get(session_id)
        if entry is None:
            entry = self._prompting[session_id] = _Queue(asyncio.Lock())
        entry.users += 1
        try:
            async with entry.lock:
                return await self._prompt(session_id, prompt, idle_timeout)
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._prompting[session_id]

    async def _prompt(self, session_id: str, prompt: str | Sequence[Any], idle_timeout: float | None) -> Turn:
        m = _module(self.conn)
        state = self.state(session_id)
        request = m.PromptRequest(session_id=session_id, prompt=_prompt_blocks(m, prompt))
        before = len(state.problems)
        state.begin_turn()
        if self.conn.version == "v1":
            response = await self.conn.peer.session_prompt(request)
            state.finish(response)  # v1: the turn ends with the response (end_turn)
            return Turn(response.stop_reason, response, state, state.problems[before:])
        waiter: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._idle[session_id] = waiter
        closed = asyncio.ensure_future(self.conn.wait_closed())
        try:
            response = await self.conn.peer.session_prompt(request)
            await asyncio.wait({waiter, closed}, timeout=idle_timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closed.cancel()
            if self._idle.get(session_id) is waiter:
                del self._idle[session_id]
        if not waiter.done():
            state.finish(response)
            if closed.done() and not closed.cancelled():
                from acp_types.connection import ConnectionClosed

                raise ConnectionClosed(f"the connection ended before the turn on session {session_id!r} did")
            return Turn(None, response, state, state.problems[before:], timed_out=True)
        idle = waiter.result()
        state.finish(response)
        return Turn(idle.stop_reason, response, state, state.problems[before:])

    async def cancel(self, session_id: str) -> None:
        """Send ``session/cancel`` and answer the session's pending permission requests ``cancelled``."""
        m = _module(self.conn)
        self.state(session_id).note_cancel()
        notification = m.CancelNotification if self.conn.version == "v1" else m.CancelSessionNotification
        await self.conn.peer.session_cancel(notification(session_id=session_id))
        for pending in list(self._pending.get(session_id, ())):
            if not pending.done():
                pending.set_result(None)

    async def replay(self, session_id: str, cwd: str, mcp_servers: Sequence[Any] = (), **fields: Any) -> Any:
        """Reopen a session with its whole history replayed into its state; returns the response.

        v1 sends ``session/load`` (the state's transcript starts afresh, as
        the history comes whole); v2 sends ``session/resume`` with
        ``replayFrom: {"type": "start"}`` (replayed messages are upserts).
        """
        m = _module(self.conn)
        state = self.state(session_id)
        state.begin_replay()
        try:
            if self.conn.version == "v1":
                request = m.LoadSessionRequest(session_id=session_id, cwd=cwd, mcp_servers=list(mcp_servers), **fields)
                response = await self.conn.peer.session_load(request)
            else:
                request = m.ResumeSessionRequest(
                    session_id=session_id,
                    cwd=cwd,
                    mcp_servers=list(mcp_servers),
                    replay_from={"type": "start"},
                    **fields,
                )
                response = await self.conn.peer.session_resume(request)
        finally:
            state.end_replay()
        state.apply_setup(response)
        return response


async def list_sessions(conn: Any, **params: Any) -> AsyncIterator[Any]:
    """Every ``SessionInfo`` ``session/list`` gives, page after page (``params``: ``cwd``, ``archived``...).

    A page without ``nextCursor`` (or with ``null``) is the last. Cursors
    are opaque: each is sent back exactly as it came, and only compared, to
    stop an agent that repeats one (:class:`CursorLoop`).
    """
    m = _module(conn)
    seen: set[str] = set()
    cursor = params.pop("cursor", None)
    while True:
        request = m.ListSessionsRequest(**params) if cursor is None else m.ListSessionsRequest(**params, cursor=cursor)
        response = await conn.peer.session_list(request)
        for info in response.sessions:
            yield info
        cursor = response.next_cursor
        if cursor is None:
            return
        if cursor in seen:
            raise CursorLoop(f"session/list gave the cursor {cursor!r} a second time")
        seen.add(cursor)
