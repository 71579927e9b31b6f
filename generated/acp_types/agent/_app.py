"""The app: the agent's logic, once for both versions, and the hooks the library calls.

Subclass :class:`App` and override what you support; :mod:`._surface` answers the client's
methods from it, in the connection's version.

Hand-written: the source is runtime/agent/_app.py, copied into the package unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from .._errors import RequestError
from ..store import SessionStore, default_store, holder_token
from ._session import Replay, Session, Turn, speaker_for
from ._values import (
    INVALID_PARAMS,
    ArchivedFilter,
    AuthMethod,
    ConfigOption,
    ListQuery,
    Page,
    SessionInfo,
    Setup,
    StopReason,
)

if TYPE_CHECKING:
    from ..connection import AgentConnection
    from ._surface import _Surface


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
        return speaker_for(version).capabilities(
            listing=self.listing, archive=self.archive, auth=bool(self.auth_methods)
        )

    # -- what the connection calls (one object per connection) -------------

    def handler(self, conn: AgentConnection) -> _Surface:
        from ._surface import _Surface  # the one module that comes after this one: it answers for the app

        return _Surface(self, conn)
