"""Where an agent's sessions live between turns, connections and processes.

An :class:`acp_types.agent.App` keeps every session it serves in a
:class:`SessionStore`: one row per session (:class:`StoredSession`: its id,
``cwd``, title, ``updatedAt``, archive state, owner and a JSON snapshot of
what the agent keeps about it) and, per session, an append-only log of what
the client was shown (:class:`Event`: ``kind``, ``message_id``, JSON
``data``; the App owns that vocabulary, the store treats it as opaque).

Two stores ship with the base install, a third with an extra:

- :class:`SQLiteStore` (the standard library's ``sqlite3``): the default of
  ``agent.serve_stdio`` (:func:`default_store`). One file, in WAL mode, at
  :func:`default_path` (``$XDG_STATE_HOME`` or ``~/.local/state`` on Linux,
  ``~/Library/Application Support`` on macOS, ``%LOCALAPPDATA%`` on Windows,
  then a folder named after the app, then ``sessions.sqlite3``), or the path
  in ``$ACP_TYPES_STORE``, or the path given.
- :class:`MemoryStore`: dictionaries, gone with the process; for tests and
  for apps that keep their own history.
- ``acp_types.store_postgres.PostgresStore`` (``pip install
  'acp-types[postgres]'``, psycopg 3): one database shared by agent
  processes on several machines.

The guarantees, the same for each store (``tests/test_store.py`` runs one
set of contract tests against all three):

- ``append`` writes its batch in one transaction and returns once it is
  durable against the process being killed; the App calls it *before* it
  writes the updates to the client, so a replay never lacks what a client saw.
  (SQLite runs with ``synchronous=NORMAL``: a power cut may lose the last
  batches, never corrupt the file; pass ``synchronous="FULL"`` to pay for more.)
- ``events`` streams a session's log in pages: replaying 100,000 events
  holds a page in memory, not the log.
- ``list`` matches ``cwd`` exactly, pages by the key ``(created_at,
  session_id)`` (an index seek: one page costs the same among 100 or 100,000
  sessions), and its cursors are opaque, survive a restart, and stay valid
  when the session a cursor names is archived or deleted. A cursor that is
  not one of ours raises ``ValueError`` (the App answers -32602).
- ``claim`` / ``release`` mark a session as running in one process; a second
  live process gets :class:`SessionBusy` naming the holder. A holder that
  died (its pid gone on this host) is taken over.
- ``open`` refuses, with one :class:`StoreError` line, a store that is
  corrupt, locked past ``timeout``, read-only or of a newer format, and
  upgrades an older format in place, in one transaction.

Hand-written: the source is runtime/store.py, which the generator copies
into the package unchanged.
"""

from __future__ import annotations

import abc
import base64
import binascii
import bisect
import json
import os
import socket
import sqlite3
import sys
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "ENV_VAR",
    "Event",
    "MemoryStore",
    "SQLiteStore",
    "SessionBusy",
    "SessionStore",
    "StoreError",
    "StoredSession",
    "default_path",
    "default_store",
    "holder_token",
]

ENV_VAR = "ACP_TYPES_STORE"
"""The one environment variable: the path of the SQLite file :func:`default_store` opens."""

ArchivedFilter = Literal["exclude", "include", "only"]
NewEvent = tuple[str, "str | None", Mapping[str, Any]]
"""What ``append`` takes: ``(kind, message_id, data)``."""

_PAGE = 500  # rows read at a time by ``events``
_FIELDS = frozenset({"cwd", "additional_directories", "title", "updated_at", "archived", "owner", "state"})


class StoreError(Exception):
    """The store cannot be used: one line saying what is wrong and where."""


class SessionBusy(StoreError):
    """The session is running in another live process (named in the message)."""


@dataclass(frozen=True)
class StoredSession:
    """One session, version-neutral."""

    session_id: str
    cwd: str
    additional_directories: tuple[str, ...] = ()
    title: str | None = None
    updated_at: str | None = None
    archived: bool = False
    owner: str | None = None
    state: Mapping[str, Any] = field(default_factory=dict)
    created_at: float = 0.0


