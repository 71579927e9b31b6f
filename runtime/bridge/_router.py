"""One client and one agent: the lines between them, and the ``initialize`` that settles how they go.

Until the agent answers ``initialize`` the router reads lines (and holds back what the client
sends meanwhile); the answer's version picks the rest: bytes forwarded unchanged when the
versions agree, else every line through a translating mode (:class:`~._up.UpV2`,
:class:`~._down.DownV1`).

Hand-written: the source is runtime/bridge/_router.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from .. import connection
from ._down import DownV1
from ._messages import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Json,
    Lines,
    dumps,
    error,
    obj,
    parse,
    unmappable,
)
from ._mode import Mode
from ._shapes import client_caps_down, client_caps_up
from ._up import UpV2


class Router:
    """One connection of the bridge: the client's stream and the agent's, and the mode that settles."""

    def __init__(
        self,
        client_reader: connection.Reader,
        client_writer: connection.Writer,
        agent_reader: Any,
        agent_writer: Any,
        *,
        max_line_size: int,
    ) -> None:
        self.client_reader = client_reader
        self.client_writer = client_writer
        self.agent_reader = agent_reader
        self.agent_writer = agent_writer
        self.max_line_size = max_line_size
        self.mode: Mode | None = None
        self.passthrough = False
        self.init_id: Any = None
        self.asked: Any = None
        self.agent_alive = True
        self.client_alive = True
        self.settled = asyncio.Event()  # initialize answered with a result: the mode is known
        self.answered = asyncio.Event()  # what a line sent before initialize's answer waits for

    async def to_client(self, data: bytes) -> None:
        if not self.client_alive:
            return
        try:
            self.client_writer.write(data)
            await self.client_writer.drain()
        except (ConnectionError, BrokenPipeError, RuntimeError):  # the client is gone: nothing to tell it
            self.client_alive = False

    async def to_agent(self, data: bytes) -> None:
        if not self.agent_alive:
            return
        try:
            self.agent_writer.write(data)
            await self.agent_writer.drain()
        except (ConnectionError, BrokenPipeError):
            self.agent_alive = False

    # -- before initialize is answered: lines; after: the mode's --

    async def client_line(self, line: bytes) -> None:
        if self.mode is not None:
            await self.mode.from_client(line)
            return
        if self.init_id is not None and not self.passthrough:
            # sent before initialize was answered: it waits, to go out in the version the answer settles
            answered = self.answered
            await answered.wait()
            await self.client_line(line)
            return
        if self.init_id is None:
            msg = parse(line)
            if isinstance(msg, dict) and msg.get("method") == "proxy/initialize" and "id" in msg:
                await self.to_client(
                    dumps(
                        unmappable(
                            msg["id"],
                            METHOD_NOT_FOUND,
                            "the bridge changes protocolVersion, which a proxy must not: make it the chain's last "
                            "member (python -m acp_types.bridge --agent 'AGENT_CMD...')",
                            method="proxy/initialize",
                        )
                    )
                )
                return
            if isinstance(msg, dict) and msg.get("method") == "initialize" and "id" in msg:
                params = obj(msg.get("params"))
                self.init_id, self.asked = msg["id"], params.get("protocolVersion")
                if self.asked != 1:  # 2, or one the bridge does not speak: it answers with its newest, 2
                    self.asked = 2
                extra: Json = {}
                if self.asked == 2:
                    extra = {"clientCapabilities": client_caps_down(params)}
                    if isinstance(params.get("info"), dict):
                        extra["clientInfo"] = params["info"]
                elif self.asked == 1:
                    extra = {
                        "capabilities": client_caps_up(params),
                        "info": params.get("clientInfo")
                        or {"name": "unnamed v1 client (through acp-bridge)", "version": "0"},
                    }
                extra = {k: v for k, v in extra.items() if k not in params}
                await self.to_agent(dumps({**msg, "params": {**params, **extra}}))
                return
        await self.to_agent(line + b"\n")

    async def agent_line(self, line: bytes) -> None:
        if self.mode is not None:
            await self.mode.from_agent(line)
            return
        msg = parse(line)
        if self.init_id is not None and isinstance(msg, dict) and "method" not in msg and msg.get("id") == self.init_id:
            result = msg.get("result")
            got = result.get("protocolVersion") if isinstance(result, dict) else None
            if isinstance(result, dict) and self.asked == 2 and got == 1:
                self.mode = UpV2(self, result)
                await self.to_client(dumps({**msg, "result": self.mode.init_result(result)}))
            elif isinstance(result, dict) and self.asked == 1 and got == 2:
                self.mode = DownV1(self, result)
                await self.to_client(dumps({**msg, "result": self.mode.init_result(result)}))
            else:
                await self.to_client(line + b"\n")
                if isinstance(result, dict):
                    self.passthrough = True
                    self.settled.set()
                    self.answered.set()
                else:
                    self.init_id = None  # refused: the client may try again
                    answered, self.answered = self.answered, asyncio.Event()
                    answered.set()
                return
            self.settled.set()
            self.answered.set()
            return
        await self.to_client(line + b"\n")

    async def pump(
        self,
        reader: Any,
        on_line: Callable[[bytes], Awaitable[None]],
        on_big: Callable[[], Awaitable[None]],
        raw: Callable[[bytes], Awaitable[None]],
    ) -> None:
        lines = Lines(self.max_line_size)
        while True:
            if self.passthrough and not lines.buf and not lines.skipping:
                chunk = await reader.read(1 << 16)
                if not chunk:
                    return
                await raw(chunk)
                continue
            chunk = await reader.read(1 << 16)
            if not chunk:
                for line in lines.end():
                    if line is not None:
                        await on_line(line)
                return
            if self.passthrough:  # settled mid-chunk: the rest of this chunk goes unchanged
                nl = chunk.find(b"\n")
                head, rest = (chunk, b"") if nl < 0 else (chunk[: nl + 1], chunk[nl + 1 :])
                for line in lines.feed(head):
                    await (on_big() if line is None else on_line(line))
                if rest:
                    await raw(rest)
                continue
            for line in lines.feed(chunk):
                await (on_big() if line is None else on_line(line))

    async def client_big(self) -> None:
        await self.to_client(dumps(error(None, INVALID_REQUEST, f"acp-bridge: a line over {self.max_line_size} bytes")))

    async def agent_big(self) -> None:
        print(f"acp-bridge: dropped a line of the agent over {self.max_line_size} bytes", file=sys.stderr)

    async def agent_gone(self) -> None:
        self.agent_alive = False
        if self.mode is not None:
            await self.mode.agent_gone()
        elif self.init_id is not None and not self.settled.is_set():
            await self.to_client(dumps(error(self.init_id, INTERNAL_ERROR, "acp-bridge: the agent exited")))
