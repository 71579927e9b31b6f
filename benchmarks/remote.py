"""The remote transport (issue 31): our server against the TypeScript SDK 2.4.0's, on this machine, in one run.

Both servers run in processes of their own (ours: ``python -m acp_types.remote serve`` on the dev
venv, which has the ``remote`` extra, with ``tests/interop/remote_agents.py:Loud``; theirs:
``tests/interop/ts/remote_server.mjs``, ``AcpServer`` with the node adapter), each streaming the same
``stream N`` turn of one-character ``agent_message_chunk`` updates. The same client measures both:
the TypeScript SDK's own ``ws-client`` and ``http-client`` (``tests/interop/ts/remote_client.mjs``),
so the figures compare the servers. Figures (median of the runs):

- streaming chunks per second over WebSocket and over Streamable HTTP (prompt sent to idle seen), of
  each client (ours: ``remote.connect`` with a handler that counts the typed updates; theirs: the
  SDK's ``ws-client`` / ``http-client``) against each server, the four pairs' runs interleaved so
  that the load of a shared machine falls on all alike. The target is on our server and client
  against the TypeScript SDK's (at least its throughput); each side against the other's is reported,
  with each server's CPU time per chunk (user and system, from ``/proc``): the TypeScript client is
  the slower end of a stream, so two servers that both keep it busy meet near its rate, and the CPU
  row says which does the work with less;
- a request round trip (``session/new``, one at a time, over WebSocket; reported);
- the resident memory of 1,000 idle WebSocket connections (each upgraded and initialized, then left
  open) in one server process, as the growth of its ``VmRSS`` (reported).

Needs node and npm (the SDK under tests/interop/ts/node_modules and the ``ws`` package under
.cache/remote-node, installed by tests/test_remote_interop.py or here).
``python -m benchmarks.remote`` prints them; ``make bench`` runs them as the ``remote`` group.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TS_DIR = ROOT / "tests" / "interop" / "ts"
WS_DIR = ROOT / ".cache" / "remote-node"
DEV_PY = ROOT / ".venv" / "bin" / "python"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "generated"), "REMOTE_WS_DIR": str(WS_DIR)}
IDLE = 1000
SERVER_NOTE = (
    "the TS client is the slower end of this pair: it reads ~60 frames per read from either server, so "
    "two servers that both keep it busy meet near its own rate; the CPU row says which does the work with less"
)


def _node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        raise RuntimeError("node and npm are needed for the remote figures")
    if not (TS_DIR / "node_modules" / "@agentclientprotocol" / "sdk").exists():
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent"], cwd=TS_DIR, check=True, timeout=300)
    wanted = (ROOT / "tests" / "interop" / "remote_package.json").read_text()
    WS_DIR.mkdir(parents=True, exist_ok=True)
    if not (WS_DIR / "node_modules" / "ws").exists() or (WS_DIR / "package.json").read_text() != wanted:
        (WS_DIR / "package.json").write_text(wanted)
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent"], cwd=WS_DIR, check=True, timeout=300)
    return node


def _wait_port(port: int, proc: subprocess.Popen[Any]) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("a server did not start") from None
            time.sleep(0.05)


@contextmanager
def _ours() -> Iterator[tuple[int, int]]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [
        str(DEV_PY),
        "-m",
        "acp_types.remote",
        "serve",
        "tests/interop/remote_agents.py:Streamer",
        "--listen",
        f"127.0.0.1:{port}",
        "--max-connections",
        str(IDLE * 2),
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stderr=subprocess.DEVNULL)
    try:
        _wait_port(port, proc)
        yield port, proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def _theirs(node: str) -> Iterator[tuple[int, int]]:
    proc = subprocess.Popen(
        [node, str(TS_DIR / "remote_server.mjs")], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().split()[1])
        _wait_port(port, proc)
        yield port, proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


def _client(node: str, profile: str, port: int, mode: str, n: int) -> float:
    """Seconds the TypeScript client reports for ``mode`` (``--bench-stream`` N chunks, ``--bench-rtt`` N requests)."""
    url = f"{profile}://127.0.0.1:{port}/acp"
    out = subprocess.run(
        [node, str(TS_DIR / "remote_client.mjs"), profile, url, "v2", mode, str(n)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    if out.returncode != 0:
        raise RuntimeError(f"remote_client.mjs {profile} {mode}: {out.stderr[-500:]}")
    kind, count, seconds = out.stdout.split()
    if int(count) != n:
        raise RuntimeError(f"{mode}: {count} of {n}")
    return float(seconds)


def _cpu(pid: int) -> float:
    """Seconds of CPU (user and system) the process ``pid`` has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _matrix(node: str, profile: str, ports: dict[str, tuple[int, int]], chunks: int, runs: int) -> dict[str, Any]:
    """Chunks per second (median) of each client against each server, and each server's CPU seconds per
    chunk with the TypeScript client (median); the four pairs' runs interleaved."""
    rates: dict[tuple[str, str], list[float]] = {}
    cpus: dict[str, list[float]] = {name: [] for name in ports}
    for _ in range(runs):
        for server, (port, pid) in ports.items():
            before = _cpu(pid)
            rates.setdefault(("theirs", server), []).append(
                chunks / _client(node, profile, port, "--bench-stream", chunks)
            )
            cpus[server].append((_cpu(pid) - before) / chunks)
            rates.setdefault(("ours", server), []).append(chunks / _our_client(profile, port, chunks))
    return {
        "rates": {pair: statistics.median(values) for pair, values in rates.items()},
        "cpus": {server: statistics.median(values) for server, values in cpus.items()},
    }