@dataclass(frozen=True)
class Event:
    """One thing the client was shown, in the order it was shown (``seq`` from 1 per session)."""

    seq: int
    kind: str
    message_id: str | None
    data: Mapping[str, Any]


def holder_token() -> str:
    """A claim holder naming this process: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _holder_alive(holder: str) -> bool:
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return True  # another machine's process: it holds until it releases
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _encode_cursor(created_at: float, session_id: str) -> str:
    raw = json.dumps([created_at, session_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[float, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, session_id = json.loads(raw)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise ValueError("not a cursor of this agent") from exc
    if not isinstance(created_at, (int, float)) or isinstance(created_at, bool) or not isinstance(session_id, str):
        raise ValueError("not a cursor of this agent")
    return float(created_at), session_id


def _check_fields(fields: Mapping[str, Any]) -> None:
    unknown = set(fields) - _FIELDS
    if unknown:
        raise TypeError(f"update() got fields a session does not have: {', '.join(sorted(unknown))}")


class SessionStore(abc.ABC):
    """Sessions and what their clients were shown; the module's docstring has the guarantees."""

    async def __aenter__(self) -> SessionStore:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @abc.abstractmethod
    async def open(self) -> None:
        """Create or upgrade the format; :class:`StoreError` if the store cannot be used."""

    @abc.abstractmethod
    async def close(self) -> None: ...

    @abc.abstractmethod
    async def create(self, session: StoredSession) -> StoredSession:
        """Add a session (``ValueError`` if its id is taken); returns it with ``created_at`` set."""

    @abc.abstractmethod
    async def get(self, session_id: str) -> StoredSession | None: ...

    @abc.abstractmethod
    async def update(self, session_id: str, **fields: Any) -> None:
        """Set some of ``cwd``, ``additional_directories``, ``title``, ``updated_at``, ``archived``, ``owner``, ``state``."""

    @abc.abstractmethod
    async def append(self, session_id: str, events: Sequence[NewEvent]) -> int:
        """Append ``(kind, message_id, data)`` items in one transaction; the ``seq`` of the last (0 for none)."""

    @abc.abstractmethod
    def events(self, session_id: str, after: int = 0) -> AsyncIterator[Event]:
        """The session's events with ``seq > after``, in order, read a page at a time."""

    @abc.abstractmethod
    async def find_message(self, session_id: str, message_id: str) -> int | None:
        """The ``seq`` of the first event of that message (v2 ``replayFrom`` is inclusive), or ``None``."""

    @abc.abstractmethod
    async def list(
        self,
        *,
        cwd: str | None,
        archived: ArchivedFilter,
        cursor: str | None,
        limit: int,
        owner: str | None = None,
    ) -> tuple[list[StoredSession], str | None]:
        """One page of sessions (``owner`` set: that owner's and unowned ones) and the next page's cursor."""

    @abc.abstractmethod
    async def delete(self, session_id: str) -> None: ...

    @abc.abstractmethod
    async def prune(self, *, max_sessions: int | None = None, max_age: float | None = None) -> int:
        """Delete sessions created more than ``max_age`` seconds ago, then the oldest beyond ``max_sessions``."""

    @abc.abstractmethod
    async def claim(self, session_id: str, holder: str) -> None:
        """Mark the session running in ``holder``'s process; :class:`SessionBusy` if a live other holder has it."""

    @abc.abstractmethod
    async def release(self, session_id: str, holder: str) -> None: ...


def _visible(s: StoredSession, cwd: str | None, archived: ArchivedFilter, owner: str | None) -> bool:
    if cwd is not None and s.cwd != cwd:
        return False
    if archived != "include" and s.archived != (archived == "only"):
        return False
    return owner is None or s.owner is None or s.owner == owner


class _Clock:
    """``time.time()``, strictly increasing within a process (two sessions never share a key)."""

    def __init__(self) -> None:
        self.last = 0.0

    def __call__(self) -> float:
        now = time.time()
        self.last = now if now > self.last else self.last + 1e-6
        return self.last


