"""The tap (``python -m acp_types.tap``): bytes forwarded unchanged both ways, recorded losslessly, the agent stopped.

The splitter and the recorder are tested in process; the tap itself runs over
real pipes between this test (the editor) and small agents written to
tmp_path.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from acp_types import tap

pytestmark = pytest.mark.slow  # spawns the tap and agents
ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "generated"
ENV = {**os.environ, "PYTHONPATH": str(GENERATED)}
TAP = [sys.executable, "-m", "acp_types.tap"]


# -- in process: lines and records ----------------------------------------------


def test_the_splitter_cuts_lines_across_chunks_and_keeps_at_most_its_cap() -> None:
    splitter = tap.Splitter(cap=4)
    assert splitter.feed(b"ab") == []
    assert splitter.feed(b"c\nlonger than four\n\nxy") == [(b"abc", 3), (b"long", 16), (b"", 0)]
    assert splitter.feed(b"z") == []
    assert splitter.end() == (b"xyz", 3)
    assert splitter.end() is None


def test_a_huge_line_costs_the_splitter_its_cap_not_its_length() -> None:
    splitter = tap.Splitter(cap=10)
    for _ in range(1000):
        assert splitter.feed(b"x" * 10_000) == []
        assert len(splitter._head) <= 10
    assert splitter.feed(b"\n") == [(b"x" * 10, 10_000_000)]


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def line_bytes(record: dict[str, Any]) -> bytes:
    return record["line"].encode() if "line" in record else base64.b64decode(record["base64"])


def test_records_keep_text_as_text_and_other_bytes_as_base64(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with path.open("w", encoding="utf-8") as out:
        recorder = tap.Recorder(out, time.monotonic(), print)
        recorder.header(["agent"], 5)
        recorder.line("client", "é{}".encode(), 4)
        recorder.line("agent", b"\xff\xfe\x00", 3)
        recorder.line("agent", b"12345", 9, partial=True)
        recorder.end(0)
    header, text, raw, cut, end = records(path)
    assert header["acp_tap"] == tap.FORMAT and header["command"] == ["agent"] and header["cap"] == 5
    assert text["from"] == "client" and text["line"] == "é{}" and "base64" not in text
    assert raw["from"] == "agent" and line_bytes(raw) == b"\xff\xfe\x00" and "line" not in raw
    assert cut["truncated"] is True and cut["size"] == 9 and cut["partial"] is True
    assert end["exit"] == 0 and all(r["t"] >= 0 for r in (text, raw, cut, end))


# -- over real pipes --------------------------------------------------------------

AGENT_SCRIPT = """
import os, sys
payload, got = sys.argv[1], sys.argv[2]
with open(payload, "rb") as f:
    sys.stdout.buffer.write(f.read())
    sys.stdout.buffer.flush()
with open(got, "wb") as f:
    while True:
        chunk = os.read(0, 65536)
        if not chunk:
            break
        f.write(chunk)
