"""acp_types.agent on its session store (issue 30): sessions outlive the App that made them.

In-process, over OS pipes (the raw client of test_agent.py): what a client was shown is replayed,
by a fresh App on the same SQLite file, as it was shown (a property over generated turns, in
both versions), to a client of either version; list, archive and unarchive work with no
session open; a store that cannot be used fails at start.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_agent import Wire, idle, run

from acp_types import agent, v1, v2
from acp_types import store as agent_store
from acp_types.store import ENV_VAR, MemoryStore, SQLiteStore, StoreError

ROOT = Path(__file__).resolve().parents[1]


class Scripted(agent.App):
    """Runs the turn its prompt spells as JSON: a list of operations (see :func:`_ops`)."""

    name = "scripted"

    async def new_session(self, session: agent.Session) -> agent.Setup:
        return agent.Setup(
            modes=[agent.Mode("ask", "Ask"), agent.Mode("code", "Code")],
            mode="ask",
            config=[agent.ConfigOption("model", "Model", "small", [("small", "Small"), ("big", "Big")])],
            commands=[agent.Command("help", "Show help")],
        )

    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        for op in json.loads(turn.prompt_text):
            kind, args = op[0], op[1:]
            if kind == "text":
                await turn.text(args[0])
            elif kind == "thought":
                await turn.thought(args[0])
            elif kind == "plan":
                await turn.plan([agent.PlanEntry(c, status=s) for c, s in args[0]])
            elif kind == "usage":
                await turn.usage(args[0], args[1])
            elif kind == "title":
                await turn.session.set_title(args[0])
            elif kind == "commands":
                await turn.session.set_commands([agent.Command(n, f"the {n} command") for n in args[0]])
            elif kind == "mode":
                await turn.session.set_mode(args[0])
            elif kind == "tool":
                title, tool_kind, steps = args
                call = await turn.tool_call(title, tool_kind, locations=[f"/w/{title}.py"], raw_input={"t": title})
                for step in steps:
                    if step == "progress":
                        await call.update("in_progress", text=f"working on {title}")
                    elif step == "edit":
                        await call.done(
                            edits=[agent.Edit(f"/w/{title}.py", "a\n", "b\n"), agent.Edit("/w/new", None, "x")]
                        )
                    elif step == "fail":
                        await call.failed("it broke")
                    else:
                        await call.update(raw_output={"step": step})
        return "end_turn"


_text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_op = st.one_of(
    st.tuples(st.just("text"), _text),
    st.tuples(st.just("thought"), _text),
    st.tuples(
        st.just("plan"),
        st.lists(st.tuples(_text, st.sampled_from(["pending", "in_progress", "completed"])), max_size=3),
    ),
    st.tuples(st.just("usage"), st.integers(0, 1000), st.integers(1000, 2000)),
    st.tuples(st.just("title"), _text),
    st.tuples(st.just("commands"), st.lists(st.sampled_from(["fix", "test", "lint"]), max_size=3, unique=True)),
    st.tuples(st.just("mode"), st.sampled_from(["ask", "code"])),
    st.tuples(
        st.just("tool"),
        st.sampled_from(["read", "write"]),
        st.sampled_from(["read", "edit", "execute"]),
        st.lists(st.sampled_from(["progress", "edit", "fail", "out"]), max_size=3),
    ),
)
_turns = st.lists(st.lists(_op, max_size=8), min_size=1, max_size=3)


def _view(state: Any, *, users: bool = True) -> dict[str, Any]:
    """What a client shows of a session: messages, tool calls, plans, commands, config, info, usage."""
    data = json.loads(state.to_json())
    transcript = [e for e in data["transcript"] if users or e.get("role") != "user"]
    for entry in transcript:
        entry.pop("turn", None)  # bookkeeping of the client, not what it shows
        entry.pop("chunkMeta", None)  # how many chunks a message came in: replay joins them, so
        if entry.get("kind") == "message":  # text blocks compare by their text joined
            blocks = entry.pop("content")
            entry["text"] = "".join(b["text"] for b in blocks if b.get("type") == "text")
            entry["other"] = [b for b in blocks if b.get("type") != "text"]
    keep = ("plans", "plan", "availableCommands", "configOptions", "usage", "modes", "currentModeId")
    view = {k: data[k] for k in keep if k in data}
    view["info"] = {"title": data["info"]["title"]}
    view["transcript"] = transcript
    return view


def _models(version: str) -> Any:
    return v1 if version == "v1" else v2


def _state(version: str, session_id: str) -> Any:
    return v1.SessionState(session_id) if version == "v1" else v2.SessionState(session_id)


def _updates(w: Wire, sid: str, start: int = 0) -> list[dict[str, Any]]:
    return [
        m["params"] for m in w.lines[start:] if m.get("method") == "session/update" and m["params"]["sessionId"] == sid
    ]


async def _live(version: str, turns: list[list[Any]], cwd: str = "/w") -> tuple[str, Any, list[str]]:
    """Run ``turns`` on a fresh App: the session id, the client's state and the prompts' message ids."""
    app = Scripted()
    w = await Wire(version).open(app, principal="alice")
    answer = await w.call("session/new", {"cwd": cwd, "mcpServers": []})
    sid = answer["result"]["sessionId"]
    state = _state(version, sid)
    state.apply_setup(_models(version).NewSessionResponse.model_validate(answer["result"]))
    ids = []
    for n, ops in enumerate(turns, 1):
        reply = await w.prompt(sid, json.dumps(ops))
        if version == "v2":
            ids.append(reply["result"]["messageId"])
            while sum(map(idle, w.lines)) < n:
                await asyncio.sleep(0.005)
    await asyncio.sleep(0.01)
    for params in _updates(w, sid):
        state.apply(params)
    await w.close()
    return sid, state, ids


async def _replayed(version: str, sid: str, cwd: str = "/w") -> tuple[Any, dict[str, Any]]:
    """A fresh App (a restart: a new store object on the same file) replays the session to a client of ``version``."""
    w = await Wire(version).open(Scripted(), principal="alice")
    if version == "v1":
        answer = await w.call("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
    else:
        params = {"sessionId": sid, "cwd": cwd, "mcpServers": [], "replayFrom": {"type": "start"}}
        answer = await w.call("session/resume", params)
    assert "result" in answer, answer
    state = _state(version, sid)
    for params in _updates(w, sid):
        state.apply(params)
    response = "LoadSessionResponse" if version == "v1" else "ResumeSessionResponse"
    state.apply_setup(getattr(_models(version), response).model_validate(answer["result"]))
    await w.close()
    return state, answer


@pytest.mark.parametrize("version", ["v1", "v2"])
@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=_turns)
def test_what_a_fresh_process_replays_is_what_the_client_was_shown(version: str, turns: list[list[Any]]) -> None:
    async def main() -> None:
        sid, live, ids = await _live(version, turns)
        replayed, _ = await _replayed(version, sid)
        # v1 does not echo the prompt: the client knows what it sent; the replay says it too
        assert _view(replayed, users=version == "v2") == _view(live, users=version == "v2")
        users = [m for m in replayed.messages if m.role == "user"]
        assert [json.loads(m.text) for m in users] == [json.loads(json.dumps(t)) for t in turns]
        if version == "v2":  # the prompt answer's id is the replayed user message's, after a restart too
            assert [m.message_id for m in users] == ids
        assert not replayed.problems, replayed.problems

    run(main)


@pytest.mark.parametrize(("made", "read"), [("v1", "v2"), ("v2", "v1")])
def test_a_session_made_in_one_version_is_listed_and_replayed_in_the_other(made: str, read: str) -> None:
    turn = [["thought", "hmm"], ["text", "hello "], ["tool", "read", "read", ["edit"]], ["text", "world"]]

    async def main() -> None:
        sid, live, _ = await _live(made, [turn])
        w = await Wire(read).open(Scripted(), principal="alice")
        listed = (await w.call("session/list", {"cwd": "/w"}))["result"]["sessions"]
        assert [s["sessionId"] for s in listed] == [sid]
        await w.close()
        replayed, answer = await _replayed(read, sid)
        texts = {m.role: m.text for m in replayed.messages}
        assert texts == {"user": json.dumps(turn), "thought": "hmm", "agent": "hello world"}
        (call,) = replayed.tool_calls.values()
        assert call.status == "completed" and call.title == "read"
        assert not replayed.problems, replayed.problems
        modes = answer["result"].get("modes") if read == "v1" else None
        configs = {o.get("id", o.get("configId")) for o in answer["result"]["configOptions"]}
        assert "model" in configs and (read == "v1" and modes["currentModeId"] == "ask" or "mode" in configs)

    run(main)


def test_a_long_message_replays_in_pieces_with_an_empty_update_first_in_v2() -> None:
    big = "x" * (2 * agent.REPLAY_PIECE + 10)

    async def main() -> None:
        sid, live, _ = await _live("v2", [[["text", big[: agent.REPLAY_PIECE]], ["text", big[agent.REPLAY_PIECE :]]]])
        w = await Wire("v2").open(Scripted(), principal="alice")
        params = {"sessionId": sid, "cwd": "/w", "mcpServers": [], "replayFrom": {"type": "start"}}
        await w.call("session/resume", params)
        ups = [p["update"] for p in _updates(w, sid) if p["update"].get("messageId") != live.messages[0].message_id]
        assert [u["sessionUpdate"] for u in ups] == ["agent_message"] + ["agent_message_chunk"] * 3
        assert ups[0]["content"] == []
        assert all(len(u["content"]["text"]) <= agent.REPLAY_PIECE for u in ups[1:])
        assert "".join(u["content"]["text"] for u in ups[1:]) == big
        await w.close()

    run(main)


def test_resume_without_replay_from_replays_nothing_and_an_unknown_cursor_is_refused() -> None:
    async def main() -> None:
        sid, _, _ = await _live("v2", [[["text", "hi"]]])
        w = await Wire("v2").open(Scripted(), principal="alice")
        answer = await w.call("session/resume", {"sessionId": sid, "cwd": "/w", "mcpServers": []})
        assert "result" in answer and _updates(w, sid) == []
        bad = {"sessionId": sid, "cwd": "/w", "mcpServers": [], "replayFrom": {"type": "message", "messageId": "m"}}
        assert (await w.call("session/resume", bad))["error"]["code"] == -32602
        await w.close()

    run(main)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_list_archive_and_unarchive_need_no_open_session_and_survive_a_restart(version: str) -> None:
    async def main() -> None:
        first = await Wire(version).open(Scripted(), principal="alice")
        ids = {cwd: await first.new(cwd) for cwd in ("/a", "/a/b", "/ab")}
        await first.close()

        w = await Wire(version).open(Scripted(), principal="alice")

        async def listed(**params: Any) -> list[str]:
            return [s["sessionId"] for s in (await w.call("session/list", params))["result"]["sessions"]]

        assert await listed(cwd="/a") == [ids["/a"]]  # exact: not /a/b, not /ab
        assert (await w.call("session/archive", {"sessionId": ids["/a"]}))["result"] == {}
        assert await listed(cwd="/a") == []
        await w.close()

        w = await Wire(version).open(Scripted(), principal="alice")
        assert await listed(cwd="/a", archived="only") == [ids["/a"]]
        assert (await w.call("session/list", {"archived": "sometimes"}))["error"]["code"] == -32602
        assert (await w.call("session/unarchive", {"sessionId": ids["/a"]}))["result"] == {}
        assert await listed(cwd="/a") == [ids["/a"]]
        stranger = await Wire(version).open(Scripted(), principal="bob")
        assert (await stranger.call("session/list", {}))["result"]["sessions"] == []
        assert (await stranger.call("session/archive", {"sessionId": ids["/a"]}))["error"]["code"] == -32002
        await stranger.close()
        await w.close()

    run(main)


def test_a_list_cursor_stays_valid_across_a_restart() -> None:
    class Small(Scripted):
        page_size = 2

    async def main() -> None:
        w = await Wire("v2").open(Small(), principal="alice")
        made = [await w.new("/p") for _ in range(5)]
        first = (await w.call("session/list", {"cwd": "/p"}))["result"]
        await w.close()
        w = await Wire("v2").open(Small(), principal="alice")
        seen = [s["sessionId"] for s in first["sessions"]]
        cursor = first["nextCursor"]
        while cursor:
            page = (await w.call("session/list", {"cwd": "/p", "cursor": cursor}))["result"]
            seen += [s["sessionId"] for s in page["sessions"]]
            cursor = page.get("nextCursor")
        assert sorted(seen) == sorted(made) and len(seen) == 5
        assert (await w.call("session/list", {"cursor": "not ours"}))["error"]["code"] == -32602
        await w.close()

    run(main)


def test_a_session_open_in_another_process_is_refused_naming_why() -> None:
    """Two Apps on one SQLite file stand for two processes: claims name the holder, the second is refused."""

    async def main() -> None:
        one, two = Scripted(), Scripted()
        a = await Wire("v2").open(one, principal="alice")
        b = await Wire("v2").open(two, principal="alice")
        sid = await a.new("/w")
        assert [s["sessionId"] for s in (await b.call("session/list", {}))["result"]["sessions"]] == [sid]
        params = {"sessionId": sid, "cwd": "/w", "mcpServers": []}
        refused = await b.call("session/resume", params)
        assert refused["error"]["code"] == -32600 and "another agent process" in refused["error"]["message"]
        assert (await b.prompt(sid, "[]"))["error"]["code"] == -32602  # not open there
        assert (await a.call("session/close", {"sessionId": sid}))["result"] == {}
        assert "result" in await b.call("session/resume", params)
        await a.close()
        await b.close()

    run(main)


def test_an_app_forgets_sessions_once_closed_and_keeps_them_in_the_store() -> None:
    async def main() -> None:
        app = Scripted(store=MemoryStore())
        w = await Wire("v1").open(app, principal="alice")
        for _ in range(20):
            sid = await w.new("/w")
            await w.prompt(sid, json.dumps([["text", "hi"]]))
            await w.call("session/close", {"sessionId": sid})
        assert app.sessions == {}
        assert len((await w.call("session/list", {}))["result"]["sessions"]) == 20
        await w.close()

    run(main)


def test_retention_keeps_the_newest_sessions() -> None:
    class Keeps(Scripted):
        keep_sessions = 3

    async def main() -> None:
        w = await Wire("v1").open(Keeps(), principal="alice")
        made = [await w.new("/w") for _ in range(5)]
        await w.close()
        w = await Wire("v1").open(Keeps(), principal="alice")  # retention applies when the store opens
        listed = [s["sessionId"] for s in (await w.call("session/list", {}))["result"]["sessions"]]
        assert sorted(listed) == sorted(made[2:])
        await w.close()

    run(main)


def test_an_update_the_store_refuses_is_never_shown() -> None:
    class Failing(MemoryStore):
        fail = False

        async def append(self, session_id: str, events: Any) -> int:
            if self.fail:
                raise StoreError("session store: disk full (while appending events)")
            return await super().append(session_id, events)

    class Fails(Scripted):
        async def prompt(self, turn: agent.Turn) -> agent.StopReason:
            await turn.text("kept")
            await turn.session._drain()
            store.fail = True
            await turn.text("lost")
            await turn.session._drain()
            return "end_turn"

    store = Failing()

    async def main() -> None:
        w = await Wire("v1").open(Fails(store=store), principal="alice")
        sid = await w.new("/w")
        answer = await w.prompt(sid, "go")
        assert "error" in answer
        texts = [u["update"]["content"]["text"] for u in _updates(w, sid) if "content" in u["update"]]
        assert texts == ["kept"]
        await w.close()

    run(main)


# -- a store that cannot be used: one line and an exit code, at start ---------------


def _serve_once(store_path: Path) -> tuple[int, str, str]:
    import subprocess
    import sys

    code = (
        "import asyncio\n"
        "from acp_types import agent\n"
        "class A(agent.App):\n"
        "    async def prompt(self, turn): return 'end_turn'\n"
        "asyncio.run(agent.serve_stdio(A()))\n"
    )
    env = {**os.environ, ENV_VAR: str(store_path), "PYTHONPATH": str(ROOT / "generated")}
    done = subprocess.run(
        [sys.executable, "-c", code], input=b"", capture_output=True, env=env, timeout=60, check=False
    )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def _corrupt(path: Path) -> None:
    path.write_bytes(b"this is not a database" * 100)


def _newer(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version=99")
    db.commit()
    db.close()


def _read_only(path: Path) -> None:
    asyncio.run(_make(path))
    path.chmod(0o444)
    path.parent.chmod(0o555)
    if os.geteuid() == 0:  # root writes through permissions, not through the immutable flag
        import subprocess

        if subprocess.run(["chattr", "+i", str(path), str(path.parent)], check=False).returncode:
            pytest.skip("running as root where chattr +i does not work: no way to make the store read-only")


def _writable(path: Path) -> None:
    if os.geteuid() == 0:
        import subprocess

        subprocess.run(["chattr", "-i", str(path), str(path.parent)], check=False, capture_output=True)
    path.parent.chmod(0o755)


async def _make(path: Path) -> None:
    store = SQLiteStore(path)
    await store.open()
    await store.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("spoil", "says"),
    [(_corrupt, "corrupt"), (_newer, "newer"), (_read_only, "read-only")],
    ids=["corrupt", "newer-format", "read-only"],
)
def test_a_store_that_cannot_be_used_is_one_line_and_an_exit_code(tmp_path: Path, spoil: Any, says: str) -> None:
    path = tmp_path / "store" / "sessions.sqlite3"
    path.parent.mkdir()
    spoil(path)
    try:
        code, out, err = _serve_once(path)
    finally:
        _writable(path)
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and says in err and "Traceback" not in err, err


def test_a_session_of_100000_updates_replays_in_bounded_memory(tmp_path: Path) -> None:
    """Replay reads the log a page at a time and joins text in pieces: its peak does not follow the log's size."""
    import tracemalloc

    class Sink:
        version = "v2"
        closed = False

        def __init__(self) -> None:
            self.text = 0

        async def notify(self, method: str, params: Any) -> None:
            update = params.update
            content = getattr(update, "content", None)
            self.text += len(getattr(content, "text", "") or "")

    async def main() -> tuple[int, int]:
        store = SQLiteStore(tmp_path / "big.sqlite3")
        await store.open()
        await store.create(agent_store.StoredSession("s", "/"))
        chunk = "y" * 200
        for turn in range(10):  # ten turns of 10,000 chunks: 20 MB of text
            events = [("user", f"u{turn}", {"v": "v2", "content": [{"type": "text", "text": "go"}], "text": "go"})]
            events += [("agent", f"a{turn}", {"text": chunk})] * 10_000
            await store.append("s", events)
        session = agent.Session("s", "/")
        session._out = agent._Outbox(store, "s")
        sink = Sink()
        session._conn = sink  # type: ignore[assignment]
        tracemalloc.start()
        await agent.Replay(session).stored()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        await store.close()
        return peak, sink.text

    peak, text = asyncio.run(main())
    assert text == 10 * 10_000 * 200  # every chunk's text, once
    assert peak < 8 * 2**20, f"replay peaked at {peak / 2**20:.1f} MiB for a 20 MB log"


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def store_handles(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A factory of handles on one store's data: each call stands for another process (memory: the same object)."""
    if request.param == "memory":
        shared = MemoryStore()
        return lambda: shared
    if request.param == "sqlite":
        return lambda: SQLiteStore(tmp_path / "handles.sqlite3")
    from _postgres import postgres_dsn

    from acp_types.store_postgres import PostgresStore

    dsn = postgres_dsn(request)
    return lambda: PostgresStore(dsn)


def test_every_store_serves_an_app_across_a_restart_with_claims(store_handles: Any) -> None:
    turn = [["thought", "plan it"], ["plan", [["a", "completed"]]], ["tool", "write", "edit", ["progress", "edit"]]]
    turn += [["text", "done"], ["usage", 5, 1000], ["title", "T"]]

    async def main() -> None:
        first = await Wire("v2").open(Scripted(store=store_handles()), principal="alice")
        answer = await first.call("session/new", {"cwd": "/w", "mcpServers": []})
        sid = answer["result"]["sessionId"]
        live = _state("v2", sid)
        live.apply_setup(v2.NewSessionResponse.model_validate(answer["result"]))
        await first.prompt(sid, json.dumps(turn))
        while not any(map(idle, first.lines)):
            await asyncio.sleep(0.005)
        for params in _updates(first, sid):
            live.apply(params)
        other = await Wire("v2").open(Scripted(store=store_handles()), principal="alice")
        params = {"sessionId": sid, "cwd": "/w", "mcpServers": [], "replayFrom": {"type": "start"}}
        if not isinstance(store_handles(), MemoryStore):  # one object is one process: no claim between them
            assert (await other.call("session/resume", params))["error"]["code"] == -32600
        await first.close()  # the session's process is done with it
        answer = await other.call("session/resume", params)
        replayed = _state("v2", sid)
        for update in _updates(other, sid):
            replayed.apply(update)
        replayed.apply_setup(v2.ResumeSessionResponse.model_validate(answer["result"]))
        assert _view(replayed) == _view(live)
        listed = (await other.call("session/list", {"cwd": "/w"}))["result"]["sessions"]
        assert [(s["sessionId"], s.get("title")) for s in listed] == [(sid, "T")]
        await other.close()

    run(main)


def test_an_apps_memory_does_not_grow_with_the_sessions_it_served() -> None:
    """Sessions made, prompted and left (closed, or their client gone) leave nothing behind in the App's process."""
    import gc
    import tracemalloc

    async def serve_some(app: Scripted, n: int) -> None:
        w = await Wire("v2").open(app, principal="alice")
        for i in range(n):
            sid = await w.new("/w")
            await w.prompt(sid, json.dumps([["text", "hello"], ["tool", "read", "read", ["edit"]]]))
            while sum(map(idle, w.lines)) <= i:
                await asyncio.sleep(0.001)
            if i % 2:
                await w.call("session/close", {"sessionId": sid})  # the others stay open until the client goes
        await w.close()

    async def main() -> tuple[int, int]:
        app = Scripted()
        await serve_some(app, 20)  # warm up: imports, caches, the store's first pages
        gc.collect()
        tracemalloc.start()
        await serve_some(app, 50)
        gc.collect()
        after_50 = tracemalloc.get_traced_memory()[0]
        await serve_some(app, 200)
        gc.collect()
        after_250 = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert app.sessions == {}
        return after_50, after_250

    small, big = asyncio.run(main())
    assert big - small < 200 * 1024, f"{(big - small) / 200:.0f} bytes kept per session served"
