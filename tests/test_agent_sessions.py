"""acp_types.agent: who may touch a session, bounded v2 prompt queues, close/archive ending queued turns,
replay in pieces, the transcript's cost, keyset paging, and v1 commands (issue 32 items 1-7, issue 34 item 1).

Each test drives the App over OS pipes with raw JSON lines (the Wire of test_agent.py).
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_agent import Wire, Words, idle, run

from acp_types import agent
from acp_types.store import MemoryStore, StoredSession

ROOT = Path(__file__).resolve().parents[1]


def error(answer: dict[str, Any]) -> int | None:
    code: int | None = answer.get("error", {}).get("code")
    return code


def updates_of(w: Wire, sid: str) -> list[dict[str, Any]]:
    return [
        m["params"]["update"]
        for m in w.lines
        if m.get("method") == "session/update" and m["params"]["sessionId"] == sid
    ]


# -- issue 32 item 7: who may touch a session ----------------------------------


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_another_connection_can_neither_see_nor_touch_a_session(version: str) -> None:
    class Moded(Words):
        async def new_session(self, session: agent.Session) -> agent.Setup:
            return agent.Setup(modes=[agent.Mode("a", "A"), agent.Mode("b", "B")], mode="a")

    async def main() -> None:
        app = Moded()
        owner = await Wire(version).open(app)
        other = await Wire(version).open(app)
        sid = await owner.new("/w")
        running = asyncio.ensure_future(owner.prompt(sid, "forever"))
        await owner.until(lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "agent_message_chunk")
        assert (await other.call("session/list", {}))["result"]["sessions"] == []
        assert (await other.call("session/list", {"cwd": "/w", "archived": "include"}))["result"]["sessions"] == []
        other.notify("session/cancel", {"sessionId": sid})
        refused = {
            "session/close": {"sessionId": sid},
            "session/archive": {"sessionId": sid},
            "session/unarchive": {"sessionId": sid},
            "session/set_config_option": {"sessionId": sid, "configId": "mode", "value": "b"}
            | ({"type": "id"} if version == "v2" else {}),
            "session/load" if version == "v1" else "session/resume": {"sessionId": sid, "cwd": "/w", "mcpServers": []},
            "session/prompt": {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]},
        }
        if version == "v1":
            refused["session/set_mode"] = {"sessionId": sid, "modeId": "b"}
        for method, params in refused.items():
            answer = await other.call(method, params)
            assert error(answer) == -32002, (method, answer)  # as if there were no such session
            assert sid in answer["error"]["message"]
        await asyncio.sleep(0.05)
        # the other's cancel was ignored: the turn goes on
        assert not any(map(idle, owner.lines)) if version == "v2" else not running.done()
        assert [s["sessionId"] for s in (await owner.call("session/list", {}))["result"]["sessions"]] == [sid]
        assert (await owner.call("session/close", {"sessionId": sid}))["result"] == {}
        if version == "v1":
            assert (await running)["result"] == {"stopReason": "cancelled"}
        await owner.close()
        await other.close()

    run(main)


def test_connections_of_one_principal_share_their_sessions() -> None:
    async def main() -> None:
        app = Words()
        first = await Wire("v2").open(app, principal="alice")
        second = await Wire("v1").open(app, principal="alice")
        stranger = await Wire("v1").open(app, principal="bob")
        sid = await first.new("/w")
        assert [s["sessionId"] for s in (await second.call("session/list", {}))["result"]["sessions"]] == [sid]
        assert "result" in await second.call("session/load", {"sessionId": sid, "cwd": "/w", "mcpServers": []})
        assert (await stranger.call("session/list", {}))["result"]["sessions"] == []
        for w in (first, second, stranger):
            await w.close()

    run(main)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_with_auth_methods_nothing_is_reached_before_login_and_login_names_the_principal(version: str) -> None:
    class Locked(Words):
        auth_methods = (agent.AuthMethod("token", "Token"),)

        async def authenticate(self, method_id: str) -> str | None:
            return "account-7"

    async def main() -> None:
        app = Locked()
        owner = await Wire(version).open(app)
        login = "authenticate" if version == "v1" else "auth/login"
        await owner.call(login, {"methodId": "token"})
        sid = await owner.new("/w")
        peer = await Wire(version).open(app)
        for method, params in [
            ("session/list", {}),
            ("session/new", {"cwd": "/w", "mcpServers": []}),
            ("session/close", {"sessionId": sid}),
            ("session/archive", {"sessionId": sid}),
        ]:
            assert error(await peer.call(method, params)) == -32000, method
        await peer.call(login, {"methodId": "token"})  # the same account: its sessions, from this connection
        assert [s["sessionId"] for s in (await peer.call("session/list", {}))["result"]["sessions"]] == [sid]
        await owner.close()
        await peer.close()

    run(main)


# -- issue 32 items 1-3: v2 prompt queues --------------------------------------


class Counting(Words):
    def __init__(self) -> None:
        super().__init__()
        self.started = 0

    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        self.started += 1
        return await super().prompt(turn)


@pytest.mark.parametrize("extra", [10, 100])
def test_v2_prompts_behind_a_running_turn_are_bounded_and_refused_clearly(extra: int) -> None:
    async def main() -> None:
        app = Counting()
        w = await Wire("v2").open(app)
        sid = await w.new()
        await w.prompt(sid, "forever")
        answers = await asyncio.gather(*(w.prompt(sid, "later") for _ in range(extra)))
        accepted = [a for a in answers if "result" in a]
        refused = [a for a in answers if "error" in a]
        # however many are sent, the session holds the running turn and max_queued_prompts more
        assert len(accepted) == app.max_queued_prompts
        assert len(refused) == extra - app.max_queued_prompts
        assert {error(a) for a in refused} == {-32600} and "wait for its idle" in refused[0]["error"]["message"]
        await w.call("session/close", {"sessionId": sid})
        await w.close()

    run(main)


@pytest.mark.parametrize("how", ["session/close", "session/archive"])
def test_close_and_archive_end_queued_v2_turns_before_answering(how: str, caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        app = Counting()
        w = await Wire("v2").open(app)
        sid = await w.new()
        await w.prompt(sid, "forever")
        queued = (await w.prompt(sid, "queued"))["result"]["messageId"]
        await w.until(lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "agent_message_chunk")
        answer = await w.call(how, {"sessionId": sid})
        assert answer["result"] == {}
        before = w.lines[: w.lines.index(answer)]
        # the queued turn was told it was inserted, and ended cancelled, before the answer; it never ran
        ups = [m["params"]["update"] for m in before if m.get("method") == "session/update"]
        users = [u for u in ups if u["sessionUpdate"] == "user_message"]
        assert [u["messageId"] for u in users][-1] == queued
        assert [u.get("stopReason") for u in ups if u.get("state") == "idle"] == ["cancelled", "cancelled"]
        assert app.started == 1
        await asyncio.sleep(0.05)
        after = w.lines[w.lines.index(answer) + 1 :]
        assert not [m for m in after if m.get("method") == "session/update"]
        # a prompt after close or archive is refused, like after session/close
        late = await w.prompt(sid, "late")
        assert error(late) == -32602 and "not open" in late["error"]["message"]
        assert app.started == 1
        await w.close()

    with caplog.at_level(logging.ERROR, "asyncio"):
        run(main)
        gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


# -- issue 32 item 4: replay in pieces -----------------------------------------


class Long(agent.App):
    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        for i in range(200):
            await turn.text(chr(ord("a") + i % 26) * 10_000)
        return "end_turn"


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_long_reply_is_replayed_in_lines_that_fit(version: str) -> None:
    async def main() -> None:
        w = await Wire(version).open(Long())
        sid = await w.new()
        await w.prompt(sid, "go")
        if version == "v2":
            await w.until(idle)
        mark = len(w.lines)
        method, extra = (
            ("session/load", {}) if version == "v1" else ("session/resume", {"replayFrom": {"type": "start"}})
        )
        answer = await w.call(method, {"sessionId": sid, "cwd": "/tmp", "mcpServers": []} | extra)
        replay = [m["params"]["update"] for m in w.lines[mark : w.lines.index(answer)]]
        sizes = [len(json.dumps(u)) for u in replay]
        assert max(sizes) < 1024 * 1024  # every line far under a client's 16 MiB max_line_size
        agent_ups = [u for u in replay if u["sessionUpdate"].startswith("agent_message")]
        assert len({u["messageId"] for u in agent_ups}) == 1
        if version == "v2":  # seed 001: a message rebuilt from chunks first gets its update with content []
            assert agent_ups[0] == {
                "sessionUpdate": "agent_message",
                "messageId": agent_ups[0]["messageId"],
                "content": [],
            }
            agent_ups = agent_ups[1:]
        text = "".join(u["content"]["text"] for u in agent_ups)
        assert text == "".join(chr(ord("a") + i % 26) * 10_000 for i in range(200))
        await w.close()

    run(main)


# -- issue 32 item 5: a long message costs linear time ------------------------


class _Sink:
    """A connection stand-in for replay: counts what it is given."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.closed = False
        self.written = 0

    async def notify(self, method: str, params: Any) -> None:
        self.written += 1