# -- in memory ------------------------------------------------------------------


class MemoryStore(SessionStore):
    """The contract in dictionaries; nothing survives the process."""

    def __init__(self) -> None:
        self._sessions: dict[str, StoredSession] = {}
        self._order: list[tuple[float, str]] = []  # sorted keys: a page is a bisect away
        self._events: dict[str, list[Event]] = {}
        self._holders: dict[str, str] = {}
        self._clock = _Clock()

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def create(self, session: StoredSession) -> StoredSession:
        if session.session_id in self._sessions:
            raise ValueError(f"session {session.session_id!r} exists")
        stored = replace(session, created_at=self._clock(), state=dict(session.state))
        self._sessions[stored.session_id] = stored
        bisect.insort(self._order, (stored.created_at, stored.session_id))
        self._events[stored.session_id] = []
        return stored

    async def get(self, session_id: str) -> StoredSession | None:
        return self._sessions.get(session_id)

    async def update(self, session_id: str, **fields: Any) -> None:
        _check_fields(fields)
        current = self._sessions.get(session_id)
        if current is None:
            return
        if "additional_directories" in fields:
            fields["additional_directories"] = tuple(fields["additional_directories"])
        if "state" in fields:
            fields["state"] = json.loads(json.dumps(fields["state"]))  # a copy, JSON only, as a file would keep
        self._sessions[session_id] = replace(current, **fields)

    async def append(self, session_id: str, events: Sequence[NewEvent]) -> int:
        log = self._events.get(session_id)
        if log is None:
            raise KeyError(session_id)
        new = [
            Event(len(log) + i + 1, kind, mid, json.loads(json.dumps(data)))
            for i, (kind, mid, data) in enumerate(events)
        ]
        log.extend(new)
        return len(log)

    async def events(self, session_id: str, after: int = 0) -> AsyncIterator[Event]:
        log = self._events.get(session_id, [])
        i = max(after, 0)
        while i < len(log):
            yield log[i]
            i += 1

    async def find_message(self, session_id: str, message_id: str) -> int | None:
        for event in self._events.get(session_id, []):
            if event.message_id == message_id:
                return event.seq
        return None

    async def list(
        self,
        *,
        cwd: str | None,
        archived: ArchivedFilter,
        cursor: str | None,
        limit: int,
        owner: str | None = None,
    ) -> tuple[list[StoredSession], str | None]:
        start = 0 if cursor is None else bisect.bisect_right(self._order, _decode_cursor(cursor))
        page: list[StoredSession] = []
        for i in range(start, len(self._order)):  # the filters decide how far it reads
            s = self._sessions[self._order[i][1]]
            if not _visible(s, cwd, archived, owner):
                continue
            if len(page) == limit:
                last = page[-1]
                return page, _encode_cursor(last.created_at, last.session_id)
            page.append(s)
        return page, None

    async def delete(self, session_id: str) -> None:
        s = self._sessions.pop(session_id, None)
        if s is not None:
            del self._order[bisect.bisect_left(self._order, (s.created_at, s.session_id))]
        self._events.pop(session_id, None)
        self._holders.pop(session_id, None)

    async def prune(self, *, max_sessions: int | None = None, max_age: float | None = None) -> int:
        doomed: list[str] = []
        if max_age is not None:
            cutoff = time.time() - max_age
            doomed += [sid for created, sid in self._order if created < cutoff]
        gone = set(doomed)
        keep = [k for k in self._order if k[1] not in gone]
        if max_sessions is not None and len(keep) > max_sessions:
            doomed += [sid for _, sid in keep[: len(keep) - max_sessions]]
        for sid in doomed:
            await self.delete(sid)
        return len(doomed)

    async def claim(self, session_id: str, holder: str) -> None:
        current = self._holders.get(session_id)
        if current is not None and current != holder and _holder_alive(current):
            raise SessionBusy(f"session {session_id!r} is running in another process ({current})")
        self._holders[session_id] = holder

    async def release(self, session_id: str, holder: str) -> None:
        if self._holders.get(session_id) == holder:
            del self._holders[session_id]


