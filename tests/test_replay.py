"""Replay (``python -m acp_types.replay``): a recording becomes a mock agent or a mock client, over real pipes.

A session of examples/coding_agent.py driven by examples/client.py is
recorded with the tap, here and in tests/fixtures/recordings/ (refreshed with
``ACP_REFRESH_RECORDINGS=1 pytest tests/test_replay.py -k committed``): the
replayed agent gives the same client the same bytes, hence the same output; a
client that strays, stops early or says nothing gets a clear error; the mock
client replays the client's side against the agent and says where an agent
strays. The mapping of ids and the reading of recordings are tested in process.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_types import replay

pytestmark = pytest.mark.slow  # spawns the example client, agents, the tap and the replay

ROOT = Path(__file__).resolve().parents[1]
RECORDINGS = ROOT / "tests" / "fixtures" / "recordings"
PY = sys.executable
CLIENT = [PY, str(ROOT / "examples" / "client.py")]
CODER = [PY, str(ROOT / "examples" / "coding_agent.py")]
ECHO = [PY, str(ROOT / "examples" / "echo_agent.py")]
TAP = [PY, "-m", "acp_types.tap"]
REPLAY = [PY, "-m", "acp_types.replay"]
VERSIONS = pytest.mark.parametrize("protocol", ["v1", "v2"])


def environ(tmp_path: Path) -> dict[str, str]:
    """The package from generated/, and the agent's session store in tmp_path (not shared between runs)."""
    env = {k: v for k, v in os.environ.items() if k not in ("ACP_TYPES_STORE", "ACP_TEST_KEY")}
    return {**env, "PYTHONPATH": str(ROOT / "generated"), "XDG_STATE_HOME": str(tmp_path / "state")}


def run_client(
    tmp_path: Path, protocol: str, prompt: str, agent: list[str], *, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLIENT, "--protocol", protocol, "--yes", "--prompt", prompt, "--", *agent],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd or tmp_path,
        env=environ(tmp_path),
    )


def lines(path: Path) -> list[tuple[str, bytes]]:
    """A tap record's lines: (who wrote it, its bytes)."""
    out = []
    for text in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(text)
        if "from" in entry:
            out.append((entry["from"], entry["line"].encode()))
    return out


