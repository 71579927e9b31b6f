"""The conductor and the proxy as processes: the kit through a chain, the injected context, hostile members.

What is proved here: ``python -m acp_types.conductor -- examples/proxy.py --
examples/echo_agent.py`` passes every conformance check the echo agent passes
alone, in v1 and v2; the context line the proxy adds reaches the agent (the
echo shows it), under the conductor and with the proxy on its own in front of
the agent; on its own the proxy passes untouched lines through byte for byte;
a proxy that changes ``protocolVersion`` is caught; and hostile members (one
that never answers, one that dies mid-turn, one that floods, an agent gone
when the proxy forwards to it) end with JSON-RPC errors to the client, no
process left behind, and the conductor's memory bounded. SIGTERM to the
conductor stops every member's process group.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from acp_types import conformance
from acp_types.conformance import _agent

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
GENERATED = str(ROOT / "generated")
PY = sys.executable
ECHO = [PY, str(ROOT / "examples" / "echo_agent.py")]
CONTEXT_PROXY = [PY, str(ROOT / "examples" / "proxy.py")]
CONDUCTOR = [PY, "-m", "acp_types.conductor"]
FAST = _agent.Options(timeout=3, turn_timeout=3, long_prompt="Count: " + " ".join(map(str, range(1, 1501))))
ENV = {**os.environ, "PYTHONPATH": GENERATED}


@pytest.fixture(autouse=True)
def _generated_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", GENERATED)


def chain(*members: list[str], options: tuple[str, ...] = ()) -> list[str]:
    command = [*CONDUCTOR, *options]
    for member in members:
        command += ["--", *member]
    return command


def recorded(pids: Path, command: list[str]) -> list[str]:
    """``command``, its pid appended to ``pids`` first (the shell execs it, so the pid is the member's)."""
    return ["sh", "-c", f'echo $$ >> "{pids}"; exec "$@"', "sh", *command]


def script(tmp_path: Path, name: str, body: str) -> list[str]:
    path = tmp_path / name
    path.write_text(f"import sys\nsys.path.insert(0, {GENERATED!r})\n" + textwrap.dedent(body))
    return [PY, str(path)]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def assert_all_gone(pids: list[int]) -> None:
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)  # polling: nothing signals another process's grandchild ending
    left = [pid for pid in pids if alive(pid)]
    assert not left, f"processes left behind: {left}"