# -- SQLite -----------------------------------------------------------------------

FORMAT = 2
"""The newest SQLite format this module writes (``PRAGMA user_version``)."""

# Each step takes the file from format i to i + 1, in the transaction that opens it.
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE sessions (
            session_id TEXT PRIMARY KEY,
            cwd TEXT NOT NULL,
            additional_directories TEXT NOT NULL DEFAULT '[]',
            title TEXT,
            updated_at TEXT,
            archived INTEGER NOT NULL DEFAULT 0,
            owner TEXT,
            state TEXT NOT NULL DEFAULT '{}',
            created_at REAL NOT NULL
        )""",
        "CREATE INDEX sessions_by_key ON sessions (created_at, session_id)",
        """CREATE TABLE events (
            session_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL,
            message_id TEXT,
            data TEXT NOT NULL,
            PRIMARY KEY (session_id, seq)
        ) WITHOUT ROWID""",
    ),
    (
        "ALTER TABLE sessions ADD COLUMN holder TEXT",
        "CREATE INDEX sessions_by_cwd ON sessions (cwd, created_at, session_id)",
        "CREATE INDEX events_by_message ON events (session_id, message_id, seq)",
    ),
)
assert len(_MIGRATIONS) == FORMAT

_COLUMNS = "session_id, cwd, additional_directories, title, updated_at, archived, owner, state, created_at"


def default_path(app_name: str) -> Path:
    """Where :func:`default_store` keeps ``app_name``'s sessions (``$ACP_TYPES_STORE`` wins)."""
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override).expanduser()
    home = Path.home()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    else:
        base = Path(os.environ.get("XDG_STATE_HOME") or home / ".local" / "state")
    folder = "".join(c if c.isalnum() or c in "-_." else "_" for c in app_name).strip(".") or "acp-types-agent"
    return base / folder / "sessions.sqlite3"


def default_store(app_name: str) -> SessionStore:
    """The store ``agent.serve_stdio`` uses when given none: a :class:`SQLiteStore` at :func:`default_path`."""
    return SQLiteStore(None, app_name=app_name)


def _row(r: Sequence[Any]) -> StoredSession:
    return StoredSession(
        session_id=r[0],
        cwd=r[1],
        additional_directories=tuple(json.loads(r[2])),
        title=r[3],
        updated_at=r[4],
        archived=bool(r[5]),
        owner=r[6],
        state=json.loads(r[7]),
        created_at=r[8],
    )


# What the two SQL stores (this module's SQLiteStore, store_postgres.PostgresStore) share: the
# columns, how a session's fields are written and read, and the keyset query of a list page.
# ``mark`` is the driver's placeholder (``?`` or ``%s``).


def _sql_values(fields: Mapping[str, Any]) -> list[Any]:
    """A session's fields as column values: the directories and the state as JSON text."""
    encode = {"additional_directories": lambda v: json.dumps(list(v)), "state": lambda v: json.dumps(dict(v))}
    return [encode[k](v) if k in encode else bool(v) if k == "archived" else v for k, v in fields.items()]


def _insert_values(s: StoredSession) -> list[Any]:
    """The values of ``_COLUMNS`` for a new row."""
    fields = {name: getattr(s, name) for name in _COLUMNS.split(", ")}
    return _sql_values(fields)


def _list_query(
    table: str,
    mark: str,
    *,
    cwd: str | None,
    archived: ArchivedFilter,
    cursor: str | None,
    limit: int,
    owner: str | None,
) -> tuple[str, list[Any]]:
    """The query of one list page (one row more than ``limit``: is there a next page?) and its arguments."""
    where: list[str] = []
    args: list[Any] = []
    if cursor is not None:
        where.append(f"(created_at, session_id) > ({mark}, {mark})")
        args += _decode_cursor(cursor)
    if cwd is not None:
        where.append(f"cwd = {mark}")
        args.append(cwd)
    if archived != "include":
        where.append(f"archived = {mark}")
        args.append(archived == "only")
    if owner is not None:
        where.append(f"(owner IS NULL OR owner = {mark})")
        args.append(owner)
    sql = f"SELECT {_COLUMNS} FROM {table}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return sql + f" ORDER BY created_at, session_id LIMIT {mark}", [*args, limit + 1]


