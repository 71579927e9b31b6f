"""Interop, both directions, with the official SDKs: Python (agent-client-protocol) and TypeScript.

The Python SDK lives in its own venv (.venv-interop, from tests/interop/requirements.txt), never in
.venv or in acp_types' dependencies; the TypeScript SDK is installed with npm into
tests/interop/ts/node_modules (ignored by git). Without node/npm the TypeScript part is skipped
with a message saying so, except under CI=true, where it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _venvs import ensure_venv

ROOT = Path(__file__).resolve().parents[1]
INTEROP = ROOT / "tests" / "interop"
AGENT = [sys.executable, str(ROOT / "examples" / "echo_agent.py")]
CLIENT = [sys.executable, str(ROOT / "examples" / "client.py")]
SDK_VENV = ROOT / ".venv-interop"
TS_DIR = INTEROP / "ts"
IN_CI = os.environ.get("CI", "").lower() == "true"


def _run(cmd: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


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
        print("\n" + message, file=sys.stderr)
        pytest.skip(message)
    if not (TS_DIR / "node_modules" / "@agentclientprotocol" / "sdk").exists():
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent"], cwd=TS_DIR, check=True, timeout=300)
    return node


def test_python_sdk_client_drives_our_agent(sdk_python: str) -> None:
    out = _run([sdk_python, str(INTEROP / "sdk_client.py"), "hi there", "--", *AGENT])
    assert out.returncode == 0, out.stderr
    # the SDK's client got the streamed text, and session/load works (the agent on acp_types.agent replays)
    assert out.stdout.splitlines() == ["protocol 1", "text hi there", "load ok"]


@pytest.mark.parametrize("protocol", ["v2", "v1"])
def test_our_client_drives_the_python_sdk_agent(sdk_python: str, protocol: str) -> None:
    # the SDK speaks v1 only: our client asking v2 accepts its v1 answer
    out = _run(
        [
            *CLIENT,
            "--protocol",
            protocol,
            "--prompt",
            "hi from the sdk",
            "--",
            sdk_python,
            str(INTEROP / "sdk_agent.py"),
        ]
    )
    assert (out.returncode, out.stdout) == (0, "hi from the sdk\n"), out.stderr


def test_typescript_sdk_client_drives_our_agent(node: str) -> None:
    out = _run([node, str(TS_DIR / "client.mjs"), "hi there", "--", *AGENT])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["protocol 1", "text hi there", "load ok"]


@pytest.mark.parametrize("protocol", ["v2", "v1"])
def test_our_client_drives_the_typescript_sdk_agent(node: str, protocol: str) -> None:
    out = _run([*CLIENT, "--protocol", protocol, "--prompt", "hi from ts", "--", node, str(TS_DIR / "agent.mjs")])
    assert (out.returncode, out.stdout) == (0, "hi from ts\n"), out.stderr
