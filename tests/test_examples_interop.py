"""Our examples against the official SDKs, both directions, over real pipes.

- The SDKs' clients drive examples/echo_agent.py and examples/coding_agent.py: the TypeScript SDK
  2.4.0 in v1 and in v2 (its experimental v2 API, unstable surface for archive), the Python SDK
  0.12.1 in v1. In v2 that is the session surface: new, a streamed prompt whose answer carries the
  ``messageId`` of the user message the turn inserts, cancel (while a permission is asked), list
  (the ``cwd`` and ``archived`` filters), archive and unarchive. In v1 also a file read through the
  client (the agent edits the client's buffer, not the disk) and load with replay.
- examples/client.py drives the SDKs' agents (tests/interop/sdk_tool_agent.py, ts/agent_v1.mjs,
  ts/agent_v2.mjs): streamed text, a tool call behind a permission, a turn ended by ``--timeout``'s
  ``session/cancel``; asking v2 of a v1 agent falls back. ``acp_types.client`` drives the TypeScript
  v2 agent through list (one session a page: the pager follows the cursors), archive and unarchive.

The SDK peers are ours, small files under tests/interop/. The environments are made as in
tests/test_connection_interop.py (.venv-interop from tests/interop/requirements.txt; npm into
tests/interop/ts/node_modules); without node/npm the TypeScript part is skipped, except under CI=true.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _venvs import ensure_venv

from acp_types import client, connection, v2

ROOT = Path(__file__).resolve().parents[1]
INTEROP = ROOT / "tests" / "interop"
TS_DIR = INTEROP / "ts"
SDK_VENV = ROOT / ".venv-interop"
ECHO = [sys.executable, str(ROOT / "examples" / "echo_agent.py")]
CODER = [sys.executable, str(ROOT / "examples" / "coding_agent.py")]
CLIENT = [sys.executable, str(ROOT / "examples" / "client.py")]
IN_CI = os.environ.get("CI", "").lower() == "true"


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90, cwd=ROOT)


@pytest.fixture(scope="module")
def sdk_python() -> str:
    return ensure_venv(SDK_VENV, sys.executable, INTEROP / "requirements.txt", timeout=300)


@pytest.fixture(scope="module")
def node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        message = "node and npm are not on PATH: skipped the interop tests with the TypeScript SDK"
        if IN_CI:
            pytest.fail(message + " (CI=true requires them)")
        pytest.skip(message)
    if not (TS_DIR / "node_modules" / "@agentclientprotocol" / "sdk").exists():
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent"], cwd=TS_DIR, check=True, timeout=300)
    return node


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "a.py"
    path.write_text("x = 1\nprint(x)\n")
    return path


# -- the SDKs' clients drive our agents -----------------------------------------------------------


def test_typescript_v2_client_drives_our_echo_agent(node: str) -> None:
    out = _run([node, str(TS_DIR / "client_v2.mjs"), "echo", "hi  there", "--", *ECHO])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "protocol 2, archive offered",
        "acknowledged; states running idle; stop end_turn",  # the answer's messageId is the user message's
        "text hi  there",
        "list cwd: true",
        "list all: 2",
        "archived: hidden true, only true, other listed true",
        "unarchived: listed true",
    ]


def test_typescript_v2_client_drives_our_coding_agent(node: str, source: Path) -> None:
    out = _run([node, str(TS_DIR / "client_v2.mjs"), "coder", str(source), "--", *CODER])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "protocol 2, archive offered",
        "acknowledged; states running requires_action running idle; stop end_turn",
        "tools pending completed pending in_progress completed; diff true",  # v2's diff: changes and a git patch
        f"text Renamed 2 occurrences of `x` to `y` in {source}.",
        "cancelled: states running requires_action idle; stop cancelled; tools pending completed pending in_progress",
    ]


def test_typescript_v1_client_drives_our_echo_agent(node: str) -> None:
    out = _run([node, str(TS_DIR / "client_v1.mjs"), "echo", "hi  there", "--", *ECHO])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "protocol 1",
        "stop end_turn",
        "text hi  there",
        "a new message id each turn: true",
        "list cwd: true",
        "archived: hidden true, only true, others 1",
        "load replays: hi  therehi  there",  # both turns' answers
    ]


def test_typescript_v1_client_drives_our_coding_agent(node: str, source: Path) -> None:
    out = _run([node, str(TS_DIR / "client_v1.mjs"), "coder", str(source), "--", *CODER])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "protocol 1",
        "stop end_turn; tools pending completed pending in_progress completed; diff of the buffer true",
        f"text Renamed 3 occurrences of `x` to `y` in {source}.",  # the client's buffer, not the disk
        "cancelled: stop cancelled; tools pending completed pending in_progress",
    ]


def test_python_sdk_client_drives_our_coding_agent(sdk_python: str, source: Path) -> None:
    out = _run([sdk_python, str(INTEROP / "sdk_coder_client.py"), str(source), "--", *CODER])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "protocol 1",
        "stop end_turn; tools pending completed pending in_progress completed; diff of the buffer True",
        f"text Renamed 3 occurrences of `x` to `y` in {source}.",
        "cancelled: stop cancelled; tools pending completed pending in_progress",
        "listed True",
    ]


# -- our client drives the SDKs' agents -----------------------------------------------------------

SCENARIOS = {
    "hi  you": ("hi  you\n", ""),
    "tool": ("[edit] Touch a file: pending\n[edit] Touch a file: completed\ntouched\n", ""),
    "wait": ("working\n(timed out: cancelling)\n", "(the turn ended: cancelled)\n"),
}


def _agent(name: str, sdk_python: str | None, node: str | None) -> list[str]:
    if name == "python-v1":
        assert sdk_python is not None
        return [sdk_python, str(INTEROP / "sdk_tool_agent.py")]
    assert node is not None
    return [node, str(TS_DIR / ("agent_v1.mjs" if name == "ts-v1" else "agent_v2.mjs"))]


CASES = [(agent, "v2", prompt) for agent in ("python-v1", "ts-v1", "ts-v2") for prompt in SCENARIOS]
CASES += [(agent, "v1", "tool") for agent in ("python-v1", "ts-v1")]  # v1 asked directly, beside the fallback


@pytest.mark.parametrize(("agent", "protocol", "prompt"), CASES)
def test_our_client_drives_the_sdk_agents(
    request: pytest.FixtureRequest, agent: str, protocol: str, prompt: str
) -> None:
    sdk = request.getfixturevalue("sdk_python") if agent.startswith("python") else None
    node = request.getfixturevalue("node") if agent.startswith("ts") else None
    out = _run(
        [
            *CLIENT,
            "--protocol",
            protocol,
            "--yes",
            "--timeout",
            "5",  # it bounds starting the agent too (a loaded machine takes seconds to start node)
            "--prompt",
            prompt,
            "--",
            *_agent(agent, sdk, node),
        ]
    )
    stdout, stderr = SCENARIOS[prompt]
    lines, want = out.stdout.splitlines(), stdout.splitlines()
    if prompt == "wait":  # the timeout may come before the agent's first words arrive: either order is right
        lines, want = sorted(lines), sorted(want)
    assert (out.returncode, lines, out.stderr) == (0, want, stderr)


def test_our_session_client_drives_the_typescript_v2_agent(node: str) -> None:
    async def main() -> None:
        async with connection.spawn_agent([node, str(TS_DIR / "agent_v2.mjs")], client.SessionClient) as conn:
            acp = conn.handler
            await conn.initialize(v2.InitializeRequest(protocol_version=2, info={"name": "ours", "version": "1"}))
            assert conn.version == "v2"
            here = [await acp.new_session(str(ROOT)) for _ in range(3)]
            elsewhere = await acp.new_session("/")
            turn = await acp.prompt(here[0], "one two")
            state = acp.states[here[0]]
            assert (turn.stop_reason, [(m.role, m.text) for m in state.messages]) == (
                "end_turn",
                [("user", "one two"), ("agent", "one two")],
            )
            assert state.messages[0].message_id == turn.response.message_id  # the answer names the user message
            listed = [s.session_id async for s in client.list_sessions(conn, cwd=str(ROOT))]  # a page each
            assert listed == here
            await conn.peer.session_archive(v2.ArchiveSessionRequest(session_id=here[1]))
            assert [s.session_id async for s in client.list_sessions(conn)] == [here[0], here[2], elsewhere]
            only = [(s.session_id, s.archived) async for s in client.list_sessions(conn, archived="only")]
            assert only == [(here[1], True)]
            await conn.peer.session_unarchive(v2.UnarchiveSessionRequest(session_id=here[1]))
            assert [s.session_id async for s in client.list_sessions(conn, cwd=str(ROOT))] == here

    asyncio.run(asyncio.wait_for(main(), 60))