def exit_of(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8").splitlines()[-1])["exit"]


def record_session(tmp_path: Path, protocol: str) -> tuple[Path, str, subprocess.CompletedProcess[str]]:
    """The client and the coding agent through the tap: the record, the prompt, what the client printed."""
    source = tmp_path / "a.py"
    source.write_text("x = 1\nprint(x)\n")
    out = tmp_path / f"coding-{protocol}.jsonl"
    prompt = f"rename x to y in {source}"
    live = run_client(tmp_path, protocol, prompt, [*TAP, "--out", str(out), "--", *CODER])
    assert live.returncode == 0, live.stderr
    return out, prompt, live


# -- the mock agent ---------------------------------------------------------------


@VERSIONS
def test_a_recorded_session_replays_byte_identically_to_the_same_client(tmp_path: Path, protocol: str) -> None:
    recorded, prompt, live = record_session(tmp_path, protocol)
    again = tmp_path / "again.jsonl"
    replayed = run_client(tmp_path, protocol, prompt, [*TAP, "--out", str(again), "--", *REPLAY, str(recorded)])
    assert (replayed.returncode, replayed.stdout, replayed.stderr) == (live.returncode, live.stdout, live.stderr)
    assert "Renamed 2 occurrences" in replayed.stdout
    # recorded before forwarded: every answer comes after the request it answers, in both directions
    asked: set[tuple[str, str]] = set()
    for side, data in lines(recorded):
        msg = json.loads(data)
        if "method" in msg and "id" in msg:
            asked.add((side, json.dumps(msg["id"])))
        elif "id" in msg:
            assert ("agent" if side == "client" else "client", json.dumps(msg["id"])) in asked, msg
    assert lines(again) == lines(recorded)  # both directions, byte for byte
    assert exit_of(again) == 0  # the replay played the whole recording


def prompt_of(recording: Path) -> str:
    for side, data in lines(recording):
        msg = json.loads(data)
        if side == "client" and msg.get("method") == "session/prompt":
            return str(msg["params"]["prompt"][0]["text"])
    raise AssertionError(f"{recording}: no prompt")


@VERSIONS
def test_the_committed_recordings_replay_to_the_client(tmp_path: Path, protocol: str) -> None:
    fixture = RECORDINGS / f"coding-{protocol}.jsonl"
    expected = RECORDINGS / f"coding-{protocol}.out"
    if os.environ.get("ACP_REFRESH_RECORDINGS"):
        recorded, _prompt, live = record_session(tmp_path, protocol)

        def neutral(text: str) -> str:  # no path of this machine in what is committed
            for path, stand_in in [(str(tmp_path), "/tmp/recording"), (PY, "python"), (str(ROOT) + "/", "")]:
                text = text.replace(path, stand_in)
            return text

        fixture.write_text(neutral(recorded.read_text()))
        expected.write_text(neutral(live.stdout))
    again = tmp_path / "again.jsonl"
    # recorded elsewhere: the client's cwd differs, so it is not compared
    agent = [*TAP, "--out", str(again), "--", *REPLAY, "--ignore", "cwd", str(fixture)]
    replayed = run_client(tmp_path, protocol, prompt_of(fixture), agent)
    assert (replayed.returncode, replayed.stderr) == (0, "")
    assert replayed.stdout == expected.read_text()
    assert [line for line in lines(again) if line[0] == "agent"] == [
        line for line in lines(fixture) if line[0] == "agent"
    ]


# Real agents, recorded offline here with the tap and examples/client.py (tests/fixtures/recordings/README.md):
# codex-acp answers a v2 initialize in v1, asks to log in, streams an error text and ends the turn when
# the client cancels it; claude-agent-acp fails session/new.
REAL = [
    (
        "codex-acp-0.16.0-offline.jsonl",
        0,
        "Falling back from WebSockets to HTTPS transport. stream disconnected before completion: failed to lookup"
        " address information: Name or service not known\n(timed out: cancelling)\n",
        "logging in with 'Use OPENAI_API_KEY'\n(the turn ended: cancelled)\n",
    ),
    (
        "claude-agent-acp-0.23.1-offline.jsonl",
        1,
        "",
        "error from the agent: Internal error (code -32603) ({'details': 'Query closed before response received'})\n",
    ),
]


@pytest.mark.parametrize(("name", "code", "stdout", "stderr"), REAL)
def test_recordings_of_real_agents_replay_to_the_client(
    tmp_path: Path, name: str, code: int, stdout: str, stderr: str
) -> None:
    fixture = RECORDINGS / name
    again = tmp_path / "again.jsonl"
    env = {k: v for k, v in environ(tmp_path).items() if k not in ("CODEX_API_KEY", "OPENAI_API_KEY")}
    replayed = subprocess.run(
        [*CLIENT, "--timeout", "4", "--prompt", "hello", "--", *TAP, "--out", str(again), "--", *REPLAY]
        + ["--ignore", "cwd", str(fixture)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**env, "OPENAI_API_KEY": "sk-dummy"},  # the login codex-acp offered, as when it was recorded
    )
    assert (replayed.returncode, replayed.stdout, replayed.stderr) == (code, stdout, stderr)
    assert [line for line in lines(again) if line[0] == "agent"] == [
        line for line in lines(fixture) if line[0] == "agent"
    ]
    assert exit_of(again) == 0


def test_a_client_that_strays_gets_a_clear_error(tmp_path: Path) -> None:
    recorded, _prompt, _live = record_session(tmp_path, "v2")
    again = tmp_path / "again.jsonl"
    stray = run_client(
        tmp_path, "v2", "rename z to w in /nowhere", [*TAP, "--out", str(again), "--", *REPLAY, str(recorded)]
    )
    assert stray.returncode == 1
    number = next(i for i, text in enumerate(recorded.read_text().splitlines(), 1) if "session/prompt" in text)
    assert f"replay: the client left the recorded path at line {number} of {recorded}:" in stray.stderr
    assert (
        '/params/prompt/0/text: "rename z to w in /nowhere" where the recording has "rename x to y in' in stray.stderr
    )
    assert "  expected: " in stray.stderr and "  came:     " in stray.stderr
    # and the client got it as a JSON-RPC error to its request
    answer = json.loads([data for side, data in lines(again) if side == "agent"][-1])
    assert answer["error"]["code"] == replay.STRAY_CODE and answer["id"] == 3
    assert answer["error"]["data"]["came"].startswith('{"jsonrpc":"2.0","id":3,"method":"session/prompt"')
    assert "error from the agent: replay: not the recorded exchange" in stray.stderr
    assert exit_of(again) == 1


def _pipe(tmp_path: Path, recording: Path, data: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*REPLAY, *args, str(recording)], input=data, capture_output=True, timeout=60, env=environ(tmp_path)
    )