async def _our_client_stream(url: str, chunks: int) -> float:
    """Seconds our client takes from sending ``stream N`` to the idle state, counting the typed updates."""
    from acp_types import remote, v2

    class Counter:
        def __init__(self, conn: Any) -> None:
            self.chunks = 0
            self.idle = asyncio.Event()

        async def session_update(self, params: v2.UpdateSessionNotification) -> None:
            update = params.update
            if isinstance(update, v2.AgentMessageChunk):
                self.chunks += 1
            elif isinstance(update, v2.IdleStateUpdate):
                self.idle.set()

    async with remote.connect(url, Counter, versions=("v2",)) as conn:
        info = v2.Implementation(name="bench", version="1")
        await conn.initialize(v2.InitializeRequest(protocol_version=2, info=info))
        sid = (await conn.peer.session_new(v2.NewSessionRequest(cwd="/tmp"))).session_id
        start = time.perf_counter()
        prompt = [v2.TextContent(text=f"stream {chunks}")]
        await conn.peer.session_prompt(v2.PromptRequest(session_id=sid, prompt=prompt))
        await conn.handler.idle.wait()
        seconds = time.perf_counter() - start
        if conn.handler.chunks != chunks:
            raise RuntimeError(f"our client: {conn.handler.chunks} of {chunks} chunks")
        return seconds


def _in_dev_venv(*args: str, timeout: float) -> float:
    """This module run with ``args`` by the dev venv, which has the ``remote`` extra (the bench venv need
    not): the figure it prints."""
    out = subprocess.run(
        [str(DEV_PY), str(Path(__file__)), *args], capture_output=True, text=True, env=ENV, timeout=timeout
    )
    if out.returncode != 0:
        raise RuntimeError(f"benchmarks/remote.py {args[0]}: {out.stderr[-500:]}")
    return float(out.stdout)


def _our_client(profile: str, port: int, chunks: int) -> float:
    """:func:`_our_client_stream`, in the dev venv."""
    return _in_dev_venv("--client", f"{profile}://127.0.0.1:{port}/acp", str(chunks), timeout=300)


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


async def _idle_connections(port: int, pid: int, count: int) -> float:
    """The server's RSS growth (MiB) once ``count`` WebSockets are upgraded, initialized and left open."""
    from websockets.asyncio.client import connect

    init = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"b","version":"1"}}}'
    before = _rss(pid)
    sockets = []
    try:
        for _ in range(count):
            ws = await connect(f"ws://127.0.0.1:{port}/acp", compression=None, ping_interval=None)
            await ws.send(init)
            await ws.recv()
            sockets.append(ws)
        await asyncio.sleep(1.0)  # let the server settle (no timed assert: a figure)
        return (_rss(pid) - before) / (1 << 20)
    finally:
        await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)


def _idle(port: int, pid: int, count: int) -> float:
    """:func:`_idle_connections`, in the dev venv."""
    return _in_dev_venv("--idle", str(port), str(pid), str(count), timeout=600)


def _median(runs: int, measure: Any) -> float:
    return statistics.median(measure() for _ in range(runs))


def figures(quick: bool) -> list[tuple[Any, ...]]:
    if not sys.platform.startswith("linux"):
        return []
    node = _node()
    runs = 3 if quick else 5
    chunks = 5_000 if quick else 20_000
    rtts = 200 if quick else 1_000
    idle = 200 if quick else IDLE
    rows: list[tuple[Any, ...]] = []
    with _ours() as (ours_port, ours_pid), _theirs(node) as (ts_port, ts_pid):
        ports = {"ours": (ours_port, ours_pid), "theirs": (ts_port, ts_pid)}
        for profile, label in (("ws", "WebSocket"), ("http", "Streamable HTTP")):
            _client(node, profile, ours_port, "--bench-stream", 100)  # the first turn imports and builds models
            found = _matrix(node, profile, ports, chunks, runs)
            rate, cpu = found["rates"], found["cpus"]
            stack, theirs = rate[("ours", "ours")], rate[("theirs", "theirs")]
            rows += [
                (
                    f"remote: streamed chunks/s over {label}, our server and client (baseline: the TS SDK's)",
                    stack,
                    theirs,
                    "msg/s",
                    ">= 1.0x",
                    stack >= theirs,
                    "",
                ),
                (
                    "  our server, with the TS SDK's client (baseline: TS SDK server)",
                    rate[("theirs", "ours")],
                    theirs,
                    "msg/s",
                    "reported",
                    None,
                    SERVER_NOTE if profile == "ws" else "",
                ),
                (
                    "  server CPU per streamed chunk, with the TS SDK's client (baseline: TS SDK server)",
                    cpu["ours"] * 1e6,
                    cpu["theirs"] * 1e6,
                    "µs",
                    "reported",
                    None,
                    "",
                ),
                (
                    "  our client, with the TS SDK's server (baseline: TS SDK client)",
                    rate[("ours", "theirs")],
                    theirs,
                    "msg/s",
                    "reported",
                    None,
                    "",
                ),
            ]
        ours = _median(runs, lambda: _client(node, "ws", ours_port, "--bench-rtt", rtts)) / rtts
        theirs = _median(runs, lambda: _client(node, "ws", ts_port, "--bench-rtt", rtts)) / rtts
        rows.append(
            ("remote: request round trip over WebSocket (session/new)", ours, theirs, "s", "reported", None, "")
        )
        ours_mem = _idle(ours_port, ours_pid, idle)
        ts_mem = _idle(ts_port, ts_pid, idle)
        rows.append(
            (
                f"remote: memory of {idle:,} idle WebSocket connections in one server",
                ours_mem,
                ts_mem,
                "MiB",
                "reported",
                None,
                f"{ours_mem * 1024 / idle:.1f} KiB per connection against {ts_mem * 1024 / idle:.1f} KiB; "
                "where ours goes (tracemalloc, by traceback): docs/remote.md, section Memory",
            )
        )
    return rows


