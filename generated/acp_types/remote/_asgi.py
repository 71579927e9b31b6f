"""What the remote server's profiles share of ASGI: its types, a request's headers, short answers, bodies.

Hand-written: the source is runtime/remote/_asgi.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class Headers:
    """A request's headers by lower-case name (the first of repeated ones)."""

    __slots__ = ("_map",)

    def __init__(self, scope: Scope) -> None:
        self._map: dict[str, str] = {}
        for name, value in scope.get("headers", ()):
            self._map.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))

    def get(self, name: str) -> str | None:
        return self._map.get(name)


async def send_raw(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def send_text(send: Send, status: int, text: str, headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    await send_raw(send, status, text.encode(), [(b"content-type", b"text/plain"), *headers])


async def send_json(send: Send, status: int, value: Any) -> None:
    await send_raw(send, status, json.dumps(value).encode(), [(b"content-type", b"application/json")])


async def send_empty(send: Send, status: int) -> None:
    await send_raw(send, status, b"", [])


async def read_body(receive: Receive, limit: int) -> bytes | None:
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


async def disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