sys.exit(int(sys.argv[3]))
"""


def test_the_tap_forwards_every_byte_both_ways_and_records_each_line(tmp_path: Path) -> None:
    huge = b'{"jsonrpc":"2.0","method":"x","params":"' + b"a" * (5 << 20) + b'"}'
    to_editor = b'{"jsonrpc":"2.0","id":1,"result":{}}\nnot json {\n' + huge + b"\n\xff\xfe bytes\r\nno newline"
    to_agent = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n}{ malformed\n' + huge + b"\n\n"
    (tmp_path / "payload").write_bytes(to_editor)
    (tmp_path / "agent.py").write_text(AGENT_SCRIPT)
    out = tmp_path / "rec.jsonl"
    agent = [sys.executable, str(tmp_path / "agent.py"), str(tmp_path / "payload"), str(tmp_path / "got"), "3"]
    done = subprocess.run(
        [*TAP, "--out", str(out), "--", *agent], input=to_agent, capture_output=True, env=ENV, timeout=120
    )
    assert done.returncode == 3, done.stderr  # the agent's exit code
    assert done.stdout == to_editor
    assert (tmp_path / "got").read_bytes() == to_agent
    assert done.stderr == b""
    recs = records(out)
    assert recs[0]["command"] == agent and recs[-1]["exit"] == 3
    lines = recs[1:-1]
    sent = [r for r in lines if r["from"] == "client"]
    came = [r for r in lines if r["from"] == "agent"]
    assert [line_bytes(r) for r in sent] == [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
        b"}{ malformed",
        huge[: tap.DEFAULT_CAP],
        b"",
    ]
    assert sent[2]["truncated"] is True and sent[2]["size"] == len(huge)
    assert [line_bytes(r) for r in came] == [
        b'{"jsonrpc":"2.0","id":1,"result":{}}',
        b"not json {",
        huge[: tap.DEFAULT_CAP],
        b"\xff\xfe bytes\r",
        b"no newline",
    ]
    assert "base64" in came[3] and came[4]["partial"] is True
    assert [r["t"] for r in lines] == sorted(r["t"] for r in lines)


def test_the_cap_is_an_option_and_bounds_every_record(tmp_path: Path) -> None:
    (tmp_path / "payload").write_bytes(b"x" * 100_000 + b"\n")
    (tmp_path / "agent.py").write_text(AGENT_SCRIPT)
    out = tmp_path / "rec.jsonl"
    agent = [sys.executable, str(tmp_path / "agent.py"), str(tmp_path / "payload"), str(tmp_path / "got"), "0"]
    done = subprocess.run(
        [*TAP, "--cap", "100", "--out", str(out), "--", *agent],
        input=b"y" * 5000,
        capture_output=True,
        env=ENV,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == b"x" * 100_000 + b"\n"
    assert (tmp_path / "got").read_bytes() == b"y" * 5000
    recs = records(out)[1:-1]
    assert sorted((r["from"], len(r["line"]), r["size"], r.get("partial", False)) for r in recs) == [
        ("agent", 100, 100_000, False),
        ("client", 100, 5000, True),
    ]


SLEEPER = """
import os, subprocess, sys, signal
if sys.argv[1] == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(os.getpid(), child.pid, flush=True)
sys.stdin.buffer.read()
import time; time.sleep(600)
"""


def _group_alive(pgid: int) -> bool:
    """Whether any process of group ``pgid`` is still running (zombies waiting for their reaper do not count)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process table from /proc")
