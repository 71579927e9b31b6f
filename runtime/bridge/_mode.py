"""A translating bridge's common part: routing each line to a hook, requests in flight, sessions, the record.

:class:`Mode` forwards everything unchanged; :class:`~._up.UpV2` and :class:`~._down.DownV1`
override the hooks (``client_request``, ``agent_notification``...) for what they translate.

Hand-written: the source is runtime/bridge/_mode.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ._messages import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    Json,
    dumps,
    error,
    obj,
    parse,
    unmappable,
)
from ._session import Session

MAX_RECORD_BYTES = 8 * 1024 * 1024
"""Bytes of conversation the bridge keeps per connection to replay for a v1 agent without ``session/load``."""
MAX_SESSIONS = 4096
"""Sessions whose message counters and modes the bridge follows per connection (least recently used dropped)."""
MAX_PENDING = 1024
"""Requests in flight through a translating bridge, each way; more are refused with -32603."""


class Ends(Protocol):
    """Where a mode writes: the client's end and the agent's (the router, in the running bridge)."""

    async def to_client(self, data: bytes) -> None: ...

    async def to_agent(self, data: bytes) -> None: ...


class Mode:
    """A translating bridge: one client, one agent, each in its own version."""

    def __init__(self, bridge: Ends, agent_init: Json) -> None:
        self.bridge = bridge
        self.agent_init = agent_init
        self.sessions: OrderedDict[str, Session] = OrderedDict()
        self.to_agent_pending: dict[Any, Callable[[Json], Awaitable[None]]] = {}
        self.to_client_pending: dict[Any, Callable[[Json], Awaitable[None]]] = {}
        self.record_bytes = 0
        self.next_id = 0
        self.gone = False  # the agent exited

    # -- plumbing --

    async def client(self, obj: Json) -> None:
        await self.bridge.to_client(dumps(obj))

    async def agent(self, obj: Json) -> None:
        await self.bridge.to_agent(dumps(obj))

    def session(self, sid: Any, *, known_start: bool = False, create: bool = True) -> Session | None:
        if not isinstance(sid, str):
            return None
        s = self.sessions.get(sid)
        if s is not None:
            self.sessions.move_to_end(sid)
            return s
        if not create:
            return None
        s = self.sessions[sid] = Session(sid, known_start=known_start)
        if len(self.sessions) > MAX_SESSIONS:
            _, old = self.sessions.popitem(last=False)
            self.record_bytes -= old.record_bytes
        return s

    def record(self, s: Session, role: str, mid: str, block: Any, new: bool) -> None:
        if s.record is None:
            return
        size = len(dumps(block))
        if new:
            s.record.append([role, mid, []])
        elif not s.record or s.record[-1][1] != mid:
            return
        s.record[-1][2].append(block)
        s.record_bytes += size
        self.record_bytes += size
        while self.record_bytes > MAX_RECORD_BYTES:
            victim = max(self.sessions.values(), key=lambda x: x.record_bytes)
            self.record_bytes -= victim.record_bytes
            victim.record, victim.record_bytes = None, 0

    async def request_agent(self, method: str, params: Json, then: Callable[[Json], Awaitable[None]]) -> None:
        self.next_id += 1
        rid = f"acp-bridge-{self.next_id}"
        self.to_agent_pending[rid] = then
        await self.agent({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})

    async def forward_request(
        self, msg: Json, method: str, params: Any, then: Callable[[Json], Awaitable[None]] | None = None
    ) -> None:
        """Send a client's request to the agent (as ``method``) under the client's id; ``then`` maps the answer."""
        rid = msg.get("id")

        async def plain(answer: Json) -> None:
            await self.client(answer)

        self.to_agent_pending[rid] = then or plain
        out: Json = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            out["params"] = params
        await self.agent(out)

    # -- lines --

    async def from_client(self, line: bytes) -> None:
        try:
            await self._from_client(line)
        except Exception as exc:  # a shape no rule expected: the message goes on as it came
            print(f"acp-bridge: could not translate a client message ({exc!r}); forwarded as it came", file=sys.stderr)
            await self.bridge.to_agent(line + b"\n")

    async def from_agent(self, line: bytes) -> None:
        try:
            await self._from_agent(line)
        except Exception as exc:
            print(f"acp-bridge: could not translate an agent message ({exc!r}); forwarded as it came", file=sys.stderr)
            await self.bridge.to_client(line + b"\n")

    async def _from_client(self, line: bytes) -> None:
        msg = parse(line)
        if msg is None:
            await self.bridge.to_agent(line + b"\n")
        elif isinstance(msg, list):
            await self.client(unmappable(None, INVALID_REQUEST, "a batch cannot be bridged to a v1 agent"))
        else:
            await self._route(
                msg,
                self.client_request,
                self.client_notification,
                self.to_agent_pending,
                self.to_client_pending,
                back=self.client,
                on=self.agent,
            )

    async def _from_agent(self, line: bytes) -> None:
        msg = parse(line)
        if not isinstance(msg, dict):
            await self.bridge.to_client(line + b"\n")
        else:
            await self._route(
                msg,
                self.agent_request,
                self.agent_notification,
                self.to_client_pending,
                self.to_agent_pending,
                back=self.agent,
                on=self.client,
            )

    async def _route(
        self,
        msg: Json,
        request: Callable[[Json, str, Any], Awaitable[None]],
        notification: Callable[[Json, str, Any], Awaitable[None]],
        sent_on: dict[Any, Callable[[Json], Awaitable[None]]],
        asked_back: dict[Any, Callable[[Json], Awaitable[None]]],
        *,
        back: Callable[[Json], Awaitable[None]],
        on: Callable[[Json], Awaitable[None]],
    ) -> None:
        """One side's message to its hook: a request (refused beyond MAX_PENDING in flight that way), a
        notification, or an answer to what the other side asked (mapped by its ``then``, else passed on)."""
        if "method" in msg:
            if "id" not in msg:
                await notification(msg, msg["method"], msg.get("params"))
            elif len(sent_on) >= MAX_PENDING:
                await back(error(msg["id"], INTERNAL_ERROR, "acp-bridge: too many requests in flight"))
            else:
                await request(msg, msg["method"], msg.get("params"))
            return
        then = asked_back.pop(msg.get("id"), None)
        await (on(msg) if then is None else then(msg))

    async def update(self, sid: Any, update: Json) -> None:
        """Send the client a ``session/update`` of session ``sid``."""
        await self.client(
            {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}}
        )

    async def session_update(self, msg: Json, method: str, params: Any) -> tuple[Session, Json] | None:
        """The session and params of an agent's ``session/update`` for a mode to translate; anything else
        (another notification, an update without a session) is forwarded to the client as it came: None."""
        p = obj(params)
        if method == "session/update" and isinstance(p.get("update"), dict):
            s = self.session(p.get("sessionId"))
            if s is not None:
                return s, p
        await self.client(msg)
        return None

    async def agent_gone(self) -> None:
        """Answer what is in flight at the agent with an error (a prompt of the bridge's own: its turn ends)."""
        self.gone = True
        pending, self.to_agent_pending = self.to_agent_pending, {}
        for rid, then in pending.items():
            await then(error(rid, INTERNAL_ERROR, "acp-bridge: the agent exited"))

    # -- hooks --

    async def client_request(self, msg: Json, method: str, params: Any) -> None:
        await self.forward_request(msg, method, params)

    async def client_notification(self, msg: Json, method: str, params: Any) -> None:
        await self.agent(msg)

    async def agent_request(self, msg: Json, method: str, params: Any) -> None:
        rid = msg.get("id")

        async def plain(answer: Json) -> None:
            await self.agent(answer)

        self.to_client_pending[rid] = plain
        await self.client(msg)

    async def agent_notification(self, msg: Json, method: str, params: Any) -> None:
        await self.client(msg)
