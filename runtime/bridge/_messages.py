"""What every part of the bridge shares: JSON-RPC lines as it reads and writes them.

A line is split off a byte stream by :class:`Lines` (bounded in size), parsed by :func:`parse`
(which never raises) and written back by :func:`dumps`; an answer the bridge makes up is an
:func:`error`, or an :func:`unmappable` one for what one version cannot say in the other.

Hand-written: the source is runtime/bridge/_messages.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import json
from typing import Any

Json = dict[str, Any]

UNMAPPABLE = "unmappable"
"""``error.data.bridge`` of an answer the bridge gives for what it cannot map."""

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
INVALID_REQUEST = -32600


def dumps(obj: Any) -> bytes:
    try:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    except UnicodeEncodeError:  # a lone surrogate the peer wrote as an escape: written back as one
        return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def error(rid: Any, code: int, message: str, data: Any = None) -> Json:
    err: Json = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": err}


def unmappable(rid: Any, code: int, message: str, **data: Any) -> Json:
    return error(rid, code, f"acp-bridge: {message}", {"bridge": UNMAPPABLE, **data})


def obj(value: Any) -> Json:
    return value if isinstance(value, dict) else {}


def on(value: Any) -> bool:
    """A v2 marker ({} or an object) or a v1 boolean that says yes."""
    return value is True or isinstance(value, dict)


def parse(line: bytes) -> Any:
    """A line's JSON-RPC message (an object or a batch), or None where it is neither."""
    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return msg if isinstance(msg, (dict, list)) else None


class Lines:
    """Splits a byte stream into lines of at most ``limit`` bytes; a longer line is reported, not kept."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buf = bytearray()
        self.skipping = False

    def feed(self, chunk: bytes) -> list[bytes | None]:
        out: list[bytes | None] = []
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                if not self.skipping:
                    self.buf += chunk[start:]
                    if len(self.buf) > self.limit:
                        self.buf.clear()
                        self.skipping = True
                        out.append(None)
                return out
            if self.skipping:
                self.skipping = False
            else:
                if self.buf:
                    self.buf += chunk[start:nl]
                    line = bytes(self.buf)
                    self.buf.clear()
                else:
                    line = chunk[start:nl]
                if len(line) > self.limit:
                    out.append(None)
                elif line.strip():
                    out.append(line)
            start = nl + 1

    def end(self) -> list[bytes | None]:
        line, self.buf = bytes(self.buf), bytearray()
        return [line] if line.strip() and not self.skipping else []


# -- the two translating modes -------------------------------------------------
