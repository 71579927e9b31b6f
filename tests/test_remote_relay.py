"""``python -m acp_types.remote connect URL``: a remote agent as a local stdio agent (slow: processes).

What goes through the relay works as with a local agent: examples/client.py runs a turn on both
profiles and both versions; the conformance kit gives the echo agent behind the relay the verdicts
it gives the echo agent itself; the tap in front records the exchange. And its ends: stdin's end
closes it (exit 0), SIGTERM too, the server going away mid-turn is exit 1, one line, and an error
answer for the request in flight; a token is sent, a wrong one is one line; an oversized line is
answered -32600 as the stdio connection answers it; bad usage is one line and exit 2.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from acp_types import conformance
from acp_types.conformance import _agent

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "generated")}
ECHO = [PY, str(ROOT / "examples" / "echo_agent.py")]
RELAY = [PY, "-m", "acp_types.remote", "connect"]
INIT = {
    "v1": {"protocolVersion": 1, "clientCapabilities": {}},
    "v2": {"protocolVersion": 2, "info": {"name": "test", "version": "1"}},
}


@contextmanager
def server(target: str = "examples/echo_agent.py:Echo", env: dict[str, str] | None = None, *args: str) -> Iterator[Any]:
    """A ``remote serve`` process on a free port; yields (its base http URL, the process)."""
    cmd = [PY, "-m", "acp_types.remote", "serve", target, "--listen", "127.0.0.1:0", *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env or ENV, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"on (http://\S+)", line)
        assert found, line
        yield found.group(1), proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)


def url_of(base: str, profile: str) -> str:
    return base if profile == "http" else "ws" + base[4:]


def relay(url: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*RELAY, url, *extra],
        cwd=ROOT,
        env=env or ENV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def receive(proc: subprocess.Popen[bytes], rid: Any) -> dict[str, Any]:
    """The next message from the relay answering ``rid`` (notifications before it are skipped)."""
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, "the relay ended"
        message = json.loads(line)
        if message.get("id") == rid and "method" not in message:
            return dict(message)


def request(rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


@pytest.mark.parametrize("version", ["v2", "v1"])
@pytest.mark.parametrize("profile", ["ws", "http"])
def test_the_example_client_runs_a_turn_through_the_relay(profile: str, version: str, tmp_path: Path) -> None:
    with server() as (base, _):
        out = subprocess.run(
            [PY, str(ROOT / "examples" / "client.py"), "--protocol", version, "--timeout", "20"]
            + ["--prompt", "hello through the relay", "--", *RELAY, url_of(base, profile)],
            capture_output=True,
            text=True,
            timeout=60,
            env=ENV,
            cwd=tmp_path,
        )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "hello through the relay\n"  # the echo agent's reply, streamed back through the relay


@pytest.mark.parametrize("profile", ["ws", "http"])
def test_the_kit_gives_the_relayed_echo_agent_the_verdicts_of_the_echo_agent(profile: str) -> None:
    checks = conformance.checks("agent")
    fast = _agent.Options(timeout=3, turn_timeout=3, long_prompt="Count: " + " ".join(map(str, range(1, 1501))))
    os.environ["PYTHONPATH"] = ENV["PYTHONPATH"]
    with server() as (base, _):

        async def both() -> tuple[Any, Any]:
            direct, _ = await conformance.run("agent", ECHO, ["v1", "v2"], checks, fast)
            relayed, _ = await conformance.run("agent", [*RELAY, url_of(base, profile)], ["v1", "v2"], checks, fast)
            return direct, relayed

        direct, relayed = asyncio.run(both())
    assert len({r.key for r in direct if r.verdict == "SUCCESS"}) > 50
    verdicts = {(r.version, r.key): r.verdict for r in direct}
    wrong = [
        f"{r.version} {r.key}: {r.verdict} (direct: {verdicts.get((r.version, r.key))}) {r.detail}"
        for r in relayed
        if verdicts.get((r.version, r.key)) != r.verdict
    ]
    assert {r.version for r in relayed} == {"v1", "v2"}
    assert not wrong, "\n".join(wrong)


def test_the_tap_in_front_of_the_relay_records_the_exchange(tmp_path: Path) -> None:
    record = tmp_path / "tap.jsonl"
    with server() as (base, _):
        out = subprocess.run(
            [PY, str(ROOT / "examples" / "client.py"), "--timeout", "20", "--prompt", "tapped words", "--"]
            + [PY, "-m", "acp_types.tap", "--out", str(record), "--", *RELAY, "ws" + base[4:]],
            capture_output=True,
            text=True,
            timeout=60,
            env=ENV,
            cwd=tmp_path,
        )
    assert out.returncode == 0, out.stderr
    entries = [json.loads(line) for line in record.read_text().splitlines()[1:]]
    sent = [json.loads(e["line"]) for e in entries if e.get("from") == "client"]
    came = [json.loads(e["line"]) for e in entries if e.get("from") == "agent"]
    assert [m.get("method") for m in sent][:3] == ["initialize", "session/new", "session/prompt"]
    prompt_id = sent[2]["id"]
    assert any(m.get("id") == prompt_id and "result" in m for m in came)  # the turn's answer, through the relay
    assert "tapped words" in json.dumps(came)
    assert entries[-1].get("exit") == 0


def test_stdin_ending_closes_the_relay_after_the_answers(tmp_path: Path) -> None:
    with server() as (base, _):
        for profile in ("ws", "http"):
            lines = [request(1, "initialize", INIT["v1"]), request(2, "session/new", {"cwd": "/", "mcpServers": []})]
            out = subprocess.run(
                [*RELAY, url_of(base, profile)],
                input="".join(json.dumps(m) + "\n" for m in lines),
                capture_output=True,
                text=True,
                timeout=30,
                env=ENV,
            )
            assert out.returncode == 0, out.stderr
            answers = [json.loads(line) for line in out.stdout.splitlines()]
            assert [a["id"] for a in answers] == [1, 2] and "sessionId" in answers[1]["result"], out.stdout
            assert out.stderr == ""


@pytest.mark.parametrize("profile", ["ws", "http"])
def test_the_server_going_away_mid_turn_ends_the_relay_with_an_error_for_the_turn(profile: str) -> None:
    with server("tests/interop/remote_agents.py:Loud") as (base, srv):
        proc = relay(url_of(base, profile))
        try:
            send(proc, request(1, "initialize", INIT["v1"]))
            receive(proc, 1)
            send(proc, request(2, "session/new", {"cwd": "/", "mcpServers": []}))
            sid = receive(proc, 2)["result"]["sessionId"]
            send(proc, request(3, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "wait"}]}))
            send(proc, request(4, "session/list", {}))  # answered: the turn is the only thing in flight
            receive(proc, 4)
            srv.kill()
            srv.wait(10)
            answer = receive(proc, 3)
            assert answer["error"]["code"] == -32603 and "gone" in answer["error"]["message"]
            assert proc.wait(20) == 1
            assert proc.stderr is not None
            err = proc.stderr.read().decode()
            assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)


@pytest.mark.parametrize("profile", ["ws", "http"])
def test_a_token_is_sent_and_a_wrong_one_is_one_clear_line(profile: str) -> None:
    env = {**ENV, "RELAY_TOKEN": "s3cret-token", "WRONG_TOKEN": "nope"}
    with server("examples/echo_agent.py:Echo", env, "--token-env", "RELAY_TOKEN") as (base, _):
        line = json.dumps(request(1, "initialize", INIT["v2"])) + "\n"
        good = subprocess.run(
            [*RELAY, url_of(base, profile), "--token-env", "RELAY_TOKEN"],
            input=line,
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
        )
        assert good.returncode == 0, good.stderr
        assert json.loads(good.stdout)["result"]["protocolVersion"] == 2
        for args in (["--token-env", "WRONG_TOKEN"], []):
            bad = subprocess.run(
                [*RELAY, url_of(base, profile), *args], input=line, capture_output=True, text=True, timeout=30, env=env
            )
            assert bad.returncode == 1, bad.stderr
            assert bad.stderr.count("\n") == 1 and "401" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr


def test_an_oversized_line_is_answered_as_the_stdio_connection_answers_it() -> None:
    with server() as (base, _):
        proc = relay("ws" + base[4:], "--max-message-size", "2000")
        try:
            send(proc, request(1, "initialize", INIT["v1"]))
            receive(proc, 1)
            send(proc, request(7, "session/new", {"cwd": "/" + "x" * 3000, "mcpServers": []}))
            answer = receive(proc, 7)
            assert answer["error"]["code"] == -32600 and "longer than 2000 bytes" in answer["error"]["message"]
            assert proc.stdin is not None
            proc.stdin.write(b"not json\n")
            proc.stdin.flush()
            assert receive(proc, None)["error"]["code"] == -32700
            send(proc, request(8, "session/new", {"cwd": "/", "mcpServers": []}))  # the relay goes on
            assert "sessionId" in receive(proc, 8)["result"]
        finally:
            proc.kill()
            proc.wait(10)


def test_sigterm_ends_the_relay_cleanly() -> None:
    with server() as (base, _):
        proc = relay(base)
        try:
            send(proc, request(1, "initialize", INIT["v1"]))
            receive(proc, 1)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(20) == 0
            assert proc.stderr is not None and proc.stderr.read() == b""
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["ftp://example.com"], "an ACP URL is"),
        (["ws://127.0.0.1:1/acp", "--header", "nocolon"], "is not NAME:VALUE"),
        (["ws://127.0.0.1:1/acp", "--token-env", "NO_SUCH_VAR_X"], "unset or empty"),
        ([], "required: URL"),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    out = subprocess.run([*RELAY, *args], capture_output=True, text=True, timeout=20, env=ENV, stdin=subprocess.DEVNULL)
    assert out.returncode == 2 and says in out.stderr and out.stderr.count("\n") == 1, out.stderr


def test_an_unreachable_server_is_exit_1_and_one_line() -> None:
    line = json.dumps(request(1, "initialize", INIT["v1"])) + "\n"
    for url in ("ws://127.0.0.1:1/acp", "http://127.0.0.1:1/acp"):
        out = subprocess.run([*RELAY, url], input=line, capture_output=True, text=True, timeout=30, env=ENV)
        assert out.returncode == 1 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr, out.stderr


def test_stdin_from_dev_null_is_an_empty_input() -> None:
    with server() as (base, _):
        out = subprocess.run(
            [*RELAY, base], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30, env=ENV
        )
    assert out.returncode == 0 and out.stdout == "" and out.stderr == "", out.stderr


def test_the_kit_checks_a_remote_agent_by_its_url(tmp_path: Path) -> None:
    """``conformance agent --url URL`` runs the kit through the relay; options after -- go to the relay."""
    report = tmp_path / "report.json"
    with server() as (base, _):
        done = subprocess.run(
            [PY, "-m", "acp_types.conformance", "agent", "--url", url_of(base, "ws"), "--suite", "setup"]
            + ["--json", str(report), "--", "--open-timeout", "5"],
            cwd=ROOT,
            env=ENV,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(report.read_text("utf-8"))
    assert data["command"][-4:] == ["connect", url_of(base, "ws"), "--open-timeout", "5"]
    assert data["summary"]["MUST"]["SUCCESS"] > 10 and data["summary"]["MUST"]["FAILURE"] == 0
    refused = subprocess.run(
        [PY, "-m", "acp_types.conformance", "client", "--url", "ws://127.0.0.1:1/acp", "--", "x"],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "agent mode" in refused.stderr
