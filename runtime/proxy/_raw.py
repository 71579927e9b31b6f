"""Raw JSON-RPC lines for proxies and the conductor: framing, routing facts, and splicing.

A message passes through a proxy or the conductor as the text it arrived in.
Only its envelope is read (``id``, ``method``, whether it is an answer); the
text of its ``params``, ``result`` or ``error`` member is kept as a slice of
the line and written out unchanged inside whatever envelope the next hop
needs (``proxy/successor`` wrapping it, or the wrapping taken off). Reading the
envelope uses the standard library's C scanner, member by member, so the
spans come for free.

Hand-written: the source is runtime/proxy/_raw.py, which the generator copies
into the package unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from acp_types.connection import Reader

__all__ = ["Envelope", "Oversized", "RawError", "id_key", "lines", "parse", "members"]

_DECODER = json.JSONDecoder()
_SCAN: Any = _DECODER.scan_once  # type: ignore[attr-defined]  # the C scanner: (value, end) from an index
_SCANSTRING: Any = json.decoder.scanstring  # type: ignore[attr-defined]
_WS = re.compile(r"[ \t\n\r]*")
_HEAD = 4096
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
READ_CHUNK = 1 << 16


class RawError(ValueError):
    """A line that is not one JSON-RPC message object (its JSON-RPC code, and why)."""

    def __init__(self, code: int, message: str, rid: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.rid = rid


class Oversized:
    """A line longer than the limit: skipped as it streamed in; its beginning is kept to tell what it was."""

    __slots__ = ("head", "rid", "is_call")

    def __init__(self, head: bytes) -> None:
        self.head = head
        found = _ID.search(head)
        self.rid: str | None = found.group(1).decode("utf-8", "replace") if found else None
        method = head.find(b'"method"')
        answer = max(head.find(b'"result"'), head.find(b'"error"'))
        self.is_call = method >= 0 and (answer < 0 or method < answer)


async def lines(reader: Reader, limit: int) -> AsyncIterator[bytes | Oversized]:
    """The lines ``reader`` gives (without their newline), each at most ``limit`` bytes; longer ones skipped.

    At most ``limit`` plus one read's worth of bytes are held at any time.
    """
    buf = bytearray()
    skipping: bytes | None = None  # the head of an oversized line being skipped
    while True:
        chunk = await reader.read(READ_CHUNK)
        if not chunk:
            if skipping is not None:
                yield Oversized(skipping)
            elif buf.strip():
                yield bytes(buf)
            return
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if skipping is None:
                    buf += chunk[start:]
                    if len(buf) > limit:
                        skipping = bytes(buf[:_HEAD])
                        buf.clear()
                break
            if skipping is not None:
                yield Oversized(skipping)
                skipping = None
            else:
                if buf:
                    buf += chunk[start:end]
                    line = bytes(buf)
                    buf.clear()
                else:
                    line = chunk[start:end]
                if len(line) > limit:
                    yield Oversized(line[:_HEAD])
                elif line.strip():
                    yield line
            start = end + 1


_OPEN = re.compile(r"[ \t\n\r]*\{[ \t\n\r]*(\}?)")
_KEY = re.compile(r'"((?:[^"\\]|\\.)*)"[ \t\n\r]*:[ \t\n\r]*')
_SEP = re.compile(r"[ \t\n\r]*([,}])[ \t\n\r]*")


def members(text: str, idx: int = 0) -> tuple[dict[str, tuple[Any, int, int]], int]:
    """The members of the JSON object at ``text[idx:]``: name -> (decoded value, start, end of its text)."""
    found = _OPEN.match(text, idx)
    if found is None:
        raise ValueError("not an object")
    out: dict[str, tuple[Any, int, int]] = {}
    if found.group(1):
        return out, found.end()
    idx = found.end()
    while True:
        name = _KEY.match(text, idx)
        if name is None:
            raise ValueError("a member name was expected")
        key = name.group(1)
        if "\\" in key:
            key = _SCANSTRING(text, idx + 1)[0]
        idx = name.end()
        try:
            value, end = _SCAN(text, idx)
        except StopIteration:
            raise ValueError("a value was expected") from None
        if key in out:
            raise ValueError(f"the member {key!r} is repeated")
        out[key] = (value, idx, end)
        sep = _SEP.match(text, end)
        if sep is None:
            raise ValueError("',' or '}' was expected")
        if sep.group(1) == "}":
            return out, sep.start(1) + 1
        idx = sep.end()


def id_key(rid: Any) -> tuple[bool, Any]:
    """A dictionary key for a JSON-RPC id: ``1`` and ``"1"`` are different ids (and ``true`` is none)."""
    return (isinstance(rid, str), rid)


class Envelope:
    """One JSON-RPC message read from a line: its routing facts and the raw text of its payload.

    ``kind`` is ``"request"``, ``"notification"``, ``"result"`` or ``"error"``;
    ``body`` is the text of ``params`` (``None`` when absent), ``result`` or
    ``error``, exactly as it was on the line; ``value`` the same decoded.
    """

    __slots__ = ("line", "text", "kind", "rid", "rid_text", "method", "body", "value", "start")

    def __init__(
        self,
        line: bytes,
        text: str,
        kind: str,
        rid: Any,
        rid_text: str | None,
        method: str,
        body: str | None,
        value: Any,
        start: int = 0,
    ) -> None:
        self.line = line
        self.start = start
        self.text = text
        self.kind = kind
        self.rid = rid
        self.rid_text = rid_text
        self.method = method
        self.body = body
        self.value = value

    def unwrap(self) -> Envelope:
        """The message a ``proxy/successor`` request or notification wraps (same id; its params' text kept)."""
        if self.body is None:
            raise RawError(-32602, "proxy/successor without params", self.rid_text)
        try:
            inner, _ = members(self.text, self.start)
        except (ValueError, RecursionError) as exc:
            raise RawError(-32602, f"proxy/successor params: {exc}", self.rid_text) from None
        method = inner.get("method", (None, 0, 0))[0]
        if not isinstance(method, str):
            raise RawError(-32602, "proxy/successor params need a string method", self.rid_text)
        params = inner.get("params")
        if params is None or params[0] is None:
            body, value = None, None
        else:
            body, value = self.text[params[1] : params[2]], params[0]
        start = params[1] if params else 0
        return Envelope(self.line, self.text, self.kind, self.rid, self.rid_text, method, body, value, start)


def parse(line: bytes) -> Envelope:
    """The envelope of one line; :class:`RawError` (with its JSON-RPC code) when it is not one message."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise RawError(-32700, "the line is not UTF-8") from None
    start = _WS.match(text).end()  # type: ignore[union-attr]
    if text[start : start + 1] == "[":
        raise RawError(-32600, "batches are not forwarded")
    try:
        found, end = members(text, start)
    except (ValueError, RecursionError) as exc:
        raise RawError(-32700, f"not JSON: {exc}") from None
    if text[end:].strip():
        raise RawError(-32700, "not JSON: text after the message")
    rid_entry = found.get("id")
    rid = rid_entry[0] if rid_entry else None
    rid_text = text[rid_entry[1] : rid_entry[2]] if rid_entry else None
    if rid_entry is not None and (isinstance(rid, bool) or not isinstance(rid, (int, str, type(None)))):
        raise RawError(-32600, "the id is not a string, an integer or null")
    method_entry = found.get("method")
    if method_entry is not None:
        method = method_entry[0]
        if not isinstance(method, str):
            raise RawError(-32600, "the method is not a string", rid_text)
        params = found.get("params")
        body = text[params[1] : params[2]] if params else None
        value = params[0] if params else None
        kind = "request" if rid_entry is not None else "notification"
        return Envelope(line, text, kind, rid, rid_text, method, body, value, params[1] if params else 0)
    for kind in ("result", "error"):
        entry = found.get(kind)
        if entry is not None and rid_entry is not None:
            return Envelope(line, text, kind, rid, rid_text, "", text[entry[1] : entry[2]], entry[0])
    raise RawError(-32600, "neither a call nor an answer", rid_text)


def dumps(value: Any) -> str:
    """Compact JSON text of a decoded value."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def request(rid_text: str, method: str, body: str | None) -> bytes:
    params = "" if body is None else ',"params":' + body
    return f'{{"jsonrpc":"2.0","id":{rid_text},"method":{dumps(method)}{params}}}'.encode()


def notification(method: str, body: str | None) -> bytes:
    params = "" if body is None else ',"params":' + body
    return f'{{"jsonrpc":"2.0","method":{dumps(method)}{params}}}'.encode()


def answer(rid_text: str, kind: str, body: str) -> bytes:
    return f'{{"jsonrpc":"2.0","id":{rid_text},"{kind}":{body}}}'.encode()


def error(rid_text: str | None, code: int, message: str) -> bytes:
    return answer(rid_text or "null", "error", dumps({"code": code, "message": message}))


def wrapped(method: str, body: str | None) -> str:
    """The params of ``proxy/successor`` wrapping one message: its method and its params' text, unchanged."""
    params = "" if body is None else ',"params":' + body
    return f'{{"method":{dumps(method)}{params}}}'