def _page(rows: Sequence[Sequence[Any]], limit: int) -> tuple[list[StoredSession], str | None]:
    page = [_row(r) for r in rows[:limit]]
    more = len(rows) > limit and page
    return page, _encode_cursor(page[-1].created_at, page[-1].session_id) if more else None


class SQLiteStore(SessionStore):
    """Sessions in one SQLite file (WAL); several processes may share it."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        app_name: str = "acp-types-agent",
        timeout: float = 5.0,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
    ) -> None:
        self.path = Path(path) if path is not None else default_path(app_name)
        self.timeout = timeout
        self.synchronous = synchronous
        self._db: sqlite3.Connection | None = None
        self._clock = _Clock()

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError(f"the session store {self.path} is not open (call open() first)")
        return self._db

    def _fail(self, exc: sqlite3.Error, doing: str) -> StoreError:
        text = str(exc)
        if "locked" in text or "busy" in text:
            why = f"locked by another process for more than {self.timeout:g} s"
        elif "readonly" in text or "read-only" in text:
            why = "read-only"
        elif "not a database" in text or "malformed" in text or "corrupt" in text:
            why = "not a session store, or corrupt"
        elif "unable to open" in text:
            why = "cannot be opened for writing (a missing folder, a read-only file or folder, or no permission)"
        else:
            why = text
        return StoreError(f"session store {self.path}: {why} (while {doing})")

    async def open(self) -> None:
        if self._db is not None:
            return
        try:
            if not self.path.parent.is_dir():
                self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"session store {self.path}: cannot make its folder ({exc.strerror})") from None
        try:
            db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise self._fail(exc, "opening") from None
        try:
            self._upgrade(db)
            db.execute(f"PRAGMA synchronous={self.synchronous}")
        except sqlite3.Error as exc:
            db.close()
            raise self._fail(exc, "opening") from None
        except StoreError:
            db.close()
            raise
        self._db = db

    def _upgrade(self, db: sqlite3.Connection) -> None:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version > FORMAT:
            raise StoreError(
                f"session store {self.path}: written by a newer acp-types (format {version}; this one reads up to {FORMAT})"
            )
        db.execute("PRAGMA journal_mode=WAL")
        # Writable and not locked past the timeout: found now, at start, not at the first update.
        db.execute("BEGIN IMMEDIATE")
        db.execute("ROLLBACK")
        if version == FORMAT:
            db.execute("SELECT count(*) FROM sessions").fetchone()  # a corrupt file fails here, not later
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]  # another process may have upgraded it
            for step in _MIGRATIONS[version:]:
                for statement in step:
                    db.execute(statement)
            db.execute(f"PRAGMA user_version={FORMAT}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    async def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def _write(self, doing: str, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                for sql, args in statements:
                    db.execute(sql, args)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except sqlite3.IntegrityError:
            raise
        except sqlite3.Error as exc:
            raise self._fail(exc, doing) from None

    def _read(self, doing: str, sql: str, args: Sequence[Any]) -> list[Any]:
        try:
            return self.db.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise self._fail(exc, doing) from None

    async def create(self, session: StoredSession) -> StoredSession:
        stored = replace(
            session, created_at=self._clock(), additional_directories=tuple(session.additional_directories)
        )
        try:
            self._write(
                "creating a session",
                [(f"INSERT INTO sessions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", _insert_values(stored))],
            )
        except sqlite3.IntegrityError:
            raise ValueError(f"session {session.session_id!r} exists") from None
        return replace(stored, state=json.loads(json.dumps(dict(stored.state))))

    async def get(self, session_id: str) -> StoredSession | None:
        rows = self._read("reading a session", f"SELECT {_COLUMNS} FROM sessions WHERE session_id = ?", (session_id,))
        return _row(rows[0]) if rows else None

    async def update(self, session_id: str, **fields: Any) -> None:
        _check_fields(fields)
        if not fields:
            return
        assignments = ", ".join(f"{name} = ?" for name in fields)
        self._write(
            "updating a session",
            [(f"UPDATE sessions SET {assignments} WHERE session_id = ?", (*_sql_values(fields), session_id))],
        )

    async def append(self, session_id: str, events: Sequence[NewEvent]) -> int:
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                last = db.execute("SELECT max(seq) FROM events WHERE session_id = ?", (session_id,)).fetchone()[0] or 0
                if not last and not db.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)).fetchone():
                    raise KeyError(session_id)
                db.executemany(
                    "INSERT INTO events (session_id, seq, kind, message_id, data) VALUES (?, ?, ?, ?, ?)",
                    [
                        (session_id, last + i + 1, kind, mid, json.dumps(dict(data), separators=(",", ":")))
                        for i, (kind, mid, data) in enumerate(events)
                    ],
                )
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._fail(exc, "appending events") from None
        return int(last) + len(events)

    async def events(self, session_id: str, after: int = 0) -> AsyncIterator[Event]:
        while True:
            rows = self._read(
                "reading events",
                "SELECT seq, kind, message_id, data FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (session_id, after, _PAGE),
            )
            for seq, kind, mid, data in rows:
                yield Event(seq, kind, mid, json.loads(data))
            if len(rows) < _PAGE:
                return
            after = rows[-1][0]

    async def find_message(self, session_id: str, message_id: str) -> int | None:
        rows = self._read(
            "finding a message",
            "SELECT min(seq) FROM events WHERE session_id = ? AND message_id = ?",
            (session_id, message_id),
        )
        return rows[0][0] if rows and rows[0][0] is not None else None

    async def list(
        self,
        *,
        cwd: str | None,
        archived: ArchivedFilter,
        cursor: str | None,
        limit: int,
        owner: str | None = None,
    ) -> tuple[list[StoredSession], str | None]:
        sql, args = _list_query("sessions", "?", cwd=cwd, archived=archived, cursor=cursor, limit=limit, owner=owner)
        return _page(self._read("listing sessions", sql, args), limit)

    async def delete(self, session_id: str) -> None:
        self._write(
            "deleting a session",
            [
                ("DELETE FROM events WHERE session_id = ?", (session_id,)),
                ("DELETE FROM sessions WHERE session_id = ?", (session_id,)),
            ],
        )

    async def prune(self, *, max_sessions: int | None = None, max_age: float | None = None) -> int:
        doomed: list[str] = []
        if max_age is not None:
            rows = self._read(
                "pruning", "SELECT session_id FROM sessions WHERE created_at < ?", (time.time() - max_age,)
            )
            doomed += [r[0] for r in rows]
        if max_sessions is not None:
            rows = self._read(
                "pruning",
                "SELECT session_id FROM sessions ORDER BY created_at DESC, session_id DESC LIMIT -1 OFFSET ?",
                (max_sessions,),
            )
            gone = set(doomed)
            doomed += [r[0] for r in rows if r[0] not in gone]
        for sid in doomed:
            await self.delete(sid)
        return len(doomed)

    async def claim(self, session_id: str, holder: str) -> None:
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute("SELECT holder FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
                current = row[0] if row else None
                if current is not None and current != holder and _holder_alive(current):
                    raise SessionBusy(f"session {session_id!r} is running in another process ({current})")
                db.execute("UPDATE sessions SET holder = ? WHERE session_id = ?", (holder, session_id))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._fail(exc, "claiming a session") from None

    async def release(self, session_id: str, holder: str) -> None:
        self._write(
            "releasing a session",
            [("UPDATE sessions SET holder = NULL WHERE session_id = ? AND holder = ?", (session_id, holder))],
        )
