"""The session store's contract, run against every store (memory, SQLite, PostgreSQL), and SQLite's own promises."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _postgres import postgres_dsn

from acp_types import store as st


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A factory of open stores of one kind; each call opens another handle on the same data (SQLite, PostgreSQL)."""
    kind = request.param
    if kind == "memory":
        shared = st.MemoryStore()
        yield lambda: shared
    elif kind == "sqlite":
        yield lambda: st.SQLiteStore(tmp_path / "s.sqlite3")
    else:
        dsn = postgres_dsn(request)
        from acp_types.store_postgres import PostgresStore

        yield lambda: PostgresStore(dsn)


async def opened(make: Any) -> st.SessionStore:
    store = make()
    await store.open()
    return store


def new(sid: str, cwd: str = "/w", **kw: Any) -> st.StoredSession:
    return st.StoredSession(session_id=sid, cwd=cwd, **kw)


async def walk(store: st.SessionStore, **query: Any) -> list[str]:
    seen: list[str] = []
    cursor = None
    while True:
        page, cursor = await store.list(cursor=cursor, **query)
        seen += [s.session_id for s in page]
        if cursor is None:
            return seen


def test_a_session_is_kept_as_written(make_store: Any) -> None:
    async def go() -> None:
        store = await opened(make_store)
        made = await store.create(new("s1", "/w", additional_directories=("/x",), title="t", state={"mode": "ask"}))
        assert made.created_at > 0
        await store.update("s1", title="renamed", archived=True, updated_at="2026-12-05T10:00:00Z", state={"k": [1]})
        got = await store.get("s1")
        assert got is not None
        assert (got.cwd, got.additional_directories, got.title, got.archived) == ("/w", ("/x",), "renamed", True)
        assert (got.updated_at, dict(got.state), got.created_at) == (
            "2026-12-05T10:00:00Z",
            {"k": [1]},
            made.created_at,
        )
        assert await store.get("nope") is None
        with pytest.raises(ValueError):
            await store.create(new("s1"))
        with pytest.raises(TypeError):
            await store.update("s1", colour="red")
        await store.close()

    run(go())


def test_events_come_back_in_order_from_any_point(make_store: Any) -> None:
    async def go() -> None:
        store = await opened(make_store)
        await store.create(new("s1"))
        await store.create(new("s2"))
        assert await store.append("s1", [("user", "m1", {"text": "hi"}), ("agent", "m2", {"text": "a"})]) == 2
        assert await store.append("s2", [("user", "x", {})]) == 1
        assert await store.append("s1", [("agent", "m2", {"text": "b"}), ("plan", None, {"entries": []})]) == 4
        events = [e async for e in store.events("s1")]
        assert [(e.seq, e.kind, e.message_id, dict(e.data)) for e in events] == [
            (1, "user", "m1", {"text": "hi"}),
            (2, "agent", "m2", {"text": "a"}),
            (3, "agent", "m2", {"text": "b"}),
            (4, "plan", None, {"entries": []}),
        ]
        assert [e.seq async for e in store.events("s1", after=2)] == [3, 4]
        assert await store.find_message("s1", "m2") == 2
        assert await store.find_message("s1", "x") is None
        await store.close()

    run(go())


def test_cwd_is_matched_exactly_and_archived_filters(make_store: Any) -> None:
    async def go() -> None:
        store = await opened(make_store)
        for sid, cwd in [("a", "/a"), ("ab", "/ab"), ("a_b", "/a/b"), ("a2", "/a")]:
            await store.create(new(sid, cwd))
        await store.update("a2", archived=True)
        assert await walk(store, cwd="/a", archived="exclude", limit=10) == ["a"]
        assert await walk(store, cwd="/a", archived="only", limit=10) == ["a2"]
        assert await walk(store, cwd="/a", archived="include", limit=10) == ["a", "a2"]
        assert await walk(store, cwd=None, archived="exclude", limit=10) == ["a", "ab", "a_b"]
        await store.close()

    run(go())


def test_pages_cover_every_session_once_and_cursors_survive_archive_and_delete(make_store: Any) -> None:
    async def go() -> None:
        store = await opened(make_store)
        ids = [f"s{i:03}" for i in range(23)]
        for sid in ids:
            await store.create(new(sid))
        assert await walk(store, cwd=None, archived="exclude", limit=5) == ids
        page, cursor = await store.list(cwd=None, archived="exclude", cursor=None, limit=5)
        assert cursor is not None and page[-1].session_id == "s004"
        await store.update("s004", archived=True)  # the session the cursor names leaves the listing
        await store.delete("s003")
        rest, _ = await store.list(cwd=None, archived="exclude", cursor=cursor, limit=100)
        assert [s.session_id for s in rest] == ids[5:]
        for bad in ["nonsense!", "", "W1tdXQ", "WyJ4IiwxXQ"]:
            with pytest.raises(ValueError):
                await store.list(cwd=None, archived="exclude", cursor=bad, limit=5)
        last, cursor = await store.list(cwd=None, archived="exclude", cursor=None, limit=100)
        assert cursor is None and len(last) == 21
        await store.close()

    run(go())


