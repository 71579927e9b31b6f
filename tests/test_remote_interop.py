"""Interop of the remote transport, both directions, both profiles, with the official SDKs.

TypeScript SDK 2.4.0 (``tests/interop/ts/remote_*.mjs``): its ``ws-client`` and ``http-client`` run a
prompt turn, v1 and v2, on our server (``python -m acp_types.remote serve``); our client
(``examples/client.py --url``) runs one on its ``AcpServer`` (``experimental/server`` and
``experimental/node``), v1 and v2, over WebSocket and Streamable HTTP. On Node the SDK needs the
``ws`` package for WebSocket: it is installed from ``tests/interop/remote_package.json`` into
``.cache/remote-node`` (ignored by git).

Python SDK 0.12.1 with its ``http`` extra (``.venv-interop``): its experimental clients against our
server and our client against its experimental server (``tests/interop/remote_sdk.py``).

Without node/npm the TypeScript part is skipped with a message, except under CI=true, where it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _venvs import ensure_venv

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
INTEROP = ROOT / "tests" / "interop"
TS_DIR = INTEROP / "ts"
WS_DIR = ROOT / ".cache" / "remote-node"
SDK_VENV = ROOT / ".venv-interop"
IN_CI = os.environ.get("CI", "").lower() == "true"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "generated"), "REMOTE_WS_DIR": str(WS_DIR)}
CLIENT = [sys.executable, str(ROOT / "examples" / "client.py")]


def _node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        message = "node and npm are not on PATH: skipped the remote interop tests with the TypeScript SDK"
        if IN_CI:
            pytest.fail(message + " (CI=true requires them)")
        pytest.skip(message)
    if not (TS_DIR / "node_modules" / "@agentclientprotocol" / "sdk").exists():
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent"], cwd=TS_DIR, check=True, timeout=300)
    wanted = (INTEROP / "remote_package.json").read_text()
    WS_DIR.mkdir(parents=True, exist_ok=True)
    if not (WS_DIR / "node_modules" / "ws").exists() or (WS_DIR / "package.json").read_text() != wanted:
        (WS_DIR / "package.json").write_text(wanted)
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent"], cwd=WS_DIR, check=True, timeout=300)
    return node


@pytest.fixture(scope="module")
def node() -> str:
    return _node()


def _started(proc: subprocess.Popen[str], marker: str) -> str:
    """The first line of ``proc``'s stream holding ``marker``."""
    stream = proc.stdout if proc.stdout is not None else proc.stderr
    assert stream is not None
    line = stream.readline()
    if marker not in line:
        proc.kill()
        _, err = proc.communicate(timeout=10)
        pytest.fail(f"the server did not start: {line!r} {err}")
    return line


@pytest.fixture(scope="module")
def our_server() -> Iterator[str]:
    """Our server on a free port, with the example echo agent (an App), as ``host:port``."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "acp_types.remote",
            "serve",
            "examples/echo_agent.py:Echo",
            "--listen",
            f"127.0.0.1:{port}",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=ROOT,
    )
    try:
        _started(proc, "serving")
        _wait_listening(port)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def _wait_listening(port: int) -> None:
    import socket
    import time

    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.fixture(scope="module")
def ts_server(node: str) -> Iterator[str]:
    """The TypeScript SDK's AcpServer (v1 and v2 agents) on a free port, as ``host:port``."""
    yield from _ts_server(node, ENV)


@pytest.fixture(scope="module")
def ts_v1_server(node: str) -> Iterator[str]:
    """The same with its v1 agent alone."""
    yield from _ts_server(node, {**ENV, "REMOTE_VERSIONS": "v1"})


def _ts_server(node: str, env: dict[str, str]) -> Iterator[str]:
    proc = subprocess.Popen(
        [node, str(TS_DIR / "remote_server.mjs")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        line = _started(proc, "listening")
        yield f"127.0.0.1:{line.split()[1]}"
    finally:
        proc.terminate()
        proc.wait(10)


def _run(cmd: list[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=ENV)


@pytest.mark.parametrize("profile", ["ws", "http"])
def test_typescript_client_runs_a_v2_turn_on_our_server(node: str, our_server: str, profile: str) -> None:
    url = f"{profile}://{our_server}/acp"
    out = _run([node, str(TS_DIR / "remote_client.mjs"), profile, url, "v2", "hello from ts"])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "protocol 2",
        "ack true",
        "text hello from ts",
        "states running idle",
        "stop end_turn",
    ]


@pytest.mark.parametrize("profile", ["ws", "http"])
def test_typescript_client_runs_a_v1_turn_on_our_server(node: str, our_server: str, profile: str) -> None:
    url = f"{profile}://{our_server}/acp"
    out = _run([node, str(TS_DIR / "remote_client.mjs"), profile, url, "v1", "hello v1"])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["protocol 1", "text hello v1", "stop end_turn"]


@pytest.mark.parametrize("protocol", ["v2", "v1"])
@pytest.mark.parametrize("profile", ["ws", "http"])
def test_our_client_runs_a_turn_on_the_typescript_server(ts_server: str, profile: str, protocol: str) -> None:
    url = f"{profile}://{ts_server}/acp"
    out = _run([*CLIENT, "--url", url, "--protocol", protocol, "--prompt", "hi from python", "--timeout", "10"])
    assert (out.returncode, out.stdout) == (0, "hi from python\n"), out.stderr


@pytest.mark.parametrize("profile", ["ws", "http"])
def test_our_v2_client_falls_back_to_a_v1_typescript_agent(ts_v1_server: str, profile: str) -> None:
    # the second initialize goes on a new connection (the TypeScript server refuses one on the same)
    url = f"{profile}://{ts_v1_server}/acp"
    out = _run([*CLIENT, "--url", url, "--protocol", "v2", "--prompt", "fell back", "--timeout", "10"])
    assert (out.returncode, out.stdout) == (0, "(v1 initialize) fell back\n"), out.stderr


@pytest.fixture(scope="module")
def sdk_python() -> str:
    return ensure_venv(SDK_VENV, sys.executable, INTEROP / "requirements.txt", timeout=600)


@pytest.fixture(scope="module")
def sdk_server(sdk_python: str) -> Iterator[str]:
    """The Python SDK's experimental ASGI app (an echo agent, v1) on a free port, as ``host:port``."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        [sdk_python, str(INTEROP / "remote_sdk.py"), "server"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = _started(proc, "listening")
        port = int(line.split()[1])
        _wait_listening(port)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("profile", ["ws", "http"])
def test_python_sdk_client_runs_a_turn_on_our_server(sdk_python: str, our_server: str, profile: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    url = f"{profile}://{our_server}/acp"
    out = subprocess.run(
        [sdk_python, str(INTEROP / "remote_sdk.py"), "client", profile, url, "hello from the sdk"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["protocol 1", "text hello from the sdk", "stop end_turn"]


@pytest.mark.parametrize("protocol", ["v2", "v1"])
@pytest.mark.parametrize("profile", ["ws", "http"])
def test_our_client_runs_a_turn_on_the_python_sdk_server(sdk_server: str, profile: str, protocol: str) -> None:
    # the SDK speaks v1 only: asked for v2, our client falls back (over HTTP, on a new connection)
    url = f"{profile}://{sdk_server}/acp"
    out = _run([*CLIENT, "--url", url, "--protocol", protocol, "--prompt", "hi from python", "--timeout", "10"])
    assert (out.returncode, out.stdout) == (0, "hi from python\n"), out.stderr
