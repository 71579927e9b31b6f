"""App sessions across agent processes over real pipes (issue 30): kill -9, restarts, two processes on one store.

Each agent is a spawned process in its own process group with ``ACP_TYPES_STORE`` pointing at this
test's SQLite file (tests/conftest.py); the client is raw JSON lines.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

STREAMER = """
import asyncio
from acp_types import agent

class Streamer(agent.App):
    name = "streamer"

    async def prompt(self, turn):
        i = 0
        while True:  # until killed
            await turn.text(f"chunk {i} ")
            i += 1
            await asyncio.sleep(0.0005)

asyncio.run(agent.serve_stdio(Streamer()))
"""

INIT = {
    "v1": {"protocolVersion": 1, "clientCapabilities": {}},
    "v2": {"protocolVersion": 2, "info": {"name": "t", "version": "1"}},
}


class Agent:
    """A spawned agent and a raw client on its pipes; answers permission requests with the first option."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.lines: list[dict[str, Any]] = []
        self.answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.next_id = 1
        self.changed = asyncio.Event()

    async def start(self, *argv: str) -> Agent:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "generated"), str(ROOT / "examples")])}
        self.proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            limit=1 << 24,
        )
        self.reader = asyncio.ensure_future(self._read())
        answer = await self.call("initialize", INIT[self.version])
        assert "result" in answer, answer
        return self

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            msg = json.loads(line)
            self.lines.append(msg)
            self.changed.set()
            if "method" in msg and "id" in msg:
                option = msg["params"]["options"][0]["optionId"]
                self._send(
                    {
                        "jsonrpc": "2.0",
                        "id": msg["id"],
                        "result": {"outcome": {"outcome": "selected", "optionId": option}},
                    }
                )
            elif msg.get("id") in self.answers:
                self.answers.pop(msg["id"]).set_result(msg)

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")

    def request(self, method: str, params: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        rid, self.next_id = self.next_id, self.next_id + 1
        self.answers[rid] = asyncio.get_running_loop().create_future()
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return self.answers[rid]

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return await asyncio.wait_for(self.request(method, params), 30)

    async def until(self, test: Callable[[], bool]) -> None:
        while not test():
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), 30)

    def updates(self, sid: str) -> list[dict[str, Any]]:
        return [
            m["params"]["update"]
            for m in self.lines
            if m.get("method") == "session/update" and m["params"]["sessionId"] == sid
        ]

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)

    async def stop(self) -> None:
        if self.proc.returncode is None:
            with_stdin = self.proc.stdin
            if with_stdin is not None:
                with_stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:
                self.kill()
                await self.proc.wait()
        self.reader.cancel()


def run(main: Callable[[], Any]) -> None:
    asyncio.run(asyncio.wait_for(main(), 120))


def _text(updates: list[dict[str, Any]], kind: str = "agent_message") -> str:
    out = []
    for u in updates:
        if u["sessionUpdate"] == f"{kind}_chunk":
            out.append(u["content"]["text"])
        elif u["sessionUpdate"] == kind:
            out = [b["text"] for b in u["content"]]
    return "".join(out)


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_after_kill_9_the_replay_has_everything_the_client_saw(version: str, tmp_path: Path) -> None:
    script = tmp_path / "streamer.py"
    script.write_text(STREAMER)

    async def main() -> None:
        first = await Agent(version).start(sys.executable, str(script))
        sid = (await first.call("session/new", {"cwd": "/w", "mcpServers": []}))["result"]["sessionId"]
        prompt = first.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]})
        await first.until(lambda: len(first.updates(sid)) > 300)
        first.kill()  # mid-turn, mid-batch
        await first.proc.wait()
        seen = _text(first.updates(sid))
        ack = prompt.result()["result"]["messageId"] if version == "v2" else None

        second = await Agent(version).start(sys.executable, str(script))
        if version == "v1":
            answer = await second.call("session/load", {"sessionId": sid, "cwd": "/w", "mcpServers": []})
        else:
            params = {"sessionId": sid, "cwd": "/w", "mcpServers": [], "replayFrom": {"type": "start"}}
            answer = await second.call("session/resume", params)
        assert "result" in answer, answer  # the dead process's claim is taken over
        replayed = second.updates(sid)
        assert _text(replayed).startswith(seen) and seen.startswith("chunk 0 chunk 1 ")
        users = [u for u in replayed if u["sessionUpdate"].startswith("user_message")]
        assert users and (ack is None or users[0]["messageId"] == ack)
        await second.stop()

    run(main)


