"""A hostile agent for tests/test_hostile_peers.py: streams ``session/update`` chunks as fast as its stdout takes them.

Run as ``python streamer.py COUNT``; it reads nothing and exits when done.
"""

from __future__ import annotations

import json
import sys

chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x" * 200}}
line = (
    json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s1", "update": chunk}}).encode()
    + b"\n"
)
block = line * 256
out = sys.stdout.buffer
try:
    for _ in range(int(sys.argv[1]) // 256):
        out.write(block)
    out.flush()
except BrokenPipeError:
    pass