def test_a_reply_of_n_chunks_replays_in_linear_time() -> None:
    """Replay joins a message's chunks into pieces: each chunk is copied a bounded number of times."""

    def cost(n: int) -> float:
        async def main() -> float:
            store = MemoryStore()
            await store.create(StoredSession("s", "/"))
            await store.append("s", [("agent", "m", {"text": "tok "})] * n)
            session = agent.Session("s", "/")
            session._out = agent._Outbox(store, "s")
            sink = _Sink("v2")
            session._conn = sink  # type: ignore[assignment]
            start = time.process_time()
            await agent.Replay(session).stored()
            spent = time.process_time() - start
            assert sink.written == 1 + -(-(4 * n) // agent.REPLAY_PIECE)  # content: [] then the pieces
            return spent

        return min(asyncio.run(main()) for _ in range(3))

    small, big = cost(20_000), cost(200_000)
    assert big / max(small, 1e-6) < 30  # linear: about 10; joining everything at each chunk: about 100


# -- issue 32 item 6 and issue 30 item 4: session/list -------------------------


def test_a_list_page_costs_the_same_whatever_the_total() -> None:
    def page_cost(n: int) -> float:
        async def fill() -> agent.App:
            store = MemoryStore()
            for i in range(n):
                await store.create(StoredSession(f"s{i:06}", "/w"))
            return Words(store=store)

        app = asyncio.run(fill())
        first = asyncio.run(app.list_sessions(agent.ListQuery("/w", None, "exclude")))
        assert first.next_cursor is not None
        walked = asyncio.run(app.list_sessions(agent.ListQuery("/w", first.next_cursor, "exclude")))
        assert [s.session_id for s in walked.sessions] == [f"s{i:06}" for i in range(50, 100)]
        # a page near the end: walk there once, then time the page at that cursor
        cursor = walked.next_cursor
        for _ in range(n // 50 - 4):
            cursor = asyncio.run(app.list_sessions(agent.ListQuery("/w", cursor, "exclude"))).next_cursor
        query = agent.ListQuery("/w", cursor, "exclude")
        assert asyncio.run(app.list_sessions(query)).sessions[0].session_id == f"s{n - 100:06}"
        best = float("inf")
        for _ in range(50):
            coro = app.list_sessions(query)
            start = time.perf_counter()
            with pytest.raises(StopIteration):  # a MemoryStore awaits nothing: no event loop's own cost
                coro.send(None)
            best = min(best, time.perf_counter() - start)
        return best

    small, big = page_cost(2_000), page_cost(20_000)
    assert big / small < 3  # one page at a cursor: independent of N (scanning all: about 10)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_archiving_the_session_a_cursor_names_does_not_break_the_walk(version: str) -> None:
    class Small(Words):
        page_size = 2

    async def main() -> None:
        w = await Wire(version).open(Small())
        ids = [await w.new("/a") for _ in range(7)]
        seen: list[str] = []
        page = (await w.call("session/list", {"cwd": "/a"}))["result"]
        seen += [s["sessionId"] for s in page["sessions"]]
        await w.call("session/archive", {"sessionId": seen[-1]})  # the one the cursor points after
        while cursor := page.get("nextCursor"):
            page = (await w.call("session/list", {"cwd": "/a", "cursor": cursor}))["result"]
            seen += [s["sessionId"] for s in page["sessions"]]
        assert seen == ids
        await w.close()

    run(main)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_list_refuses_an_unknown_archived_value_and_a_malformed_cursor_and_matches_cwd_exactly(version: str) -> None:
    async def main() -> None:
        w = await Wire(version).open(Words())
        a = await w.new("/a")
        await w.new("/a/b")
        await w.new("/ab")
        assert [s["sessionId"] for s in (await w.call("session/list", {"cwd": "/a"}))["result"]["sessions"]] == [a]
        if version == "v2":  # v1's schema already refuses the value
            answer = await w.call("session/list", {"archived": "sometimes"})
            assert error(answer) == -32602 and "sometimes" in answer["error"]["message"]
        for cursor in ("nonsense!", "", "QUJD"):
            answer = await w.call("session/list", {"cursor": cursor})
            assert error(answer) == -32602, cursor
        await w.close()

    run(main)


# -- issue 34 item 1: v1 gets the commands -------------------------------------


def _coder() -> agent.App:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from coding_agent import Coder
    finally:
        sys.path.remove(str(ROOT / "examples"))
    return Coder()  # type: ignore[no-any-return]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_setup_commands_reach_a_v1_client_after_new_and_on_load(version: str) -> None:
    async def main() -> None:
        w = await Wire(version).open(_coder())
        answer = await w.call("session/new", {"cwd": "/w", "mcpServers": []})
        sid = answer["result"]["sessionId"]
        if version == "v2":  # in the answer, not as an update
            assert [c["name"] for c in answer["result"]["availableCommands"]] == ["rename"]
            await asyncio.sleep(0.05)
            assert not [u for u in updates_of(w, sid) if u["sessionUpdate"] == "available_commands_update"]
            await w.close()
            return
        update = await w.until(
            lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "available_commands_update"
        )
        assert w.lines.index(update) > w.lines.index(answer)  # once the answer has named the session
        assert update["params"]["sessionId"] == sid
        assert [c["name"] for c in update["params"]["update"]["availableCommands"]] == ["rename"]
        mark = len(w.lines)
        loaded = await w.call("session/load", {"sessionId": sid, "cwd": "/w", "mcpServers": []})
        during = [m["params"]["update"]["sessionUpdate"] for m in w.lines[mark : w.lines.index(loaded)]]
        assert "available_commands_update" in during
        await w.close()

    run(main)