def test_owner_sees_its_own_and_unowned_sessions(make_store: Any) -> None:
    async def go() -> None:
        store = await opened(make_store)
        await store.create(new("mine", owner="alice"))
        await store.create(new("theirs", owner="bob"))
        await store.create(new("anyone"))
        assert await walk(store, cwd=None, archived="exclude", limit=10, owner="alice") == ["mine", "anyone"]
        assert await walk(store, cwd=None, archived="exclude", limit=10) == ["mine", "theirs", "anyone"]
        await store.close()

    run(go())


def test_prune_by_age_and_count(make_store: Any) -> None:
    async def go() -> None:
        store = await opened(make_store)
        for i in range(6):
            await store.create(new(f"s{i}"))
            await store.append(f"s{i}", [("user", None, {})])
        assert await store.prune(max_sessions=4) == 2
        assert await walk(store, cwd=None, archived="include", limit=10) == ["s2", "s3", "s4", "s5"]
        assert [e async for e in store.events("s0")] == []
        assert await store.prune(max_age=3600) == 0
        time.sleep(0.05)
        assert await store.prune(max_age=0.01) == 4
        assert await walk(store, cwd=None, archived="include", limit=10) == []
        await store.close()

    run(go())


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_live_holder_keeps_its_session_and_a_dead_one_is_taken_over(make_store: Any) -> None:
    async def go() -> None:
        first, second = await opened(make_store), await opened(make_store)
        await first.create(new("s1"))
        await first.create(new("s2"))
        me, other = st.holder_token(), st.holder_token()
        await first.claim("s1", me)
        await first.claim("s1", me)  # again: still mine
        with pytest.raises(st.SessionBusy, match="s1"):
            await second.claim("s1", other)
        await first.release("s1", me)
        await second.claim("s1", other)
        if isinstance(first, (st.MemoryStore, st.SQLiteStore)):
            host = st.holder_token().split(":")[0]
            await first.claim("s2", f"{host}:{_dead_pid()}:dead")
            await second.claim("s2", other)  # the dead process's claim is taken over
        else:  # PostgreSQL: a claim is the connection's advisory lock, gone when its process is
            await first.claim("s2", me)
            with pytest.raises(st.SessionBusy):
                await second.claim("s2", other)
            await first.close()
            await second.claim("s2", other)
        await first.close()
        await second.close()

    run(go())


# -- SQLite's own promises ----------------------------------------------------------


def test_sqlite_keeps_sessions_and_cursors_across_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"

    async def first() -> str:
        async with st.SQLiteStore(path) as store:
            for i in range(5):
                await store.create(new(f"s{i}"))
            await store.append("s1", [("user", "m", {"text": "kept"})])
            _, cursor = await store.list(cwd=None, archived="exclude", cursor=None, limit=2)
            assert cursor is not None
            return cursor

    cursor = run(first())

    async def second() -> None:
        async with st.SQLiteStore(path) as store:
            page, _ = await store.list(cwd=None, archived="exclude", cursor=cursor, limit=10)
            assert [s.session_id for s in page] == ["s2", "s3", "s4"]
            assert [dict(e.data) async for e in store.events("s1")] == [{"text": "kept"}]

    run(second())


def test_two_sqlite_handles_see_each_others_sessions(tmp_path: Path) -> None:
    async def go() -> None:
        a, b = st.SQLiteStore(tmp_path / "s.sqlite3"), st.SQLiteStore(tmp_path / "s.sqlite3")
        await a.open()
        await b.open()
        await a.create(new("from-a"))
        await b.create(new("from-b"))
        assert await walk(a, cwd=None, archived="exclude", limit=10) == ["from-a", "from-b"]
        assert await walk(b, cwd=None, archived="exclude", limit=10) == ["from-a", "from-b"]
        await a.close()
        await b.close()

    run(go())


def open_error(path: Path, **kw: Any) -> str:
    with pytest.raises(st.StoreError) as info:
        run(st.SQLiteStore(path, **kw).open())
    text = str(info.value)
    assert "\n" not in text and str(path) in text
    return text


def test_a_file_that_is_not_a_store_is_one_clear_line(tmp_path: Path) -> None:
    bad = tmp_path / "s.sqlite3"
    bad.write_bytes(b"this is not a database, just some text\n" * 100)
    assert "not a session store, or corrupt" in open_error(bad)
    assert bad.read_bytes().startswith(b"this is not a database")  # left as it was


def test_a_newer_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={st.FORMAT + 1}")
    db.close()
    assert f"format {st.FORMAT + 1}" in open_error(path)


