"""The conformance kit on the official SDKs' programs (tests/interop), against a committed baseline.

The baselines (tests/conformance/baselines/) list what those programs are known to break; the kit
exits 0 while that holds, 1 when a new MUST fails or a listed check passes (the baseline is stale).
Environments as in tests/test_connection_interop.py: the Python SDK in .venv-interop, the
TypeScript SDK under tests/interop/ts/node_modules (skipped without node, except under CI=true).
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
BASELINES = ROOT / "tests" / "conformance" / "baselines"


def _kit(baseline: str, *command: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "generated")}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "acp_types.conformance",
            "agent",
            "--protocol",
            "v1",
            "--suite",
            "core",
            "--timeout",
            "5",
            "--expected-failures",
            str(BASELINES / baseline),
            "--",
            *command,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )


def test_the_python_sdk_agent_breaks_only_its_baseline() -> None:
    sdk = ensure_venv(ROOT / ".venv-interop", sys.executable, INTEROP / "requirements.txt", timeout=300)
    out = _kit("python-sdk-agent.txt", sdk, str(INTEROP / "sdk_agent.py"))
    assert out.returncode == 0, out.stdout[-3000:]


def test_the_typescript_sdk_agent_breaks_only_its_baseline() -> None:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("node and npm are not on PATH (CI=true requires them)")
        pytest.skip("node and npm are not on PATH")
    ts = INTEROP / "ts"
    if not (ts / "node_modules" / "@agentclientprotocol" / "sdk").exists():
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent"], cwd=ts, check=True, timeout=300)
    out = _kit("typescript-sdk-agent.txt", node, str(ts / "agent.mjs"))
    assert out.returncode == 0, out.stdout[-3000:]
