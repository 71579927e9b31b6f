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


def client(
    protocol: str, *args: str, agent: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "ACP_TEST_KEY"}
    return subprocess.run(
        [*CLIENT, "--protocol", protocol, *args, "--", *agent],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**environ, **(env or {})},
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
    assert out.stderr == "logging in with 'Token'\n"


@VERSIONS
def test_login_prefers_an_env_var_method_whose_variable_is_set(protocol: str) -> None:
    # the browser login is advertised first and never completes: before, the client took it and hung
    out = client(protocol, "--timeout", "20", agent=[*AGENTS, "logins"], env={"ACP_TEST_KEY": "secret"})
    assert (out.returncode, out.stdout, out.stderr) == (0, "logged in with key\n", "logging in with 'API key'\n")


@VERSIONS
def test_the_timeout_bounds_a_login_that_never_completes(protocol: str) -> None:
    # no variable set: the agent's own (browser) login is the one left, and --timeout ends the wait
    out = client(protocol, "--timeout", "1", agent=[*AGENTS, "logins"])
    login = "authenticate" if protocol == "v1" else "auth/login"
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr == f"logging in with 'Log in with a browser'\nerror: no answer to {login} within 1 s\n"


@VERSIONS
def test_auth_chooses_the_method(protocol: str) -> None:
    env = {"ACP_TEST_KEY": "secret"}
    out = client(protocol, "--timeout", "20", "--auth", "key", agent=[*AGENTS, "logins"], env=env)
    assert (out.returncode, out.stdout, out.stderr) == (0, "logged in with key\n", "logging in with 'API key'\n")
    out = client(protocol, "--auth", "nope", agent=[*AGENTS, "logins"], env=env)
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr == "error: the agent offers no auth method 'nope' (it offers: browser, key)\n"


@VERSIONS
@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("bad-result", "invalid result of 'session/new': sessionId: Input should be a valid string"),
        ("bad-error", "malformed error object: code: Input should be a valid integer"),
    ],
)
def test_an_answer_that_does_not_validate_is_one_line(protocol: str, kind: str, error: str) -> None:
    out = client(protocol, "--timeout", "20", agent=[*AGENTS, kind])
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr == f"error: the agent's answer is not valid ACP: {error}\n"


@VERSIONS
def test_the_timeout_cancels_the_turn_and_waits_for_its_end(protocol: str) -> None:
    out = client(protocol, "--timeout", "3", agent=[*AGENTS, "slow"])  # each step: starting the agent too
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


@VERSIONS
def test_an_agent_that_dies_mid_turn_ends_the_client_with_one_line(protocol: str) -> None:
    # v2: the prompt was acknowledged, then the agent exited: before, the client waited for an idle forever
    out = client(protocol, "--prompt", "die", agent=[sys.executable, str(ROOT / "tests" / "state_agent.py")])
    assert (out.returncode, out.stdout) == (1, "bye\n")
    assert out.stderr.startswith("error: ") and out.stderr.count("\n") == 1, out.stderr