@pytest.mark.parametrize(
    ("sig", "mode"), [(signal.SIGTERM, "plain"), (signal.SIGHUP, "plain"), (signal.SIGTERM, "ignore")]
)
def test_a_signal_to_the_tap_stops_the_agent_s_whole_process_group(tmp_path: Path, sig: int, mode: str) -> None:
    (tmp_path / "sleeper.py").write_text(SLEEPER)
    proc = subprocess.Popen(
        [*TAP, "--", sys.executable, str(tmp_path / "sleeper.py"), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    assert proc.stdout is not None
    agent, child = map(int, proc.stdout.readline().split())  # forwarded through the tap: both are running
    try:
        assert os.getpgid(child) == agent  # the agent leads a group of its own, its child in it
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == 128 + sig
        assert not _group_alive(agent)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(agent, signal.SIGKILL)  # a failing run leaves nothing behind
        proc.kill()
        proc.communicate()


def test_the_tap_s_own_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    cases = [
        ([], "no agent command"),
        (["--", str(tmp_path / "missing-agent")], "cannot start"),
        (["--out", str(tmp_path), "--", "true"], "is a folder"),
        (["--out", str(tmp_path / "no" / "such" / "dir.jsonl"), "--", "true"], "cannot write it"),
        (["--cap", "0", "--", "true"], "--cap 0"),
    ]
    for args, says in cases:
        done = subprocess.run([*TAP, *args], capture_output=True, text=True, env=ENV, timeout=60)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.count("\n") == 1 and says in done.stderr and "Traceback" not in done.stderr, done.stderr


V2_AGENT = """
import json, sys
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method, rid = msg.get("method"), msg.get("id")
    def send(obj):
        sys.stdout.write(json.dumps(obj) + "\\n"); sys.stdout.flush()
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 2, "info": {"name": "a", "version": "1"}, "capabilities": {}, "authMethods": []}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u1"}})
        update = {"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "hi"}}
        send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": update}})
"""


def _messages(*objs: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objs)


def test_show_prints_each_message_and_the_strict_problems_as_they_happen(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(V2_AGENT)
    to_agent = (
        _messages(
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 2, "capabilities": {}}},
            {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}},
            {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "s1", "prompt": []}},
        )
        + b"not json\n"
    )
    done = subprocess.run(
        [*TAP, "--show", "--", sys.executable, str(tmp_path / "agent.py")],
        input=to_agent,
        capture_output=True,
        env=ENV,
        timeout=60,
    )
    shown = done.stderr.decode().splitlines()
    text = "\n".join(shown)
    assert "client -> agent #1 initialize" in text
    assert "agent -> client #1 answer to initialize" in text
    assert "client -> agent #3 session/prompt" in text
    assert "agent -> client session/update agent_message_chunk hi" in text
    assert "client -> agent not JSON: not json" in text
    # the strict session state: no user_message for the prompt, no running/idle state
    problems = [line for line in shown if "!!" in line]
    assert any("turn.user-message" in p for p in problems), text
    assert any("turn.idle" in p for p in problems), text
    assert done.stdout.count(b"\n") == 4  # the agent's lines, forwarded as ever


def test_without_show_the_tap_writes_nothing_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(V2_AGENT)
    to_agent = _messages({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 2}})
    done = subprocess.run(
        [*TAP, "--", sys.executable, str(tmp_path / "agent.py")],
        input=to_agent,
        capture_output=True,
        env=ENV,
        timeout=60,
    )
    assert done.returncode == 0 and done.stderr == b"" and done.stdout.startswith(b'{"jsonrpc": "2.0", "id": 1')


def test_show_remembers_a_bounded_number_of_unanswered_requests_and_sessions() -> None:
    shown: list[str] = []
    shower = tap.Shower(shown.append)
    init = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}'
    shower.message(0.0, "client", init, len(init))
    for i in range(tap.KEEP_PENDING + 100):
        line = json.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "session/prompt", "params": {"sessionId": f"s{i}"}})
        shower.message(0.0, "client", line.encode(), len(line))
    assert len(shower._pending) == tap.KEEP_PENDING
    assert len(shower._states) == tap.KEEP_SESSIONS
    assert len(shown) == tap.KEEP_PENDING + 101  # one line each, no failure to follow


@pytest.mark.parametrize("protocol", ["v1", "v2"])
def test_show_follows_the_coding_agent_s_session_and_finds_no_problem(tmp_path: Path, protocol: str) -> None:
    source = tmp_path / "a.py"
    source.write_text("x = 1\n")
    agent = [sys.executable, str(ROOT / "examples" / "coding_agent.py")]
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "client.py"), "--protocol", protocol, "--yes"]
        + ["--prompt", f"rename x to y in {source}", "--", *TAP, "--show", "--", *agent],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**ENV, "XDG_STATE_HOME": str(tmp_path / "state")},
    )
    assert done.returncode == 0, done.stderr
    shown = done.stderr.splitlines()
    assert f"          (protocol {protocol}: the session state follows each session)" in shown
    assert any("agent -> client #1 session/request_permission" in line for line in shown)
    assert any("session/update tool_call" in line for line in shown)
    assert [line for line in shown if "!!" in line] == []
    # the state followed the turn from the prompt to its end (v1: the prompt's answer, v2: idle)
    assert [line.split(": ", 1)[1] for line in shown if "ended" in line and line.startswith("          (session ")] == [
        "turn 1 ended: end_turn)"
    ]
