"""The remote transport's command line, its extra and TLS: each in a process of its own (slow).

``python -m acp_types.remote serve`` refuses what it must with one line and exit 2 (a non-loopback
address without a token or --insecure, a bad TARGET, bad limits), serves until SIGTERM, and says
where once it listens; importing acp_types.remote without the ``remote`` extra is one ImportError
naming it; a TLS server (a certificate made by openssl) serves https:// and wss://.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_remote import Echo, agent_text, initialize, remote_errors, run

from acp_types import client, remote

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
PYTHON_ENV = {**os.environ, "PYTHONPATH": str(ROOT / "generated")}


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_types.remote", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or PYTHON_ENV,
        cwd=ROOT,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["serve", "examples/echo_agent.py:Echo", "--listen", "0.0.0.0:0"], "not loopback, without a token"),
        (["serve", "examples/echo_agent.py:Echo", "--listen", "192.0.2.1:0"], "not loopback, without a token"),
        (["serve", "examples/echo_agent.py:Echo", "--token-env", "NO_SUCH_VAR_X"], "unset or empty"),
        (["serve", "examples/nothing.py:Echo"], "no file"),
        (["serve", "examples/echo_agent.py:Nope"], "has no 'Nope'"),
        (["serve", "no_such_module_x:Echo"], "loading it failed"),
        (["serve", "Echo"], "expected path/to/file.py:Name"),
        (["serve", "examples/echo_agent.py:Echo", "--listen", "nowhere"], "expected HOST:PORT"),
        (["serve", "examples/echo_agent.py:Echo", "--tls-cert", "x.pem"], "go together"),
        (["serve", "examples/echo_agent.py:Echo", "--max-connections", "0"], "must be positive"),
        (["serve", "acp_types.agent:App"], "does not implement prompt()"),
        (["serve", "acp_types.v1:PROTOCOL_VERSION"], "an App or a connection handler factory is needed"),
    ],
)
def test_the_command_line_refuses_with_one_line_and_exit_2(args: list[str], says: str) -> None:
    out = cli(*args)
    assert out.returncode == 2, out.stderr
    assert says in out.stderr and "Traceback" not in out.stderr


def test_the_command_line_serves_until_sigterm() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "acp_types.remote", "serve", "examples/echo_agent.py:Echo", "--listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        text=True,
        env=PYTHON_ENV,
        cwd=ROOT,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert re.match(r"serving examples/echo_agent.py:Echo on http://127.0.0.1:\d+/acp \(WebSocket: ws://", line)
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.returncode in (0, -15)


def test_without_the_extra_the_import_names_it(tmp_path: Path) -> None:
    for name in ("uvicorn", "websockets", "httpx"):
        (tmp_path / name).mkdir(exist_ok=True)
        (tmp_path / name / "__init__.py").write_text("raise ImportError('hidden', name=__name__)\n")
    code = "import acp_types.remote"
    env = {**PYTHON_ENV, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT / 'generated'}"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=30)
    assert out.returncode == 1
    assert "acp_types.remote needs the 'remote' extra: pip install 'acp-types[remote]'" in out.stderr
    # the rest of the package does not need it
    out = subprocess.run(
        [sys.executable, "-c", "import acp_types.connection, acp_types.agent"], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr


def test_tls_serves_https_and_wss(tmp_path: Path) -> None:
    import shutil
    import ssl

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not on PATH")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    context = ssl.create_default_context(cafile=str(cert))

    async def main() -> None:
        async with remote.start_server(Echo, ssl_certfile=str(cert), ssl_keyfile=str(key)) as server:
            assert server.url.startswith("https://")
            for url in (server.url, "wss" + server.url[5:]):
                async with remote.connect(url, client.SessionClient, versions=("v2",), ssl=context) as conn:
                    await initialize(conn, "v2")
                    turn = await conn.handler.prompt(await conn.handler.new_session("/tmp"), "over tls")
                    assert agent_text(turn) == "over tls"
            # a client that does not trust the certificate does not get in
            with pytest.raises(remote_errors()):
                async with remote.connect("wss" + server.url[5:], versions=("v2",)) as conn:
                    await initialize(conn, "v2")

    run(main)


def test_connect_is_typed_like_spawn_agent(tmp_path: Path) -> None:
    program = tmp_path / "typed.py"
    program.write_text(
        "from acp_types import client, remote\n"
        "async def main() -> None:\n"
        '    async with remote.connect("ws://127.0.0.1:1/acp", client.SessionClient, versions=("v2",)) as conn:\n'
        "        reveal_type(conn.peer)\n"
        "        reveal_type(conn.handler)\n"
        '    async with remote.connect("http://h/acp", client.SessionClient, versions=("v1",), token="t") as conn1:\n'
        "        reveal_type(conn1.peer)\n"
        '        remote.connect("ws://x", max_in_flight="many")\n'
    )
    env = {**os.environ, "MYPYPATH": str(ROOT / "generated")}
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(program)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    revealed = re.findall(r'Revealed type is "([^"]+)"', out.stdout)
    assert revealed[0] == "acp_types.v2.peer.AgentPeer", out.stdout
    assert revealed[1] == "acp_types.client.SessionClient", out.stdout
    assert revealed[2] == "acp_types.v1.peer.AgentPeer", out.stdout
    # a wrong option is a type error
    assert re.search(r'typed.py:8: error: No overload variant of "connect"', out.stdout), out.stdout