def test_two_agent_processes_on_one_store_share_sessions_and_refuse_one_open_in_the_other(tmp_path: Path) -> None:
    script = tmp_path / "streamer.py"
    script.write_text(STREAMER)

    async def main() -> None:
        a = await Agent("v2").start(sys.executable, str(script))
        b = await Agent("v1").start(sys.executable, str(script))
        sid = (await a.call("session/new", {"cwd": "/w", "mcpServers": []}))["result"]["sessionId"]
        other = (await b.call("session/new", {"cwd": "/w", "mcpServers": []}))["result"]["sessionId"]
        for peer in (a, b):  # both processes run for the same local user: each lists both sessions
            listed = (await peer.call("session/list", {"cwd": "/w"}))["result"]["sessions"]
            assert sorted(s["sessionId"] for s in listed) == sorted([sid, other])
        refused = await b.call("session/load", {"sessionId": sid, "cwd": "/w", "mcpServers": []})
        assert refused["error"]["code"] == -32600 and "another agent process" in refused["error"]["message"]
        assert (await a.call("session/close", {"sessionId": sid}))["result"] == {}
        assert "result" in await b.call("session/load", {"sessionId": sid, "cwd": "/w", "mcpServers": []})
        await a.stop()
        await b.stop()

    run(main)


@pytest.mark.parametrize(("made", "back"), [("v1", "v1"), ("v2", "v2"), ("v1", "v2")])
def test_the_coding_agent_killed_and_spawned_again_lists_loads_and_keeps_the_archive(
    made: str, back: str, tmp_path: Path
) -> None:
    """The issue's new user: a turn with a thought, a plan, two tool calls and a diff behind a permission."""
    target = tmp_path / "a.py"
    target.write_text("x = 1\nprint(x)\n")
    command = (sys.executable, str(ROOT / "examples" / "coding_agent.py"))

    async def main() -> None:
        first = await Agent(made).start(*command)
        sid = (await first.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["result"]["sessionId"]
        text = f"rename x to y in {target}"
        await first.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
        if made == "v2":
            await first.until(lambda: any(u.get("state") == "idle" for u in first.updates(sid)))
        live = first.updates(sid)
        first.kill()
        await first.proc.wait()

        second = await Agent(back).start(*command)
        listed = (await second.call("session/list", {"cwd": str(tmp_path)}))["result"]["sessions"]
        assert [s["sessionId"] for s in listed] == [sid]
        assert (await second.call("session/archive", {"sessionId": sid}))["result"] == {}
        await second.stop()

        third = await Agent(back).start(*command)
        only = (await third.call("session/list", {"cwd": str(tmp_path), "archived": "only"}))["result"]["sessions"]
        assert [s["sessionId"] for s in only] == [sid]  # the archive outlived the process
        if back == "v1":
            answer = await third.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        else:
            params = {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": [], "replayFrom": {"type": "start"}}
            answer = await third.call("session/resume", params)
        assert "result" in answer, answer
        replayed = third.updates(sid)
        assert _text(replayed) == _text(live) and "Renamed 2 occurrences" in _text(replayed)
        assert _text(replayed, "agent_thought") == _text(live, "agent_thought") != ""
        kinds = {u["sessionUpdate"] for u in replayed}
        assert {"tool_call_update", "usage_update"} <= kinds
        assert ("plan" if back == "v1" else "plan_update") in kinds
        diffs = [c for u in replayed for c in u.get("content") or [] if isinstance(c, dict) and c.get("type") == "diff"]
        assert diffs, "the proposed edit's diff is replayed"
        await third.stop()

    run(main)