def test_a_store_locked_past_the_timeout_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    run(st.SQLiteStore(path).open())
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        assert "locked by another process for more than 0.2 s" in open_error(path, timeout=0.2)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_read_only_store_is_refused_at_start() -> None:
    folder = Path(tempfile.mkdtemp(prefix="acp-types-ro-"))  # not under pytest's root-only folder
    path = folder / "s.sqlite3"

    async def make() -> None:
        async with st.SQLiteStore(path) as store:
            await store.create(new("s1"))

    run(make())
    os.chmod(path, 0o444)
    os.chmod(folder, 0o555)
    try:
        # root ignores file modes: open it as nobody, in a child
        code = textwrap.dedent(
            f"""
            import asyncio, os, sys
            from acp_types import store  # imported first: nobody cannot read root's interpreter
            if os.geteuid() == 0:
                os.setgid(65534); os.setuid(65534)
            try:
                asyncio.run(store.SQLiteStore({str(path)!r}).open())
            except store.StoreError as exc:
                print(exc); sys.exit(2)
            """
        )
        env = {**os.environ, "PYTHONPATH": str(Path(st.__file__).parents[1])}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(folder)
    assert out.returncode == 2, out.stderr
    assert "read-only" in out.stdout, out.stdout
    assert "Traceback" not in out.stderr


def test_an_older_format_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    for statement in st._MIGRATIONS[0]:
        db.execute(statement)
    db.execute("INSERT INTO sessions (session_id, cwd, created_at) VALUES ('old', '/w', 1.0)")
    db.execute("PRAGMA user_version=1")
    db.close()

    async def go() -> None:
        async with st.SQLiteStore(path) as store:
            old = await store.get("old")
            assert old is not None and old.cwd == "/w"
            await store.claim("old", st.holder_token())  # the column format 2 added

    run(go())
    assert sqlite3.connect(path).execute("PRAGMA user_version").fetchone()[0] == st.FORMAT


def test_a_list_page_is_an_index_seek_not_a_scan(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    run(st.SQLiteStore(path).open())
    db = sqlite3.connect(path)
    queries = {  # the queries the store runs for a page after a cursor, without and with a cwd
        name: st._list_query(
            "sessions", "?", cwd=cwd, archived="exclude", cursor=st._encode_cursor(0.0, ""), limit=50, owner=None
        )
        for name, cwd in (("all", None), ("cwd", "/w"))
    }
    for name, (sql, args) in queries.items():
        plan = " ".join(row[-1] for row in db.execute("EXPLAIN QUERY PLAN " + sql, args))
        assert "USING INDEX" in plan and "TEMP B-TREE" not in plan, (name, plan)


def test_replaying_a_long_log_holds_a_page_not_the_log(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"

    async def fill(n: int) -> None:
        async with st.SQLiteStore(path) as store:
            if await store.get("s") is None:
                await store.create(new("s"))
            await store.append("s", [("agent", "m", {"text": "x" * 100})] * n)

    async def peak() -> int:
        async with st.SQLiteStore(path) as store:
            tracemalloc.start()
            count = 0
            async for _ in store.events("s"):
                count += 1
            _, top = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            return top

    run(fill(2_000))
    small = run(peak())
    run(fill(18_000))
    large = run(peak())
    assert large < small * 2, (small, large)  # 10x the events, about the same memory


KILLED_WRITER = """
import asyncio, sys
from acp_types import store
async def main():
    async with store.SQLiteStore(sys.argv[1]) as s:
        await s.create(store.StoredSession("s", "/w"))
        print("ready", flush=True)
        while True:
            await s.append("s", [("agent", "m", {"text": "y" * 50})] * 100)
asyncio.run(main())
"""


@pytest.mark.slow
def test_a_killed_writer_leaves_whole_batches_and_a_file_that_opens(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    env = {**os.environ, "PYTHONPATH": str(Path(st.__file__).parents[1])}
    for _ in range(3):
        path.unlink(missing_ok=True)
        proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(path)], stdout=subprocess.PIPE, env=env)
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        time.sleep(0.3)
        proc.send_signal(signal.SIGKILL)
        proc.wait()

        async def check() -> None:
            async with st.SQLiteStore(path) as store:
                seqs = [e.seq async for e in store.events("s")]
                assert seqs and len(seqs) % 100 == 0 and seqs == list(range(1, len(seqs) + 1))

        run(check())
        assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_the_default_path_follows_the_platform_and_one_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(st.ENV_VAR, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert st.default_path("my agent/1") == tmp_path / "state" / "my_agent_1" / "sessions.sqlite3"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert st.default_path("a") == Path.home() / ".local" / "state" / "a" / "sessions.sqlite3"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert st.default_path("a") == Path.home() / "Library" / "Application Support" / "a" / "sessions.sqlite3"
    monkeypatch.setenv(st.ENV_VAR, str(tmp_path / "x.db"))
    assert st.default_path("a") == tmp_path / "x.db"
    store = st.default_store("a")
    assert isinstance(store, st.SQLiteStore) and store.path == tmp_path / "x.db"