def _write(path: Path, *entries: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


INIT = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
INIT_OK = '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}'
NEW = '{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}'
NEW_OK = '{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s-1"}}'


def tiny(tmp_path: Path) -> Path:
    return _write(
        tmp_path / "tiny.jsonl",
        {"acp_tap": 1, "command": ["agent"], "cap": 100},
        {"t": 0.1, "from": "client", "line": INIT},
        {"t": 0.2, "from": "agent", "line": INIT_OK},
        {"t": 0.3, "from": "client", "line": NEW},
        {"t": 0.4, "from": "agent", "line": NEW_OK},
        {"t": 0.5, "exit": 0},
    )


def test_the_mock_agent_maps_the_client_s_request_ids(tmp_path: Path) -> None:
    client = INIT.replace('"id":0', '"id":"a"') + "\n" + NEW.replace('"id":1', '"id":7') + "\n"
    done = _pipe(tmp_path, tiny(tmp_path), client.encode())
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout.decode().splitlines() == [
        INIT_OK.replace('"id":0', '"id":"a"'),
        NEW_OK.replace('"id":1', '"id":7'),
    ]


def test_a_client_that_stops_early_or_goes_on_is_told_so(tmp_path: Path) -> None:
    early = _pipe(tmp_path, tiny(tmp_path), (INIT + "\n").encode())
    assert early.returncode == 1
    assert b"left the recorded path at line 4 of" in early.stderr and b"the client stopped early" in early.stderr
    more = _pipe(tmp_path, tiny(tmp_path), (INIT + "\n" + NEW + "\n" + NEW.replace('"id":1', '"id":2') + "\n").encode())
    assert more.returncode == 1 and b"the recording ends here" in more.stderr
    error = json.loads(more.stdout.decode().splitlines()[-1])
    assert error["id"] == 2 and error["error"]["code"] == replay.STRAY_CODE


def test_a_client_that_says_nothing_is_told_so_after_the_timeout(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*REPLAY, "--timeout", "0.5", str(tiny(tmp_path))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environ(tmp_path),
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()  # stdin stays open: the replay gives up by itself
    err = proc.stderr.read()
    proc.wait(timeout=60)
    proc.stdin.close()
    assert proc.returncode == 1 and b"nothing came within 0.5 s" in err
    assert json.loads(out)["error"]["code"] == replay.STRAY_CODE


def test_loose_and_ignore_compare_less(tmp_path: Path) -> None:
    other = NEW.replace('"cwd":"/"', '"cwd":"/elsewhere"')
    assert _pipe(tmp_path, tiny(tmp_path), f"{INIT}\n{other}\n".encode()).returncode == 1
    assert _pipe(tmp_path, tiny(tmp_path), f"{INIT}\n{other}\n".encode(), "--ignore", "cwd").returncode == 0
    assert _pipe(tmp_path, tiny(tmp_path), f"{INIT}\n{other}\n".encode(), "--loose").returncode == 0
    wrong = NEW.replace("session/new", "session/load")
    done = _pipe(tmp_path, tiny(tmp_path), f"{INIT}\n{wrong}\n".encode(), "--loose")
    assert done.returncode == 1 and b"request session/load where the recording has request session/new" in done.stderr


def test_malformed_non_utf8_and_partial_lines_replay_as_recorded(tmp_path: Path) -> None:
    recording = _write(
        tmp_path / "odd.jsonl",
        {"acp_tap": 1, "command": ["agent"], "cap": 100},
        {"t": 0.1, "from": "client", "line": "not json"},
        {"t": 0.2, "from": "agent", "base64": "//4A"},
        {"t": 0.3, "from": "agent", "line": "}{"},
        {"t": 0.4, "from": "agent", "line": "last", "partial": True},
    )
    done = _pipe(tmp_path, recording, b"not json\n")
    assert (done.returncode, done.stdout) == (0, b"\xff\xfe\x00\n}{\nlast")


# -- the mock client ----------------------------------------------------------------


def test_the_mock_client_replays_the_client_s_side_against_the_agent(tmp_path: Path) -> None:
    recorded, _prompt, _live = record_session(tmp_path, "v2")
    done = subprocess.run(
        [*REPLAY, "--client", str(recorded), "--", *CODER],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=environ(tmp_path),
    )
    # the agent makes up new session, message and tool call ids: mapped to the recorded ones
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    assert done.stderr.startswith("replay: the agent followed the recording (")


def test_the_mock_client_says_where_the_agent_strays(tmp_path: Path) -> None:
    recorded, _prompt, _live = record_session(tmp_path, "v2")
    done = subprocess.run(
        [*REPLAY, "--client", str(recorded), "--", *ECHO],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=environ(tmp_path),
    )
    assert done.returncode == 1
    assert f"replay: the agent left the recorded path at line 3 of {recorded}: /result/info/name:" in done.stderr
    assert '"echo-agent" where the recording has "coding-agent"' in done.stderr


def test_a_kit_transcript_replays_as_a_mock_client(tmp_path: Path) -> None:
    kit = subprocess.run(
        [
            PY,
            "-m",
            "acp_types.conformance",
            "agent",
            "--protocol",
            "v1",
            "--case",
            "SET-02",
            "--transcript",
            str(tmp_path / "t"),
            "--",
            *CODER,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=environ(tmp_path),
    )
    assert kit.returncode == 0, kit.stdout + kit.stderr
    transcript = tmp_path / "t" / "agent-v1.jsonl"
    records = replay.load(str(transcript))
    assert records[0].side == "client" and json.loads(records[0].data)["method"] == "initialize"
    done = subprocess.run(
        [*REPLAY, "--client", "--ignore", "cwd", str(transcript), "--", *CODER],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=environ(tmp_path / "fresh"),
    )
    assert done.returncode == 0, done.stderr


# -- in process: reading recordings, mapping ids ----------------------------------------


def test_the_live_ids_are_bound_to_the_recorded_ones_and_must_stay_so() -> None:
    rec = [
        replay.Record(1, "client", b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}'),
        replay.Record(2, "agent", b'{"jsonrpc":"2.0","id":1,"result":{"sessionId":"rec-s"}}'),
        replay.Record(
            3, "client", b'{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"rec-s"}}'
        ),
        replay.Record(
            4, "agent", b'{"jsonrpc":"2.0","id":9,"method":"fs/read_text_file","params":{"sessionId":"rec-s"}}'
        ),
    ]
    player = replay.Replayer(rec, "client")  # the mock client: the agent makes up its ids
    assert player.outgoing(rec[0]) == rec[0].data  # nothing mapped yet: the recorded bytes as they are
    assert player.compare(rec[1], b'{"jsonrpc":"2.0","id":1,"result":{"sessionId":"live-s"}}', 56) is None
    sent = json.loads(player.outgoing(rec[2]))
    assert sent["params"]["sessionId"] == "live-s" and sent["id"] == 2
    live = b'{"jsonrpc":"2.0","id":"x","method":"fs/read_text_file","params":{"sessionId":"live-s"}}'
    assert player.compare(rec[3], live, len(live)) is None  # the agent's own request id is bound too
    answer = replay.Record(5, "client", b'{"jsonrpc":"2.0","id":9,"result":{}}')
    assert json.loads(player.outgoing(answer))["id"] == "x"
    wrong = b'{"jsonrpc":"2.0","id":"y","method":"fs/read_text_file","params":{"sessionId":"other"}}'
    fresh = replay.Replayer(rec, "client")
    fresh.compare(rec[1], b'{"jsonrpc":"2.0","id":1,"result":{"sessionId":"live-s"}}', 56)
    why = fresh.compare(rec[3], wrong, len(wrong))
    assert why is not None and why.startswith("/params/sessionId:") and "live-s" in why


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data

    async def read(self, n: int) -> bytes:
        chunk, self.data = self.data[:n], self.data[n:]
        return chunk


class _Writer:
    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.lines.append(data)

    async def drain(self) -> None:
        return None


@pytest.mark.parametrize(("pace", "gaps"), [(0.0, []), (1.0, [2.0, 0.5]), (2.0, [4.0, 1.0])])
def test_pace_waits_the_recorded_gaps_before_each_line_sent(pace: float, gaps: list[float]) -> None:
    rec = [
        replay.Record(1, "client", b'{"jsonrpc":"2.0","id":0,"method":"a"}', t=10.0),
        replay.Record(2, "agent", b'{"jsonrpc":"2.0","id":0,"result":{}}', t=12.0),
        replay.Record(3, "agent", b'{"jsonrpc":"2.0","method":"n"}', t=12.5),
    ]
    player = replay.Replayer(rec, "agent", pace=pace)
    asked: list[float] = []

    async def sleep(delay: float) -> None:  # the clock does not move: each gap is asked for whole
        asked.append(delay)

    player.sleep = sleep
    writer = _Writer()
    asyncio.run(player.play(_Reader(rec[0].data + b"\n"), writer, None))
    assert writer.lines == [rec[1].data + b"\n", rec[2].data + b"\n"]
    assert len(asked) == len(gaps) and all(want - 0.1 < got <= want for got, want in zip(asked, gaps, strict=True))


def test_ids_of_the_two_sides_are_kept_apart() -> None:
    rec = [
        replay.Record(1, "client", b'{"jsonrpc":"2.0","id":0,"method":"a"}'),
        replay.Record(2, "agent", b'{"jsonrpc":"2.0","id":0,"method":"b"}'),
    ]
    player = replay.Replayer(rec, "agent")
    assert player.compare(rec[0], b'{"jsonrpc":"2.0","id":5,"method":"a"}', 37) is None
    assert json.loads(player.outgoing(rec[1]))["id"] == 0  # the agent's id 0 is not the client's id 0


def test_a_kit_transcript_is_read_by_runs(tmp_path: Path) -> None:
    def kit(seq: int, who: str, msg: dict[str, Any]) -> dict[str, Any]:
        return {"seq": seq, "t": seq / 10, "from": who, "line": json.dumps(msg)}

    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    path = _write(
        tmp_path / "agent-v2.jsonl",
        kit(1, "kit", init),
        kit(2, "program", {"jsonrpc": "2.0", "id": 1, "result": {}}),
        kit(3, "kit", {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {}}),
        kit(4, "kit", init),  # the kit started the program again
        kit(5, "program", {"jsonrpc": "2.0", "id": 1, "result": {"again": True}}),
    )
    first = replay.load(str(path))
    assert [(r.number, r.side) for r in first] == [(1, "client"), (2, "agent"), (3, "client")]
    assert [r.number for r in replay.load(str(path), 2)] == [4, 5]
    with pytest.raises(replay.RecordingError, match="no run 3 in it"):
        replay.load(str(path), 3)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty"),
        ("{not json\n", "1: not JSON"),
        ('{"acp_tap": 2}\n', "tap format 2"),
        ('{"acp_tap": 1}\n{"t": 0, "from": "editor", "line": "x"}\n', "'from' is neither"),
        ('{"acp_tap": 1}\n{"t": 0, "from": "agent", "base64": "***"}\n', "'base64' is not base64"),
        ('{"seq": 1, "from": "kit", "line": "{}"}\n', "no initialize request"),
    ],
)
def test_an_unreadable_recording_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, says: str
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(text)
    assert replay.main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and err.startswith("replay: ")


def test_usage_errors_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tiny(tmp_path)
    for args, says in [
        ([str(tmp_path / "missing.jsonl")], "cannot read it"),
        (["--client", str(path)], "--client needs the agent"),
        ([str(path), "--", "agent"], "for --client only"),
        (["--run", "0", str(path)], "runs count from 1"),
        (["--pace", "-1", str(path)], "--pace -1.0: must be 0 or more"),
        (["--client", str(path), "--", str(tmp_path / "no-agent")], "cannot start"),
    ]:
        assert replay.main(args) == 2, args
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and says in err, (args, err)
