"""acp_types.agent: one App, each version's rules on the wire (read raw, line by line, over OS pipes)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from acp_types import agent, connection

ROOT = Path(__file__).resolve().parents[1]
INIT = {
    "v1": {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}},
    "v2": {"protocolVersion": 2, "info": {"name": "t", "version": "1"}},
}


class Wire:
    """A raw client: lines to the agent, every line back in order; answers permission and fs requests."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.lines: list[dict[str, Any]] = []
        self.next_id = 1
        self.grant = "allow"
        self.files: dict[str, str] = {}

    async def open(self, app: agent.App, **options: Any) -> Wire:
        async def pipe() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            r, w = os.pipe()
            return await connection.pipe_streams(os.fdopen(r, "rb", 0), os.fdopen(w, "wb", 0))

        (a_in, self.out), (self.inp, a_out) = await pipe(), await pipe()
        self.server = asyncio.ensure_future(agent.serve(app, a_in, a_out, versions=("v1", "v2"), **options))
        self.reader = asyncio.ensure_future(self._read())
        self.answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        await self.call("initialize", INIT[self.version])
        return self

    async def _read(self) -> None:
        while line := await self.inp.readline():
            msg = json.loads(line)
            self.lines.append(msg)
            if "method" in msg and "id" in msg:  # a request from the agent
                self.out.write(
                    json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": self._serve(msg)}).encode() + b"\n"
                )
            elif "id" in msg and msg["id"] in self.answers:
                self.answers.pop(msg["id"]).set_result(msg)

    def _serve(self, msg: dict[str, Any]) -> dict[str, Any]:
        if msg["method"] == "fs/read_text_file":
            return {"content": self.files[msg["params"]["path"]]}
        if self.grant is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": self.grant}}

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid, self.next_id = self.next_id, self.next_id + 1
        self.answers[rid] = asyncio.get_running_loop().create_future()
        self.out.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n")
        return await asyncio.wait_for(self.answers[rid], 10)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.out.write(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode() + b"\n")

    async def new(self, cwd: str = "/tmp") -> str:
        sid: str = (await self.call("session/new", {"cwd": cwd, "mcpServers": []}))["result"]["sessionId"]
        return sid

    def prompt(self, sid: str, text: str) -> Awaitable[dict[str, Any]]:
        return self.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})

    async def until(self, test: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        for _ in range(1000):
            for line in self.lines:
                if test(line):
                    return line
            await asyncio.sleep(0.005)
        raise AssertionError("never seen")

    def updates(self) -> list[dict[str, Any]]:
        return [m["params"]["update"] for m in self.lines if m.get("method") == "session/update"]

    async def close(self) -> None:
        self.out.close()
        await asyncio.wait_for(self.server, 10)
        self.reader.cancel()


def idle(m: dict[str, Any]) -> bool:
    return m.get("method") == "session/update" and m["params"]["update"].get("state") == "idle"


def run(main: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(main(), 30))


class Words(agent.App):
    """Streams the prompt back a word at a time; ``forever`` keeps going until stopped."""

    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        words = turn.prompt_text.split()
        if words == ["forever"]:
            while True:
                await turn.text("x ")
                await asyncio.sleep(0)
        await turn.thought("thinking")
        for word in words:
            await turn.text(word + " ")
        return "end_turn"


def test_v2_acknowledges_then_streams_then_goes_idle() -> None:
    async def main() -> None:
        w = await Wire("v2").open(Words())
        sid = await w.new()
        answer = await w.prompt(sid, "a b")
        await w.until(idle)
        turn = w.lines[w.lines.index(answer) :]
        assert turn[0] == answer  # the answer comes before anything of the turn
        # and names the id of the user message the turn then inserts (seed 001)
        assert answer["result"] == {"messageId": turn[1]["params"]["update"]["messageId"]}
        kinds = [(u["sessionUpdate"], u.get("state")) for u in (m["params"]["update"] for m in turn[1:])]
        assert kinds == [
            ("user_message", None),
            ("state_update", "running"),
            ("agent_thought_chunk", None),
            ("agent_message_chunk", None),
            ("agent_message_chunk", None),
            ("state_update", "idle"),
        ]
        updates = [m["params"]["update"] for m in turn[1:]]
        assert updates[0]["content"] == [{"type": "text", "text": "a b"}]
        assert updates[-1]["stopReason"] == "end_turn"
        await w.close()

    run(main)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_message_ids_are_made_unique_and_never_reused_across_turns(version: str) -> None:
    async def main() -> None:
        w = await Wire(version).open(Words())
        sid = await w.new()
        for turns, text in enumerate(("one", "two"), 1):
            await w.prompt(sid, text)
            if version == "v2":
                await w.until(lambda m, n=turns: idle(m) and sum(map(idle, w.lines)) == n)
        by_kind: dict[str, set[str]] = {}
        for u in w.updates():
            if "messageId" in u:
                by_kind.setdefault(u["sessionUpdate"].replace("_chunk", ""), set()).add(u["messageId"])
        assert len(by_kind["agent_message"]) == 2 and len(by_kind["agent_thought"]) == 2
        every = [i for ids in by_kind.values() for i in ids]
        assert len(every) == len(set(every))  # no id shared by two messages of any kind
        await w.close()

    run(main)


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("how", ["session/cancel", "session/close", "session/archive"])
def test_cancel_close_and_archive_stop_the_running_turn_with_cancelled(version: str, how: str) -> None:
    async def main() -> None:
        w = await Wire(version).open(Words())
        sid = await w.new()
        prompt = asyncio.ensure_future(w.prompt(sid, "forever"))
        await w.until(
            lambda m: m.get("params", {}).get("update", {}).get("content", {}) == {"type": "text", "text": "x "}
        )
        if how == "session/cancel":
            w.notify(how, {"sessionId": sid})
            stop = await prompt
        else:
            stop = await w.call(how, {"sessionId": sid})
            assert stop["result"] == {}
        if version == "v1":
            assert (await prompt)["result"] == {"stopReason": "cancelled"}
        else:
            await w.until(idle)
            assert [u for u in w.updates() if u.get("state") == "idle"] == [
                {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}
            ]
        await asyncio.sleep(0.05)
        end = (await prompt) if version == "v1" else next(m for m in w.lines if idle(m))
        last = w.lines.index(end)
        if how != "session/cancel":
            assert last < w.lines.index(stop)  # the turn has ended when close/archive answer
            last = w.lines.index(stop)
        assert not [m for m in w.lines[last + 1 :] if m.get("method") == "session/update"]  # nothing after
        if how == "session/archive":
            info = [u for u in w.updates() if u["sessionUpdate"] == "session_info_update"]
            assert info == [{"sessionUpdate": "session_info_update", "archived": True}]
        await w.close()

    run(main)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_cancel_sent_right_after_the_prompt_ends_the_turn_before_it_starts(version: str) -> None:
    async def main() -> None:
        w = await Wire(version).open(Words())
        sid = await w.new()
        prompt = asyncio.ensure_future(w.prompt(sid, "forever"))
        await asyncio.sleep(0)  # the prompt's line is written, then the cancel's, in one read for the agent
        w.notify("session/cancel", {"sessionId": sid})
        answer = await prompt
        if version == "v1":
            assert answer["result"] == {"stopReason": "cancelled"}
        else:
            assert (await w.until(idle))["params"]["update"]["stopReason"] == "cancelled"
        # "forever" never ends by itself, so an answer at all shows the cancel was not lost; whether the
        # app wrote a chunk first depends on the interpreter (3.12+ starts a handler eagerly, before the
        # next line of the same read is handled), so the chunks are not counted
        await w.close()

    run(main)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_list_filters_by_cwd_and_archive_and_pages(version: str) -> None:
    class Small(Words):
        page_size = 2

    async def main() -> None:
        w = await Wire(version).open(Small())
        ids = [await w.new("/a") for _ in range(5)] + [await w.new("/b")]
        await w.call("session/archive", {"sessionId": ids[0]})
        seen, cursor = [], None
        while True:
            params = {"cwd": "/a"} | ({"cursor": cursor} if cursor else {})
            page = (await w.call("session/list", params))["result"]
            assert len(page["sessions"]) <= 2
            seen += [s["sessionId"] for s in page["sessions"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert seen == ids[1:5]  # cwd filtered, the archived one left out
        only = (await w.call("session/list", {"archived": "only"}))["result"]["sessions"]
        assert [s["sessionId"] for s in only] == [ids[0]] and only[0]["archived"] is True
        await w.call("session/unarchive", {"sessionId": ids[0]})
        assert (await w.call("session/list", {"archived": "only"}))["result"]["sessions"] == []
        await w.close()

    run(main)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_load_and_resume_replay_the_conversation_before_answering(version: str) -> None:
    async def main() -> None:
        w = await Wire(version).open(Words())
        sid = await w.new()
        await w.prompt(sid, "hello there")
        if version == "v2":
            await w.until(idle)
        mark = len(w.lines)
        method, params = (
            ("session/load", {}) if version == "v1" else ("session/resume", {"replayFrom": {"type": "start"}})
        )
        answer = await w.call(method, {"sessionId": sid, "cwd": "/tmp", "mcpServers": []} | params)
        replay = [m["params"]["update"] for m in w.lines[mark : w.lines.index(answer)]]
        texts = [
            (u["sessionUpdate"], (u["content"][0] if isinstance(u["content"], list) else u["content"])["text"])
            for u in replay
        ]
        user, agent_ = (
            ("user_message_chunk", "agent_message_chunk") if version == "v1" else ("user_message", "agent_message")
        )
        thought = "agent_thought_chunk" if version == "v1" else "agent_thought"  # v2: a whole thought (seed 001)
        assert texts == [(user, "hello there"), (thought, "thinking"), (agent_, "hello there ")]
        assert len({u["messageId"] for u in replay}) == 3
        await w.close()

    run(main)


def test_permission_and_file_read_and_diff_in_both_versions() -> None:
    class Editor(agent.App):
        async def prompt(self, turn: agent.Turn) -> agent.StopReason:
            tool = await turn.tool_call("Edit /w/a.py", "edit", locations=["/w/a.py"])
            old = await turn.read_file("/w/a.py") or "x = 1\n"
            if not await turn.allowed(tool):
                await tool.failed("rejected")
                return "end_turn"
            await tool.done(edits=[agent.Edit("/w/a.py", old, "x = 2\n")])
            return "end_turn"

    async def main(version: str) -> list[dict[str, Any]]:
        w = await Wire(version).open(Editor())
        w.files["/w/a.py"] = "x = 0\n"
        sid = await w.new()
        await w.prompt(sid, "go")
        if version == "v2":
            await w.until(idle)
        await w.close()
        return w.lines

    async def both() -> None:
        v1 = await main("v1")
        asks = [m for m in v1 if m.get("method") == "session/request_permission"]
        assert asks[0]["params"]["toolCall"]["title"] == "Edit /w/a.py"
        assert [m["method"] for m in v1 if "method" in m and "id" in m] == [
            "fs/read_text_file",
            "session/request_permission",
        ]
        done = [m["params"]["update"] for m in v1 if m.get("method") == "session/update"][-1]
        assert done["content"] == [{"type": "diff", "path": "/w/a.py", "oldText": "x = 0\n", "newText": "x = 2\n"}]
        v2 = await main("v2")
        ups = [m["params"]["update"] for m in v2 if m.get("method") == "session/update"]
        states = [u["state"] for u in ups if u["sessionUpdate"] == "state_update"]
        assert states == ["running", "requires_action", "running", "idle"]
        diff = [u for u in ups if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"][0][
            "content"
        ][0]
        assert diff["changes"] == [{"operation": "modify", "path": "/w/a.py"}]
        assert "-x = 1\n+x = 2\n" in diff["patch"]["text"]  # v2 has no fs: the agent's own view of the file
        assert not [m for m in v2 if m.get("method") == "fs/read_text_file"]

    run(both)


def test_a_promise_without_its_handler_is_refused_at_start() -> None:
    class NoList(Words):
        listing = False

    agent.check(NoList(), ("v1",))  # v1 lists only when sessionCapabilities.list is advertised
    with pytest.raises(agent.PromiseBroken, match=r"ACP v2.*session/list.*'session_list'"):
        agent.check(NoList(), ("v2",))

    class Lies(Words):
        def capabilities(self, version: str) -> dict[str, Any]:
            return super().capabilities(version) | ({"sessionCapabilities": {"fork": {}}} if version == "v1" else {})

    with pytest.raises(agent.PromiseBroken, match=r"fork in ACP v1.*session/fork"):
        agent.check(Lies())
    with pytest.raises(agent.PromiseBroken, match="prompt"):
        agent.check(agent.App())


class Raw:
    """A raw handler answering session/load and session/archive with what the test says."""

    answer: Any = None

    def __init__(self, conn: Any) -> None:
        pass

    async def initialize(self, params: Any) -> Any:
        return {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}}

    async def session_load(self, params: Any) -> Any:
        return self.answer

    async def session_archive(self, params: Any) -> Any:
        return self.answer


@pytest.mark.parametrize(
    "method, answer, where",
    [
        ("session/load", {"modes": 3}, "/modes"),
        ("session/archive", {"sesions": []}, "/sesions"),
        ("session/load", {"configOptions": [{"type": "select"}]}, "configOptions"),
    ],
)
def test_a_wrong_result_is_refused_with_the_version_named_never_sent_changed(
    method: str, answer: Any, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        r1, w1 = os.pipe()
        r2, w2 = os.pipe()
        a_in, a_out = await connection.pipe_streams(os.fdopen(r1, "rb", 0), os.fdopen(w2, "wb", 0))
        c_in, c_out = await connection.pipe_streams(os.fdopen(r2, "rb", 0), os.fdopen(w1, "wb", 0))
        handler = type("H", (Raw,), {"answer": answer})
        a = connection.AgentConnection(a_in, a_out, handler, versions=("v1",))
        a.start()
        c = connection.ClientConnection(c_in, c_out, None, versions=("v1",))
        await c.initialize({"protocolVersion": 1})
        params = {"sessionId": "s", "cwd": "/", "mcpServers": []} if method == "session/load" else {"sessionId": "s"}
        with pytest.raises(connection.RequestError) as info:
            await c.request(method, params)
        assert info.value.code == -32603 and "ACP v1" in str(info.value.message) and where in str(info.value.message)
        await c.close()
        await a.close()

    with caplog.at_level(logging.ERROR, "acp_types.connection"):
        run(main)
    assert any("ACP v1" in r.getMessage() and where in r.getMessage() for r in caplog.records)


def test_print_in_the_agent_goes_to_stderr_not_the_wire(tmp_path: Path) -> None:
    script = tmp_path / "loud.py"
    script.write_text(
        "import asyncio, sys\n"
        f"sys.path.insert(0, {str(ROOT / 'generated')!r})\n"
        "from acp_types import agent\n"
        "class Loud(agent.App):\n"
        "    async def prompt(self, turn):\n"
        "        print('debug output')\n"
        "        await turn.text('ok')\n"
        "        return 'end_turn'\n"
        "asyncio.run(agent.serve_stdio(Loud()))\n"
    )
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT["v1"]},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}},
    ]
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    for line in lines:
        proc.stdin.write(json.dumps(line) + "\n")
    proc.stdin.flush()
    proc.stdout.readline()
    sid = json.loads(proc.stdout.readline())["result"]["sessionId"]
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
    out, err = proc.communicate(
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt}) + "\n", timeout=30
    )
    assert [json.loads(line)["id"] if "id" in json.loads(line) else "update" for line in out.splitlines()] == [
        "update",
        3,
    ]
    assert "debug output" in err
