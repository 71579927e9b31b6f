"""What the v1 ⇄ v2 bridge adds: a prompt round trip and each streamed chunk, against the agent direct.

One agent (a plain v1 agent on raw lines, so that its own cost is small and the
same in every run) is driven three ways in the same run: direct by a v1 client
(the baseline), through the bridge by a v1 client (versions agree: bytes
forwarded), and through the bridge by a v2 client (every message translated:
acknowledgement, user_message, running, whole-message upserts, idle). A turn
ends at the prompt's answer (v1) or at the idle state (v2).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

AGENT = r"""
import json, sys
out = sys.stdout.buffer
V2 = sys.argv[1] == "v2"
def update(u):
    return b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"bench","update":' + u + b'}}\n'
CHUNK = update(b'{"sessionUpdate":"agent_message_chunk","messageId":"a","content":{"type":"text","text":"word "}}')
for line in sys.stdin.buffer:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        result = {"protocolVersion": 2, "info": {"name": "bench", "version": "1"}, "capabilities": {"session": {}}} \
            if V2 else {"protocolVersion": 1, "agentCapabilities": {}}
    elif method == "session/new":
        result = {"sessionId": "bench"}
    elif method == "session/prompt":
        n = int(msg["params"]["prompt"][0]["text"])
        if V2:
            out.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u"}}).encode() + b"\n")
            out.write(update(b'{"sessionUpdate":"user_message","messageId":"u","content":[]}'))
            out.write(update(b'{"sessionUpdate":"state_update","state":"running"}'))
        for _ in range(n):
            out.write(CHUNK)
        if V2:
            out.write(update(b'{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}'))
            out.flush()
            continue
        result = {"stopReason": "end_turn"}
    else:
        continue
    out.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode() + b"\n")
    out.flush()
"""

BRIDGE = ["-c", "import sys; from acp_types.bridge import main; sys.exit(main())", "--"]


class _Client:
    def __init__(self, proc: asyncio.subprocess.Process, version: int) -> None:
        self.proc = proc
        self.version = version
        self.next = 0

    async def send(self, method: str, params: Any) -> int:
        self.next += 1
        msg = {"jsonrpc": "2.0", "id": self.next, "method": method, "params": params}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        await self.proc.stdin.drain()
        return self.next

    async def answer(self, rid: int) -> Any:
        assert self.proc.stdout is not None
        while True:
            msg = json.loads(await self.proc.stdout.readline())
            if msg.get("id") == rid and "method" not in msg:
                return msg["result"]

    async def turn(self, chunks: int) -> int:
        """One prompt of ``chunks`` chunks, to its end; the number of chunks seen."""
        await self.send("session/prompt", {"sessionId": "bench", "prompt": [{"type": "text", "text": str(chunks)}]})
        assert self.proc.stdout is not None
        seen = 0
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the agent or the bridge went away")
            if b"_chunk" in line or b'"agent_message"' in line:
                seen += 1
            elif self.version == 1 and b'"stopReason"' in line and b'"result"' in line:
                return seen
            elif self.version == 2 and b'"idle"' in line:
                return seen


async def _drive(command: list[str], version: int, chunks: int, rounds: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "generated"), os.environ.get("PYTHONPATH", "")])}
    proc = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env, limit=1 << 24
    )
    client = _Client(proc, version)
    try:
        init: dict[str, Any] = {"protocolVersion": version}
        init.update({"clientCapabilities": {}} if version == 1 else {"info": {"name": "bench", "version": "1"}})
        await client.answer(await client.send("initialize", init))
        await client.answer(await client.send("session/new", {"cwd": "/", "mcpServers": []}))
        await client.turn(chunks)  # warm up
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            seen = await client.turn(chunks)
            times.append(time.perf_counter() - t0)
            if seen != chunks:
                raise RuntimeError(f"{seen} chunks seen, {chunks} sent")
        return times
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        await proc.wait()


def figures(quick: bool) -> list[tuple[Any, ...]]:
    py = sys.executable
    v1_agent, v2_agent = [py, "-c", AGENT, "v1"], [py, "-c", AGENT, "v2"]
    rounds, chunks = (20, 2000) if quick else (60, 10000)
    runs = (
        ("v1 direct", v1_agent, 1),
        ("v1 forwarded", [py, *BRIDGE, *v1_agent], 1),
        ("v2 client, v1 agent", [py, *BRIDGE, *v1_agent], 2),
        ("v2 direct", v2_agent, 2),
        ("v1 client, v2 agent", [py, *BRIDGE, *v2_agent], 1),
    )

    async def measure(chunk_count: int, n: int) -> dict[str, float]:
        return {
            name: statistics.median(await _drive(command, version, chunk_count, n)) for name, command, version in runs
        }

    trip = asyncio.run(measure(1, rounds))
    stream = asyncio.run(measure(chunks, 3 if quick else 5))
    rows: list[tuple[Any, ...]] = []
    # (what, through the bridge, its baseline: the same agent direct)
    for what, ours, base in (
        ("v1 client, v1 agent, bytes forwarded", "v1 forwarded", "v1 direct"),
        ("v2 client, v1 agent, translated", "v2 client, v1 agent", "v1 direct"),
        ("v1 client, v2 agent, translated", "v1 client, v2 agent", "v2 direct"),
    ):
        rows.append(
            (
                f"bridge: prompt round trip, {what}",
                trip[ours] * 1e6,
                trip[base] * 1e6,
                "µs",
                "report",
                None,
                f"baseline: the same agent direct ({base})",
            )
        )
    for what, ours, base in (
        ("v1 client, v1 agent, bytes forwarded", "v1 forwarded", "v1 direct"),
        ("v2 client, v1 agent, translated", "v2 client, v1 agent", "v1 direct"),
        ("v1 client, v2 agent, translated", "v1 client, v2 agent", "v2 direct"),
    ):
        added = (stream[ours] - stream[base]) / chunks * 1e6
        rows.append(
            (
                f"bridge: added per chunk, {what}",
                added,
                None,
                "µs",
                "< 1000 µs",
                added < 1000,
                f"{chunks} chunks a turn; the agent direct: {stream[base] / chunks * 1e6:.2f} µs per chunk",
            )
        )
    return rows


if __name__ == "__main__":
    for row in figures("--quick" in sys.argv):
        print(row)
