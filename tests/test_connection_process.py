"""Connections to real processes: the examples from the command line, a hostile peer over OS pipes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from acp_types import connection, v1
from acp_types.connection import ConnectionClosed

ROOT = Path(__file__).resolve().parents[1]
AGENT = [sys.executable, str(ROOT / "examples" / "echo_agent.py")]
CLIENT = [sys.executable, str(ROOT / "examples" / "client.py")]


@pytest.mark.parametrize("protocol", ["v1", "v2"])
def test_the_example_client_prints_what_the_example_agent_streams(protocol: str) -> None:
    out = subprocess.run(
        [*CLIENT, "--protocol", protocol, "--prompt", "hi", "--", *AGENT], capture_output=True, text=True, timeout=30
    )
    assert (out.returncode, out.stdout, out.stderr) == (0, "hi\n", "")
    out = subprocess.run(
        [*CLIENT, "--protocol", protocol, "--prompt", "streamed in  pieces", "--", *AGENT],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.stdout == "streamed in  pieces\n"


def test_the_readme_command_line_with_the_prompt_after_the_agent_command() -> None:
    out = subprocess.run([*CLIENT, "--", *AGENT, "--prompt", "hi"], capture_output=True, text=True, timeout=30)
    assert (out.returncode, out.stdout, out.stderr) == (0, "hi\n", "")


async def _hostile_session() -> None:
    proc = await asyncio.create_subprocess_exec(*AGENT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, limit=1 << 20)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    async def send(obj: Any) -> None:
        stdin.write((obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n")
        await stdin.drain()

    async def answer() -> dict[str, Any]:
        line = await asyncio.wait_for(stdout.readline(), 20)
        assert line, "the agent died"
        out: dict[str, Any] = json.loads(line)
        return out

    await send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    assert (await answer())["result"]["protocolVersion"] == 1
    await send(b"\x00\xff garbage \xfe")
    assert (await answer())["error"]["code"] == -32700
    # a line of 100 MB: skipped as it streams in (16 MiB limit), answered, the loop goes on
    chunk = b"x" * (1 << 20)
    stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"_big","params":{"pad":"')
    for _ in range(100):
        stdin.write(chunk)
        await stdin.drain()
    await send(b'"}}')
    big = await answer()
    assert big["id"] == 2 and big["error"]["code"] == -32600  # its id is in its first bytes
    await send({"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}})
    assert (await answer()) == {"jsonrpc": "2.0", "id": 3, "result": {"sessions": []}}
    await send({"jsonrpc": "2.0", "id": 77, "result": {"unknown": "id"}})
    await send({"jsonrpc": "2.0", "id": 4, "method": "session/list", "params": {}})
    assert (await answer())["id"] == 4
    stdin.close()
    assert await asyncio.wait_for(proc.wait(), 20) == 0


def test_a_hostile_peer_over_os_pipes_gets_answers_and_the_agent_survives() -> None:
    asyncio.run(asyncio.wait_for(_hostile_session(), 60))


DYING_AGENT = """
import os, sys
sys.path.insert(0, {generated!r})
import asyncio
from acp_types import connection, v1

class Dies:
    def __init__(self, conn):
        self.conn = conn
    async def initialize(self, params):
        return v1.InitializeResponse(protocol_version=1)
    async def session_list(self, params):
        os._exit(3)

asyncio.run(connection.serve_stdio(Dies, versions=("v1",)))
"""


def test_an_agent_that_exits_mid_request_fails_the_request_clearly() -> None:
    code = DYING_AGENT.format(generated=str(ROOT / "generated"))

    async def main() -> None:
        async with connection.spawn_agent([sys.executable, "-c", code], versions=("v1",)) as conn:
            await conn.initialize(v1.InitializeRequest(protocol_version=1))
            with pytest.raises(ConnectionClosed, match="session/list"):
                await conn.request("session/list", {})
            assert conn.process is not None
            assert await asyncio.wait_for(conn.process.wait(), 10) == 3

    asyncio.run(asyncio.wait_for(main(), 30))


def _live_members(pgid: int) -> list[str]:
    """The processes of group ``pgid`` that are not zombies, as their /proc stat lines."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(text)
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_leaving_spawn_agent_stops_the_agents_whole_process_group() -> None:
    # a launcher that leaves a child running (as codex-acp and gemini-cli do): nothing may outlive
    # the block, leaving it must not wait for the child's pipes, and asyncio must not complain
    script = (
        "import asyncio, time\n"
        "from acp_types import connection\n"
        "async def main():\n"
        "    async with connection.spawn_agent(['sh', '-c', 'sleep 20 & sleep 20']) as conn:\n"
        "        print(conn.process.pid, flush=True)\n"
        "        await asyncio.sleep(0.2)\n"
        "        t = time.monotonic()\n"
        "    print(time.monotonic() - t, flush=True)\n"
        "asyncio.run(main())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "generated")}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert (out.returncode, out.stderr) == (0, "")
    pgid, elapsed = out.stdout.split()
    for _ in range(50):  # what SIGTERM ended is reaped by whoever adopted it
        if not _live_members(int(pgid)):
            break
        time.sleep(0.1)
    assert _live_members(int(pgid)) == []
    # exit_timeout (1 s) for the shell to exit on its own, then SIGTERM to the group; not the 20 s
    assert float(elapsed) < 5, f"leaving spawn_agent took {elapsed} s: it waited for the sleeps"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_a_client_sent_sigterm_or_sighup_stops_its_agents_process_group(signame: str) -> None:
    # how `timeout`, a parent or a closed terminal stops a client: the agent and what it started go
    # too, as on leaving the block, and the client's own finally blocks still run
    script = (
        "import asyncio\n"
        "from acp_types import connection\n"
        "async def main():\n"
        "    try:\n"
        "        async with connection.spawn_agent(['sh', '-c', 'sleep 30 & sleep 30']) as conn:\n"
        "            print(conn.process.pid, flush=True)\n"
        "            await asyncio.sleep(30)\n"
        "    finally:\n"
        "        print('finally', flush=True)\n"
        "asyncio.run(main())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "generated")}
    client = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert client.stdout is not None
        pgid = int(client.stdout.readline())
        for _ in range(50):  # the shell has started its two sleeps
            if len(_live_members(pgid)) >= 3:
                break
            time.sleep(0.1)
        client.send_signal(getattr(signal, signame))
        out, err = client.communicate(timeout=30)
    finally:
        if client.poll() is None:
            client.kill()
            os.killpg(pgid, signal.SIGKILL)
    assert (client.returncode, out, err) == (128 + getattr(signal, signame), "finally\n", "")
    for _ in range(50):
        if not _live_members(pgid):
            break
        time.sleep(0.1)
    assert _live_members(pgid) == []
