"""The session store behind ``acp_types.agent.App`` (issue 30): what keeping sessions costs.

Three figures, each the median of repeated runs, the App and a raw client in one event loop over
two ``os.pipe()`` pairs (every message crosses the kernel):

- a turn of 10,000 ``agent_message_chunk`` updates streamed by an App on a :class:`SQLiteStore` (a
  file in a temporary folder, WAL, ``synchronous=NORMAL``), as chunks per second, against the same
  App on a :class:`MemoryStore` measured in the same run (target: at least 0.8x);
- replaying a session of 10,000 updates (``session/load`` from request to answer, a fresh App on the
  same file: a restart), against the time the turn that made them took (target: under 0.5 s);
- one ``session/list`` page at a cursor deep among 100,000 sessions of a SQLite store, against the
  same page among 1,000 (target: under 10 ms, and about the same as the baseline: an index seek).

``python -m benchmarks.store`` prints them; ``make bench`` runs them as the ``store`` group.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

CHUNKS = 10_000
SESSIONS = 100_000


async def _pipe() -> tuple[Any, Any]:
    from acp_types import connection

    r_fd, w_fd = os.pipe()
    return await connection.pipe_streams(os.fdopen(r_fd, "rb", 0), os.fdopen(w_fd, "wb", 0))


class _Client:
    """A raw v1 client: requests out, answers and update counts in."""

    def __init__(self) -> None:
        self.updates = 0
        self.answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.next_id = 1

    async def open(self, app: Any) -> _Client:
        from acp_types import agent

        (a_in, self.out), (self.inp, a_out) = await _pipe(), await _pipe()
        self.server = asyncio.ensure_future(agent.serve(app, a_in, a_out, principal="bench"))
        self.reader = asyncio.ensure_future(self._read())
        await self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        return self

    async def _read(self) -> None:
        while line := await self.inp.readline():
            if b'"session/update"' in line:
                self.updates += 1
                continue
            msg = json.loads(line)
            if msg.get("id") in self.answers:
                self.answers.pop(msg["id"]).set_result(msg)

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid, self.next_id = self.next_id, self.next_id + 1
        self.answers[rid] = asyncio.get_running_loop().create_future()
        self.out.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n")
        return await self.answers[rid]

    async def close(self) -> None:
        self.out.close()
        await self.server
        self.reader.cancel()


def _streamer(store: Any) -> Any:
    from acp_types import agent

    class Streamer(agent.App):
        name = "bench"

        async def prompt(self, turn: agent.Turn) -> agent.StopReason:
            for i in range(CHUNKS):
                await turn.text(f"chunk {i} ")
            return "end_turn"

    return Streamer(store=store)


async def _turn(store: Any) -> tuple[float, str]:
    """Seconds to stream one turn of CHUNKS chunks, and the session's id."""
    client = await _Client().open(_streamer(store))
    sid = (await client.call("session/new", {"cwd": "/bench", "mcpServers": []}))["result"]["sessionId"]
    start = time.perf_counter()
    answer = await client.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]})
    spent = time.perf_counter() - start
    assert answer["result"]["stopReason"] == "end_turn" and client.updates == CHUNKS, (answer, client.updates)
    await client.close()
    return spent, sid


async def _replay(store: Any, sid: str) -> float:
    client = await _Client().open(_streamer(store))
    start = time.perf_counter()
    answer = await client.call("session/load", {"sessionId": sid, "cwd": "/bench", "mcpServers": []})
    spent = time.perf_counter() - start
    assert "result" in answer and client.updates >= 1, answer
    await client.close()
    return spent


def streaming(repeats: int) -> tuple[float, float, float]:
    """(SQLite chunks/s, memory chunks/s, replay seconds), medians, interleaved."""
    from acp_types.store import MemoryStore, SQLiteStore

    sqlite, memory, replay = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "sessions.sqlite3"
            spent, sid = asyncio.run(_turn(SQLiteStore(path)))
            sqlite.append(CHUNKS / spent)
            memory.append(CHUNKS / asyncio.run(_turn(MemoryStore()))[0])
            replay.append(asyncio.run(_replay(SQLiteStore(path), sid)))
    return statistics.median(sqlite), statistics.median(memory), statistics.median(replay)


def list_page(total: int, repeats: int = 50) -> float:
    """Seconds for one ``list`` page at a cursor 100 sessions from the end, among ``total`` sessions."""
    from acp_types.store import FORMAT, SQLiteStore

    async def main(path: Path) -> float:
        store = SQLiteStore(path)
        await store.open()
        db = store.db
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO sessions (session_id, cwd, created_at) VALUES (?, ?, ?)",
            ((f"s{i:07}", "/w", float(i + 1)) for i in range(total)),
        )
        db.execute("COMMIT")
        assert db.execute("PRAGMA user_version").fetchone()[0] == FORMAT
        cursor = None
        # the cursor of the page before the last 100: walk there once
        from acp_types.store import _encode_cursor

        cursor = _encode_cursor(float(total - 100), f"s{total - 101:07}")
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            rows, _ = await store.list(cwd="/w", archived="exclude", cursor=cursor, limit=50)
            best = min(best, time.perf_counter() - start)
        assert rows[0].session_id == f"s{total - 100:07}", rows[0]
        await store.close()
        return best

    with tempfile.TemporaryDirectory() as folder:
        return asyncio.run(main(Path(folder) / "sessions.sqlite3"))


def figures(quick: bool) -> list[tuple[Any, ...]]:
    sqlite, memory, replay = streaming(2 if quick else 5)
    deep, shallow = list_page(SESSIONS), list_page(1_000)
    ratio = sqlite / memory
    return [
        (
            "App turn of 10,000 chunks, SQLite store (vs MemoryStore)",
            sqlite,
            memory,
            "msg/s",
            ">= 0.8x",
            ratio >= 0.8,
        ),
        ("replay of a 10,000-update session (a restart), SQLite", replay, None, "s", "< 0.5 s", replay < 0.5),
        (
            "one list page among 100,000 sessions (vs among 1,000)",
            deep,
            shallow,
            "s",
            "< 10 ms",
            deep < 0.010,
        ),
    ]


if __name__ == "__main__":
    for row in figures(quick=False):
        print(row[:5], "PASS" if row[5] else "MISS")
