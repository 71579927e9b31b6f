"""What a one-proxy chain adds: a prompt round trip and each streamed chunk, against the agent alone.

One agent on raw lines (its own cost small and alike in every run) is driven by
a v1 client three ways in the same run: direct (the baseline), behind
``examples/proxy.py`` under the conductor (the chain: two more processes and
hops, the prompt's hook parsing and rewriting the prompt), and behind
``examples/proxy.py`` on its own (one more process). A turn ends at the
prompt's answer, which the agent writes after its chunks. A chunk's cost is
``(T(n) - T(1)) / (n - 1)`` for a turn of ``n`` chunks; each figure is the
median of the repeats.
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
PROXY = [sys.executable, str(ROOT / "examples" / "proxy.py")]
CONDUCTOR = [sys.executable, "-m", "acp_types.conductor"]

AGENT = r"""
import json, sys
out = sys.stdout.buffer
chunk = (b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"b","update":'
         b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"word "}}}}\n')
for line in sys.stdin.buffer:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        result = {"protocolVersion": 1, "agentCapabilities": {}}
    elif method == "session/new":
        result = {"sessionId": "b"}
    elif method == "session/prompt":
        n = int(msg["params"]["prompt"][-1]["text"])
        out.write(chunk * n)
        result = {"stopReason": "end_turn"}
    else:
        continue
    out.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode() + b"\n")
    out.flush()
"""


async def _turns(command: list[str], sizes: list[int], repeats: int) -> dict[int, float]:
    """The median time of a turn of each size, in seconds, over ``repeats`` turns each (interleaved)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "generated"), env.get("PYTHONPATH", "")) if p)
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env, cwd=ROOT, limit=1 << 24
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout
    rid = 0

    async def call(method: str, params: Any) -> None:
        nonlocal rid
        rid += 1
        stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n")
        await stdin.drain()
        while True:
            line = await stdout.readline()
            if not line:
                raise RuntimeError(f"{command!r} closed its output during {method}")
            if b'"method"' not in line[:40] and json.loads(line).get("id") == rid:
                return

    try:
        await call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        await call("session/new", {"cwd": str(ROOT), "mcpServers": []})
        times: dict[int, list[float]] = {n: [] for n in sizes}
        for _ in range(repeats):
            for n in sizes:
                t0 = time.perf_counter()
                await call("session/prompt", {"sessionId": "b", "prompt": [{"type": "text", "text": str(n)}]})
                times[n].append(time.perf_counter() - t0)
        return {n: statistics.median(ts) for n, ts in times.items()}
    finally:
        stdin.close()
        await asyncio.wait_for(process.wait(), 30)


def figures(quick: bool) -> list[tuple[Any, ...]]:
    big = 500 if quick else 2000
    repeats = 9 if quick else 21
    agent = [sys.executable, "-c", AGENT]
    ways = {
        "direct": agent,
        "conductor": [*CONDUCTOR, "--", *PROXY, "--", *agent],
        "alone": [*PROXY, "--", *agent],
    }

    async def measure() -> dict[str, dict[int, float]]:
        return {name: await _turns(command, [1, big], repeats) for name, command in ways.items()}

    t = asyncio.run(measure())

    def per_chunk(name: str) -> float:
        return (t[name][big] - t[name][1]) / (big - 1) * 1e6

    rows: list[tuple[Any, ...]] = []
    for name, label in (("conductor", "one-proxy chain (conductor)"), ("alone", "proxy alone")):
        note = f"adds {(t[name][1] - t['direct'][1]) * 1000:.2f} ms to a turn of one chunk; median of {repeats}"
        rows.append((f"proxy: prompt round trip, {label}", t[name][1], t["direct"][1], "s", "reported", None, note))
        added = per_chunk(name) - per_chunk("direct")
        rows.append(
            (
                f"proxy: per streamed chunk, {label}",
                per_chunk(name),
                per_chunk("direct"),
                "µs",
                "< 1 ms added",
                added < 1000,
                f"adds {added:.0f} µs a chunk; turns of {big} chunks, median of {repeats}",
            )
        )
    return rows
