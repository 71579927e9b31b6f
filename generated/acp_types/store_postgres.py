"""A session store in PostgreSQL, shared by agent processes on several machines.

``pip install 'acp-types[postgres]'`` (psycopg 3). ``PostgresStore(dsn)``
keeps the contract of :mod:`acp_types.store` (its docstring has the
guarantees); the differences are where the data lives and how a session is
claimed: a claim is a session-level advisory lock on the store's connection,
so it ends when the process holding it ends, on whatever machine it ran.

Hand-written: the source is runtime/store_postgres.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

from .store import (
    _COLUMNS,
    ArchivedFilter,
    Event,
    NewEvent,
    SessionBusy,
    SessionStore,
    StoredSession,
    StoreError,
    _check_fields,
    _Clock,
    _insert_values,
    _list_query,
    _page,
    _row,
    _sql_values,
)

try:
    import psycopg
except ImportError as exc:  # pragma: no cover - exercised by tests/test_store.py in a bare environment
    raise ImportError("acp_types.store_postgres needs psycopg 3: pip install 'acp-types[postgres]'") from exc

__all__ = ["FORMAT", "PostgresStore"]

FORMAT = 1
_PAGE = 500
_LOCK = 0x41435054  # the advisory lock key that serialises format upgrades ("ACPT")

_SCHEMA = (
    """CREATE TABLE acp_sessions (
        session_id TEXT PRIMARY KEY,
        cwd TEXT NOT NULL,
        additional_directories TEXT NOT NULL DEFAULT '[]',
        title TEXT,
        updated_at TEXT,
        archived BOOLEAN NOT NULL DEFAULT FALSE,
        owner TEXT,
        state TEXT NOT NULL DEFAULT '{}',
        created_at DOUBLE PRECISION NOT NULL,
        holder TEXT
    )""",
    "CREATE INDEX acp_sessions_by_key ON acp_sessions (created_at, session_id)",
    "CREATE INDEX acp_sessions_by_cwd ON acp_sessions (cwd, created_at, session_id)",
    """CREATE TABLE acp_events (
        session_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        kind TEXT NOT NULL,
        message_id TEXT,
        data TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    )""",
    "CREATE INDEX acp_events_by_message ON acp_events (session_id, message_id, seq)",
)


class PostgresStore(SessionStore):
    """Sessions in PostgreSQL tables ``acp_sessions`` and ``acp_events`` (made on first open)."""

    def __init__(self, dsn: str, *, timeout: float = 10.0) -> None:
        self.dsn = dsn
        self.timeout = timeout
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._lock = asyncio.Lock()
        self._claims: dict[str, str] = {}
        self._clock = _Clock()

    def __repr__(self) -> str:
        return "PostgresStore(...)"  # the DSN may carry a password

    @property
    def conn(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is None:
            raise StoreError("the PostgreSQL session store is not open (call open() first)")
        return self._conn

    async def open(self) -> None:
        if self._conn is not None:
            return
        try:
            conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True, connect_timeout=int(self.timeout))
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL session store: cannot connect ({_first_line(exc)})") from None
        try:
            async with conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
                await conn.execute("CREATE TABLE IF NOT EXISTS acp_store_format (format INTEGER NOT NULL)")
                row = await (await conn.execute("SELECT format FROM acp_store_format")).fetchone()
                version = row[0] if row else 0
                if version > FORMAT:
                    raise StoreError(
                        f"PostgreSQL session store: written by a newer acp-types (format {version}; "
                        f"this one reads up to {FORMAT})"
                    )
                if version < 1:
                    for statement in _SCHEMA:
                        await conn.execute(statement)
                    await conn.execute("DELETE FROM acp_store_format")
                    await conn.execute("INSERT INTO acp_store_format VALUES (%s)", (FORMAT,))
        except psycopg.Error as exc:
            await conn.close()
            raise StoreError(f"PostgreSQL session store: cannot prepare its tables ({_first_line(exc)})") from None
        except BaseException:
            await conn.close()
            raise
        self._conn = conn

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()  # ends this process's claims with it
            self._conn = None
            self._claims.clear()

    async def _fetch(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        async with self._lock:
            try:
                cur = await self.conn.execute(sql, args)
                return await cur.fetchall()
            except psycopg.Error as exc:
                raise StoreError(f"PostgreSQL session store: {_first_line(exc)}") from None

    async def _exec(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        async with self._lock:
            try:
                async with self.conn.transaction():
                    for sql, args in statements:
                        await self.conn.execute(sql, args)
            except psycopg.errors.UniqueViolation:
                raise
            except psycopg.Error as exc:
                raise StoreError(f"PostgreSQL session store: {_first_line(exc)}") from None

    async def create(self, session: StoredSession) -> StoredSession:
        created = self._clock()
        try:
            await self._exec(
                [
                    (
                        f"INSERT INTO acp_sessions ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                        _insert_values(replace(session, created_at=created)),
                    )
                ]
            )
        except psycopg.errors.UniqueViolation:
            raise ValueError(f"session {session.session_id!r} exists") from None
        stored = await self.get(session.session_id)
        assert stored is not None
        return stored

    async def get(self, session_id: str) -> StoredSession | None:
        rows = await self._fetch(f"SELECT {_COLUMNS} FROM acp_sessions WHERE session_id = %s", (session_id,))
        return _row(rows[0]) if rows else None

    async def update(self, session_id: str, **fields: Any) -> None:
        _check_fields(fields)
        if not fields:
            return
        assignments = ", ".join(f"{name} = %s" for name in fields)
        await self._exec(
            [(f"UPDATE acp_sessions SET {assignments} WHERE session_id = %s", (*_sql_values(fields), session_id))]
        )

    async def append(self, session_id: str, events: Sequence[NewEvent]) -> int:
        async with self._lock:
            conn = self.conn
            try:
                async with conn.transaction():
                    found = await (
                        await conn.execute("SELECT 1 FROM acp_sessions WHERE session_id = %s FOR UPDATE", (session_id,))
                    ).fetchone()
                    if found is None:
                        raise KeyError(session_id)
                    row = await (
                        await conn.execute("SELECT max(seq) FROM acp_events WHERE session_id = %s", (session_id,))
                    ).fetchone()
                    last = int(row[0] or 0) if row else 0
                    async with conn.cursor() as cur:
                        await cur.executemany(
                            "INSERT INTO acp_events (session_id, seq, kind, message_id, data) VALUES (%s, %s, %s, %s, %s)",
                            [
                                (session_id, last + i + 1, kind, mid, json.dumps(dict(data), separators=(",", ":")))
                                for i, (kind, mid, data) in enumerate(events)
                            ],
                        )
            except psycopg.Error as exc:
                raise StoreError(f"PostgreSQL session store: {_first_line(exc)}") from None
        return last + len(events)

    async def events(self, session_id: str, after: int = 0) -> AsyncIterator[Event]:
        while True:
            rows = await self._fetch(
                "SELECT seq, kind, message_id, data FROM acp_events WHERE session_id = %s AND seq > %s "
                "ORDER BY seq LIMIT %s",
                (session_id, after, _PAGE),
            )
            for seq, kind, mid, data in rows:
                yield Event(int(seq), kind, mid, json.loads(data))
            if len(rows) < _PAGE:
                return
            after = rows[-1][0]

    async def find_message(self, session_id: str, message_id: str) -> int | None:
        rows = await self._fetch(
            "SELECT min(seq) FROM acp_events WHERE session_id = %s AND message_id = %s", (session_id, message_id)
        )
        return int(rows[0][0]) if rows and rows[0][0] is not None else None

    async def list(
        self,
        *,
        cwd: str | None,
        archived: ArchivedFilter,
        cursor: str | None,
        limit: int,
        owner: str | None = None,
    ) -> tuple[list[StoredSession], str | None]:
        sql, args = _list_query(
            "acp_sessions", "%s", cwd=cwd, archived=archived, cursor=cursor, limit=limit, owner=owner
        )
        return _page(await self._fetch(sql, args), limit)

    async def delete(self, session_id: str) -> None:
        await self._exec(
            [
                ("DELETE FROM acp_events WHERE session_id = %s", (session_id,)),
                ("DELETE FROM acp_sessions WHERE session_id = %s", (session_id,)),
            ]
        )

    async def prune(self, *, max_sessions: int | None = None, max_age: float | None = None) -> int:
        doomed: list[str] = []
        if max_age is not None:
            cutoff = self._clock() - max_age
            doomed += [
                r[0] for r in await self._fetch("SELECT session_id FROM acp_sessions WHERE created_at < %s", (cutoff,))
            ]
        if max_sessions is not None:
            rows = await self._fetch(
                "SELECT session_id FROM acp_sessions ORDER BY created_at DESC, session_id DESC OFFSET %s",
                (max_sessions,),
            )
            gone = set(doomed)
            doomed += [r[0] for r in rows if r[0] not in gone]
        for sid in doomed:
            await self.delete(sid)
        return len(doomed)

    async def claim(self, session_id: str, holder: str) -> None:
        mine = self._claims.get(session_id)
        if mine == holder:
            return
        if mine is not None:
            raise SessionBusy(f"session {session_id!r} is running in another process ({mine})")
        rows = await self._fetch("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (session_id,))
        if not rows[0][0]:
            current = await self._fetch("SELECT holder FROM acp_sessions WHERE session_id = %s", (session_id,))
            named = current[0][0] if current and current[0][0] else "another connection"
            raise SessionBusy(f"session {session_id!r} is running in another process ({named})")
        self._claims[session_id] = holder
        await self._exec([("UPDATE acp_sessions SET holder = %s WHERE session_id = %s", (holder, session_id))])

    async def release(self, session_id: str, holder: str) -> None:
        if self._claims.get(session_id) != holder:
            return
        del self._claims[session_id]
        await self._fetch("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (session_id,))
        await self._exec(
            [("UPDATE acp_sessions SET holder = NULL WHERE session_id = %s AND holder = %s", (session_id, holder))]
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
