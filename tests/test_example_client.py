"""examples/client.py over real pipes: the transcript it prints comes from the session state, in v1 and v2.

Against examples/echo_agent.py, examples/coding_agent.py and the agents of
tests/client_agents.py (one that asks to authenticate, one that never ends
its turn by itself, one that fails, one that rewrites its message).
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CLIENT = [sys.executable, str(ROOT / "examples" / "client.py")]
ECHO = [sys.executable, str(ROOT / "examples" / "echo_agent.py")]
CODER = [sys.executable, str(ROOT / "examples" / "coding_agent.py")]
AGENTS = [sys.executable, str(ROOT / "tests" / "client_agents.py")]
VERSIONS = pytest.mark.parametrize("protocol", ["v1", "v2"])


def client(protocol: str, *args: str, agent: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLIENT, "--protocol", protocol, *args, "--", *agent], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


@VERSIONS
def test_the_echo_is_printed_as_it_streams(protocol: str) -> None:
    out = client(protocol, "--prompt", "streamed in  pieces", agent=ECHO)
    assert (out.returncode, out.stdout, out.stderr) == (0, "streamed in  pieces\n", "")


@VERSIONS
@pytest.mark.parametrize("allow", [False, True])
def test_the_coding_agent_s_tool_calls_are_shown_as_their_status_changes(
    protocol: str, allow: bool, tmp_path: Path
) -> None:
    source = tmp_path / "a.py"
    source.write_text("x = 1\nprint(x)\n")
    out = client(protocol, *(["--yes"] if allow else []), "--prompt", f"rename x to y in {source}", agent=CODER)
    assert (out.returncode, out.stderr) == (0, "")
    last = "completed" if allow else "failed"
    answer = f"Renamed 2 occurrences of `x` to `y` in {source}." if allow else "Left the file as it was."
    assert out.stdout.splitlines() == [
        f"[read] Read {source}: pending",
        f"[read] Read {source}: completed",
        "[edit] Rename x to y: pending",
        "[edit] Rename x to y: in_progress",
        f"[edit] Rename x to y: {last}",
        answer,
    ]
    assert source.read_text() == "x = 1\nprint(x)\n"  # the agent proposes the edit, it writes nothing


@VERSIONS
def test_an_agent_that_asks_to_authenticate_gets_its_first_method(protocol: str) -> None:
    out = client(protocol, "--prompt", "after login", agent=[*AGENTS, "auth"])
    assert (out.returncode, out.stdout) == (0, "after login\n")
    assert out.stderr == "the agent asks to authenticate; using 'Token'\n"


@VERSIONS
def test_the_timeout_cancels_the_turn_and_waits_for_its_end(protocol: str) -> None:
    out = client(protocol, "--timeout", "0.2", agent=[*AGENTS, "slow"])
    # the timeout may come before the agent's first words arrive: either order is right
    assert (out.returncode, sorted(out.stdout.splitlines())) == (0, ["(timed out: cancelling)", "working"])
    assert out.stderr == "(the turn ended: cancelled)\n"


@VERSIONS
def test_ctrl_c_cancels_the_turn(protocol: str) -> None:
    proc = subprocess.Popen(
        [*CLIENT, "--protocol", protocol, "--", *AGENTS, "slow"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    seen = b""
    with selectors.DefaultSelector() as sel:  # wait until the turn is under way, then interrupt
        sel.register(proc.stdout, selectors.EVENT_READ)
        while b"working" not in seen and sel.select(timeout=60):
            chunk = os.read(proc.stdout.fileno(), 1024)
            if not chunk:
                break
            seen += chunk
    assert seen == b"working", seen
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=60)
    assert (proc.returncode, seen + rest) == (0, b"working\n(interrupted: cancelling)\n")
    assert err == b"(the turn ended: cancelled)\n"


@VERSIONS
def test_a_peer_s_error_is_one_line(protocol: str) -> None:
    out = client(protocol, agent=[*AGENTS, "fails"])
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr == "error from the agent: the model is unavailable (code -32603) ({'retry': False})\n"


def test_a_message_the_agent_replaces_is_shown_again_not_glued_on() -> None:
    out = client("v2", agent=[*AGENTS, "rewrites"])
    assert (out.returncode, out.stdout, out.stderr) == (0, "draft\n(rewritten) final answer\n", "")