def _group(filename: str) -> str:
    if "/acp_types/remote/" in filename:
        return "the remote server (acp_types/remote)"
    if "/acp_types/" in filename:
        return "the agent's connection (acp_types, outside remote)"
    if "/uvicorn/" in filename or "/websockets/" in filename or "/h11/" in filename:
        return "uvicorn, websockets, h11"
    return "other (asyncio and the standard library, called from none of these)"


async def _where_server() -> None:
    """Serve; on each line of stdin take a tracemalloc snapshot; after the second, print the growth by group."""
    import gc
    import tracemalloc

    sys.path[:0] = [str(ROOT / "generated"), str(ROOT)]
    from acp_types import remote
    from acp_types.remote.__main__ import load_target

    target = load_target("tests/interop/remote_agents.py:Streamer")
    async with remote.start_server(target, limits=remote.Limits(max_connections=IDLE * 10)) as server:
        print(server.port, flush=True)
        loop = asyncio.get_running_loop()
        stdin = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)
        await stdin.readline()
        gc.collect()
        tracemalloc.start(25)
        before = tracemalloc.take_snapshot()
        print("ready", flush=True)
        count = int(await stdin.readline())
        await asyncio.sleep(1.0)
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        groups: dict[str, int] = {}
        for stat in after.compare_to(before, "traceback"):
            # the innermost frame of ours or of the servers' libraries says whose the allocation is
            named = [f.filename for f in stat.traceback if _group(f.filename) != _group("")]
            key = _group(named[-1] if named else "")
            groups[key] = groups.get(key, 0) + stat.size_diff
        for key, size in sorted(groups.items(), key=lambda kv: -kv[1]):
            print(f"{size / count / 1000:8.1f} KB  {key}")
        print(f"{sum(groups.values()) / count / 1000:8.1f} KB  per idle WebSocket connection in all ({count:,})")


async def _where(count: int) -> None:
    """Where an idle WebSocket connection's memory goes: tracemalloc in our server around ``count`` of them."""
    from websockets.asyncio.client import connect

    proc = await asyncio.create_subprocess_exec(
        str(DEV_PY), str(Path(__file__)), "--where-server", stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT
    )
    assert proc.stdin is not None and proc.stdout is not None
    port = int(await proc.stdout.readline())
    init = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"b","version":"1"}}}'

    async def one() -> Any:
        ws = await connect(f"ws://127.0.0.1:{port}/acp", compression=None, ping_interval=None)
        await ws.send(init)
        await ws.recv()
        return ws

    sockets = [await one() for _ in range(20)]  # the first connections warm caches: not counted
    proc.stdin.write(b"\n")
    await proc.stdin.drain()
    await proc.stdout.readline()
    for _ in range(count // 100):
        sockets += await asyncio.gather(*(one() for _ in range(100)))
    proc.stdin.write(f"{count // 100 * 100}\n".encode())
    await proc.stdin.drain()
    print((await proc.stdout.read()).decode(), end="")
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    await proc.wait()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--idle"]:
        port, pid, count = map(int, sys.argv[2:5])
        print(asyncio.run(_idle_connections(port, pid, count)))
    elif sys.argv[1:2] == ["--where"]:
        asyncio.run(_where(int(sys.argv[2]) if len(sys.argv) > 2 else IDLE))
    elif sys.argv[1:2] == ["--client"]:
        sys.path[:0] = [str(ROOT / "generated")]
        print(asyncio.run(_our_client_stream(sys.argv[2], int(sys.argv[3]))))
    elif sys.argv[1:2] == ["--where-server"]:
        asyncio.run(_where_server())
    else:
        for row in figures("--quick" in sys.argv):
            print(row)