def pids_in(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def settled(progress: Path) -> int:
    """How far a flooding member got once it stops getting further (it blocks when nobody reads it)."""
    last, since = -1, time.monotonic()
    deadline = since + 20
    while time.monotonic() < deadline:
        now = int(progress.read_text() or 0) if progress.exists() else 0
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > 1.0:
            break
        time.sleep(0.05)  # polling another process's progress: there is no event to await
    return last


class Peer:
    """A client over a process's stdin/stdout, one JSON object a line."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.next_id = 0
        self.notes: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        await self.process.stdin.drain()

    async def recv(self, timeout: float = 15) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), timeout)
        assert line, "the conductor closed its output"
        value: dict[str, Any] = json.loads(line)
        return value

    async def request(self, method: str, params: Any, timeout: float = 15) -> dict[str, Any]:
        self.next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = await self.recv(timeout)
            if message.get("id") == self.next_id and "method" not in message:
                return message
            self.notes.append(message)


@asynccontextmanager
async def spawned(command: list[str]) -> AsyncIterator[Peer]:
    process = await asyncio.create_subprocess_exec(
        *command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=ENV, limit=1 << 20
    )
    try:
        yield Peer(process)
    finally:
        if process.returncode is None:
            assert process.stdin is not None
            process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), 15)
            except asyncio.TimeoutError:
                process.kill()
                await process.wait()


INIT = {
    "v1": {"protocolVersion": 1, "clientCapabilities": {}},
    "v2": {"protocolVersion": 2, "info": {"name": "test", "version": "1"}},
}


# -- the chain works ----------------------------------------------------------


def test_the_kit_passes_a_proxy_in_front_of_the_echo_agent_under_the_conductor_and_alone_as_the_agent_direct() -> None:
    checks = conformance.checks("agent")
    ways = {"conductor": chain(CONTEXT_PROXY, ECHO), "alone": [*CONTEXT_PROXY, "--", *ECHO]}

    async def every() -> tuple[Any, dict[str, Any]]:
        direct, _ = await conformance.run("agent", ECHO, ["v1", "v2"], checks, FAST)
        return direct, {
            name: (await conformance.run("agent", cmd, ["v1", "v2"], checks, FAST))[0] for name, cmd in ways.items()
        }

    direct, through = asyncio.run(every())
    passed = {r.key for r in direct if r.verdict == "SUCCESS"}
    assert len(passed) > 50
    for name, results in through.items():
        assert {r.version for r in results} == {"v1", "v2"}
        wrong = [
            f"{name} {r.key}: {r.verdict} {r.detail}" for r in results if r.key in passed and r.verdict != "SUCCESS"
        ]
        assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("alone", [False, True], ids=["conductor", "alone"])
def test_the_context_line_reaches_the_agent(version: str, alone: bool, tmp_path: Path) -> None:
    (tmp_path / "context.txt").write_text("Context: the widget repo\nsecond line\n")
    command = [*CONTEXT_PROXY, "--", *ECHO] if alone else chain(CONTEXT_PROXY, ECHO)
    env = {**ENV, "PROXY_CONTEXT_FILE": str(tmp_path / "context.txt")}
    args = ["--protocol", version] if version == "v1" else []
    out = subprocess.run(
        [PY, str(ROOT / "examples" / "client.py"), *args, "--timeout", "20", "--prompt", "hello there", "--", *command],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[:2] == ["Context: the widget repo", "hello there"]


def test_members_as_quoted_words_may_hold_their_own_dashes(tmp_path: Path) -> None:
    """The last member is a proxy on its own in front of the agent (its command holds ``--``)."""
    (tmp_path / "context.txt").write_text("Context: quoted\n")
    members = ["--", shlex.join(CONTEXT_PROXY), "--", shlex.join([*CONTEXT_PROXY, "--", *ECHO])]
    out = subprocess.run(
        [PY, str(ROOT / "examples" / "client.py"), "--timeout", "20", "--prompt", "hi", "--", *CONDUCTOR, *members],
        capture_output=True,
        text=True,
        timeout=60,
        env={**ENV, "PROXY_CONTEXT_FILE": str(tmp_path / "context.txt")},
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[:3] == ["Context: quoted", "Context: quoted", "hi"]


def test_on_its_own_the_proxy_passes_untouched_lines_through_byte_for_byte(tmp_path: Path) -> None:
    seen = tmp_path / "seen.jsonl"
    tap = script(
        tmp_path,
        "tap.py",
        f"""
        import re
        with open({str(seen)!r}, "ab", buffering=0) as seen:
            for line in sys.stdin.buffer:
                seen.write(line)
                rid = re.search(rb'"id" *: *("[^"]*"|\\d+)', line)
                if rid and b'"method"' in line:
                    sys.stdout.buffer.write(b'{{ "id" : ' + rid.group(1) + b', "jsonrpc":"2.0", "result" : {{"x" : 1.50, "s":"\\\\u00e9"}} }}\\n')
                    sys.stdout.flush()
        """,
    )
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{ "protocolVersion" : 1, "clientCapabilities":{}}}',
        b'{ "method" : "session/new", "jsonrpc":"2.0","id":"two","params":{"cwd":"/\\u00e9","mcpServers":[ ],"n":1.0}}',
        b'{"jsonrpc":"2.0","method":"_note","params":[1, 2e3, {"k":"\\ud83d\\ude00"}]}',
        b'{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}',
    ]

    async def talk() -> list[bytes]:
        async with spawned([*CONTEXT_PROXY, "--", *tap]) as peer:
            assert peer.process.stdin is not None and peer.process.stdout is not None
            answers = []
            for line in lines:
                peer.process.stdin.write(line + b"\n")
                await peer.process.stdin.drain()
                if b'"id"' in line:
                    answers.append((await asyncio.wait_for(peer.process.stdout.readline(), 15)).rstrip(b"\n"))
            return answers

    answers = asyncio.run(talk())
    received = seen.read_bytes().splitlines()
    assert received[:3] == lines[:3]  # untouched: the same bytes, ids and all
    assert received[3] != lines[3] and b"Project:" in received[3]  # the prompt is the one the hook changed
    assert answers[:2] == [
        b'{ "id" : 1, "jsonrpc":"2.0", "result" : {"x" : 1.50, "s":"\\u00e9"} }',
        b'{ "id" : "two", "jsonrpc":"2.0", "result" : {"x" : 1.50, "s":"\\u00e9"} }',
    ]


def test_a_proxy_that_changes_protocol_version_is_an_error_to_the_client(tmp_path: Path) -> None:
    liar = script(
        tmp_path,
        "liar.py",
        """
        import json
        asked = None
        for line in sys.stdin:
            msg = json.loads(line)
            if msg.get("method") == "proxy/initialize":
                asked = msg["id"]
                wrapped = {"method": "initialize", "params": msg["params"]}
                print(json.dumps({"jsonrpc": "2.0", "id": 100, "method": "proxy/successor", "params": wrapped}), flush=True)
            elif msg.get("id") == 100:
                result = dict(msg["result"], protocolVersion=1)
                print(json.dumps({"jsonrpc": "2.0", "id": asked, "result": result}), flush=True)
        """,
    )

    async def talk() -> dict[str, Any]:
        async with spawned(chain(liar, ECHO)) as peer:
            return await peer.request("initialize", INIT["v2"])

    answer = asyncio.run(talk())
    assert "result" not in answer and "protocolVersion" in answer["error"]["message"]


# -- hostile members ------------------------------------------------------------


def test_a_proxy_that_never_answers_gets_the_client_an_error_not_a_hang(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    silent = script(tmp_path, "silent.py", "for _ in sys.stdin:\n    pass\n")

    async def talk() -> tuple[dict[str, Any], int | None]:
        async with spawned(
            chain(recorded(pids, silent), recorded(pids, ECHO), options=("--init-timeout", "1"))
        ) as peer:
            answer = await peer.request("initialize", INIT["v1"])
            assert peer.process.stdin is not None
            peer.process.stdin.close()
            return answer, await asyncio.wait_for(peer.process.wait(), 15)

    answer, code = asyncio.run(talk())
    assert answer["error"]["code"] == -32603 and "initialize" in answer["error"]["message"]
    assert code == 0
    assert len(pids_in(pids)) == 2
    assert_all_gone(pids_in(pids))


@pytest.mark.parametrize("how", ["$/cancel_request", "session/cancel"])
def test_a_cancelled_prompt_the_chain_never_ends_is_answered_by_the_conductor(how: str, tmp_path: Path) -> None:
    swallow = script(
        tmp_path,
        "swallow.py",
        """
        from acp_types import proxy
        chain = proxy.Proxy("swallow")
        @chain.on("session/prompt")
        async def never(params, ctx):
            import asyncio
            await asyncio.Event().wait()
        @chain.on("session/cancel")
        async def swallowed(params, ctx):
            return proxy.DROP
        chain.main()
        """,
    )
    version = "v2" if how == "$/cancel_request" else "v1"

    async def talk() -> dict[str, Any]:
        async with spawned(chain(swallow, ECHO, options=("--cancel-grace", "0.5"))) as peer:
            await peer.request("initialize", INIT[version])
            session = (await peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["result"][
                "sessionId"
            ]
            peer.next_id += 1
            prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}
            await peer.send({"jsonrpc": "2.0", "id": peer.next_id, "method": "session/prompt", "params": prompt})
            cancel = {"requestId": peer.next_id} if how == "$/cancel_request" else {"sessionId": session}
            await peer.send({"jsonrpc": "2.0", "method": how, "params": cancel})
            while True:
                message = await peer.recv()
                if message.get("id") == peer.next_id:
                    return message

    answer = asyncio.run(talk())
    assert answer["error"]["code"] == -32800 and "did not answer" in answer["error"]["message"]


def test_a_proxy_dying_mid_turn_ends_the_turn_with_an_error_and_leaves_nothing(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    dies = script(
        tmp_path,
        "dies.py",
        """
        import os
        from acp_types import proxy
        chain = proxy.Proxy("dies")
        @chain.on("session/prompt")
        async def die(params, ctx):
            os._exit(3)
        chain.main()
        """,
    )

    async def talk() -> tuple[dict[str, Any], int | None]:
        async with spawned(chain(recorded(pids, dies), recorded(pids, ECHO))) as peer:
            await peer.request("initialize", INIT["v1"])
            session = (await peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["result"][
                "sessionId"
            ]
            answer = await peer.request(
                "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}
            )
            return answer, await asyncio.wait_for(peer.process.wait(), 15)

    answer, code = asyncio.run(talk())
    assert answer["error"]["code"] == -32603 and "member 1" in answer["error"]["message"]
    assert code == 1
    assert len(pids_in(pids)) == 2
    assert_all_gone(pids_in(pids))


def test_a_successor_gone_when_the_proxy_forwards_to_it_is_an_error_to_the_client(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    quitter = script(
        tmp_path,
        "quitter.py",
        """
        import json, os
        for line in sys.stdin:
            msg = json.loads(line)
            if msg.get("method") == "initialize":
                print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 1}}), flush=True)
            elif msg.get("method") == "session/new":
                os._exit(0)
        """,
    )

    async def talk() -> dict[str, Any]:
        async with spawned(chain(recorded(pids, CONTEXT_PROXY), recorded(pids, quitter))) as peer:
            assert "result" in await peer.request("initialize", INIT["v1"])
            return await peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})

    answer = asyncio.run(talk())
    assert answer["error"]["code"] == -32603 and "member 2" in answer["error"]["message"]
    assert_all_gone(pids_in(pids))


def test_a_flooding_proxy_costs_the_conductor_bounded_memory(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    flood = script(
        tmp_path,
        "flood.py",
        """
        import json
        sys.stdin.readline()
        junk = b"x" * (8 << 20)
        for _ in range(4):  # lines over the conductor's limit: skipped as they stream
            sys.stdout.buffer.write(b'{"jsonrpc":"2.0","method":"_junk","params":"' + junk + b'"}\\n')
        chunk = {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
                 "content": {"type": "text", "text": "y" * 60000}}}
        line = json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": chunk}).encode() + b"\\n"
        for i in range(4000):  # 240 MB of notifications toward a client that reads slowly
            sys.stdout.buffer.write(line)
            sys.stdout.flush()
            with open(sys.argv[1], "w") as progress:
                progress.write(str(i + 1))
        for _ in sys.stdin:
            pass
        """,
    )

    async def talk() -> tuple[int, int]:
        flooding = [*flood, str(tmp_path / "progress")]
        command = chain(recorded(pids, flooding), recorded(pids, ECHO), options=("--max-line-size", str(1 << 20)))
        async with spawned(command) as peer:
            await peer.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT["v1"]})
            for _ in range(200):
                message = await peer.recv()
                assert message["method"] == "session/update"
            written = await asyncio.to_thread(settled, tmp_path / "progress")  # the client has stopped reading
            assert written < 1000, f"the flood went on ({written} lines) while the client read 200"
            status = Path(f"/proc/{peer.process.pid}/status").read_text()
            peak = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
            read = 200
            while True:  # the rest still arrives, whole
                message = await peer.recv()
                if message.get("method") != "session/update":
                    break
                read += 1
                if read == 4000:
                    break
            return peak, read

    peak_kib, read = asyncio.run(talk())
    assert read == 4000
    assert peak_kib < 100 * 1024, f"the conductor peaked at {peak_kib} KiB for a 240 MB flood"
    assert_all_gone(pids_in(pids))


def test_sigterm_stops_every_members_process_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    # the agent leaves a grandchild running in its group: it must go too
    agent = ["sh", "-c", f'sleep 300 & echo $! >> "{pids}"; exec "$@"', "sh", *ECHO]

    async def talk() -> int | None:
        async with spawned(chain(recorded(pids, CONTEXT_PROXY), agent)) as peer:
            assert "result" in await peer.request("initialize", INIT["v2"])
            peer.process.send_signal(signal.SIGTERM)
            return await asyncio.wait_for(peer.process.wait(), 15)

    code = asyncio.run(talk())
    assert code == 128 + signal.SIGTERM
    assert len(pids_in(pids)) == 2
    assert_all_gone(pids_in(pids))


def test_bad_command_lines_are_one_line_and_exit_2() -> None:
    for args in ([], ["--"], ["--", "x", "--"], ["--init-timeout", "0", "--", "x"], ["--", "python 'unclosed"]):
        out = subprocess.run([*CONDUCTOR, *args], capture_output=True, text=True, timeout=30, env=ENV)
        assert out.returncode == 2 and "Traceback" not in out.stderr, (args, out.stderr)
    out = subprocess.run([*CONDUCTOR, "--", "/nonexistent/agent"], capture_output=True, text=True, timeout=30, env=ENV)
    assert out.returncode == 1 and "cannot start member 1" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_the_agents_requests_cross_two_proxies_and_their_answers_come_back(version: str, tmp_path: Path) -> None:
    """The coding agent asks permission (and, in v1, reads the file through the client) across the chain."""

    def edit(command: list[str]) -> subprocess.CompletedProcess[str]:
        (tmp_path / "a.py").write_text("x = 1\n")
        args = ["--protocol", version] if version == "v1" else []
        prompt = f"rename x to y in {tmp_path / 'a.py'}"
        return subprocess.run(
            [
                PY,
                str(ROOT / "examples" / "client.py"),
                *args,
                "--yes",
                "--timeout",
                "20",
                "--prompt",
                prompt,
                "--",
                *command,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=ENV,
            cwd=tmp_path,
        )

    coding = [PY, str(ROOT / "examples" / "coding_agent.py")]
    direct = edit(coding)
    through = edit(chain(CONTEXT_PROXY, CONTEXT_PROXY, coding))
    assert direct.returncode == through.returncode == 0, through.stderr
    # the edit runs only once the client allowed it: the permission request went out and its answer came back
    assert "[edit] Rename x to y: completed" in through.stdout and through.stdout == direct.stdout


def test_sigterm_to_a_proxy_on_its_own_stops_the_agents_group(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    agent = ["sh", "-c", f'sleep 300 & echo $! >> "{pids}"; echo $$ >> "{pids}"; exec "$@"', "sh", *ECHO]

    async def talk() -> int | None:
        async with spawned([*CONTEXT_PROXY, "--", *agent]) as peer:
            assert "result" in await peer.request("initialize", INIT["v1"])
            peer.process.send_signal(signal.SIGTERM)
            return await asyncio.wait_for(peer.process.wait(), 15)

    assert asyncio.run(talk()) == 128 + signal.SIGTERM
    assert len(pids_in(pids)) == 2
    assert_all_gone(pids_in(pids))


def test_a_flooding_agent_costs_a_proxy_on_its_own_bounded_memory(tmp_path: Path) -> None:
    """Every update goes through a hook (so through the proxy's queue) toward a client that reads slowly."""
    watcher = script(
        tmp_path,
        "watcher.py",
        """
        from acp_types import proxy
        chain = proxy.Proxy("watcher")
        @chain.on("session/update")
        async def look(params, ctx):
            return None
        chain.main()
        """,
    )
    flood = script(
        tmp_path,
        "flood_agent.py",
        """
        import json
        msg = json.loads(sys.stdin.readline())
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 1}}), flush=True)
        chunk = {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
                 "content": {"type": "text", "text": "y" * 60000}}}
        line = json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": chunk}).encode() + b"\\n"
        for i in range(4000):
            sys.stdout.buffer.write(line)
            sys.stdout.flush()
            with open(sys.argv[1], "w") as progress:
                progress.write(str(i + 1))
        for _ in sys.stdin:
            pass
        """,
    )

    async def talk() -> tuple[int, int]:
        async with spawned([*watcher, "--", *flood, str(tmp_path / "progress")]) as peer:
            assert "result" in await peer.request("initialize", INIT["v1"])
            for _ in range(200):
                assert (await peer.recv())["method"] == "session/update"
            written = await asyncio.to_thread(settled, tmp_path / "progress")  # the client has stopped reading
            assert written < 1000, f"the flood went on ({written} lines) while the client read 200"
            status = Path(f"/proc/{peer.process.pid}/status").read_text()
            peak = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
            read = 200
            while read < 4000:
                assert (await peer.recv())["method"] == "session/update"
                read += 1
            return peak, read

    peak_kib, read = asyncio.run(talk())
    assert read == 4000
    assert peak_kib < 100 * 1024, f"the proxy peaked at {peak_kib} KiB for a 240 MB flood"
