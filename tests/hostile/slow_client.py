"""A client for tests/test_hostile_peers.py: a 1 ms ``session_update`` handler fed by ``streamer.py``.

Run as ``python slow_client.py COUNT SECONDS``: it spawns the streamer, lets it stream for
SECONDS, then prints its own peak memory growth in bytes and how many updates it handled.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "generated"))

from acp_types import connection

STREAMER = Path(__file__).resolve().parent / "streamer.py"


def status(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


async def main(count: int, seconds: float) -> None:
    handled = [0]

    class Client:
        def __init__(self, conn: Any) -> None:
            self.conn = conn

        async def session_update(self, params: Any) -> None:
            await asyncio.sleep(0.001)
            handled[0] += 1

    base = status("VmRSS")
    async with connection.spawn_agent([sys.executable, str(STREAMER), str(count)], Client, versions=("v1",)):
        await asyncio.sleep(seconds)
    print(status("VmHWM") - base, handled[0])


asyncio.run(main(int(sys.argv[1]), float(sys.argv[2])))
