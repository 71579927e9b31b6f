"""The bridge between ACP v1 and v2: ``python -m acp_types.bridge -- AGENT_CMD...``.

It serves one client, v1 or v2, on its stdin/stdout and spawns the agent
(in a process group of its own). The client's ``initialize`` goes to the
agent carrying both versions' fields; the version the agent answers with
decides the rest:

* the version the client asked for (a client asking for a version the
  bridge does not speak counts as asking for 2, its newest): from then on
  every byte is forwarded unchanged, both ways;
* v1 for a v2 client: the v2 conversation is made from the v1 one
  (:class:`_UpV2`): the prompt acknowledged at once with the inserted user
  message's id, ``user_message``, ``state_update`` running and idle, whole
  message upserts with stable ids, replay through ``session/resume`` with
  ``replayFrom``, modes as a config option, ``auth/login`` for ``authenticate``;
* v2 for a v1 client (:class:`_DownV1`): the prompt answered with the stop
  reason when the turn goes idle, ``session/load`` as a resume with replay,
  modes from the config option of category ``mode``.

Every rule is data in :data:`RULES`; ``python -m acp_types.bridge --table
schema/crossversion.json`` renders them with the schema's cross-version map
as one Markdown table (docs/bridge.md). What cannot be mapped is answered
with a JSON-RPC error whose ``data.bridge`` is ``"unmappable"``.

Message ids made for a v1 agent's messages are derived, never random: the
``n``-th user (agent, thought) message of session ``S`` gets
``uuid5(NAMESPACE, "S/user/n")`` (``agent``, ``thought``), ``n`` counting
from 0 in the order the messages appear in the session's history. A live
turn and a later replay (``session/load`` of the agent) count the same
messages, so a message keeps its id across replays and restarts of the
bridge.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import sys
import uuid
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from . import connection

__all__ = [
    "MAX_RECORD_BYTES",
    "MAX_SESSIONS",
    "NAMESPACE",
    "RULES",
    "UNMAPPABLE",
    "message_id",
    "render_table",
    "run",
]

Json = dict[str, Any]

NAMESPACE = uuid.UUID("6f1c2a52-9a0e-4c55-8a59-0b7d3c2f1e4a")
"""The namespace of the message ids the bridge derives (see :func:`message_id`)."""
UNMAPPABLE = "unmappable"
"""``error.data.bridge`` of an answer the bridge gives for what it cannot map."""
MAX_RECORD_BYTES = 8 * 1024 * 1024
"""Bytes of conversation the bridge keeps per connection to replay for a v1 agent without ``session/load``."""
MAX_SESSIONS = 4096
"""Sessions whose message counters and modes the bridge follows per connection (least recently used dropped)."""
MAX_PENDING = 1024
"""Requests in flight through a translating bridge, each way; more are refused with -32603."""
MAX_QUEUED_PROMPTS = 16
"""Prompts a v2 client may have accepted and waiting per session behind a v1 agent (which takes one at a time)."""
MAX_TOOL_CONTENT = 256
"""Items of a v2 tool call's appended content kept to rewrite it as v1's whole list."""

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
INVALID_REQUEST = -32600

# -- the rules, as data -------------------------------------------------------

RULES: tuple[tuple[str, str, str, str], ...] = (
    # (client → agent, what v1 has, what v2 has, what the bridge does); "v2 → v1" is a v2 client in front
    # of a v1 agent, "v1 → v2" a v1 client in front of a v2 agent; "—" where a version has nothing
    (
        "both",
        "initialize",
        "initialize",
        "the client's request reaches the agent with the other version's fields added (clientCapabilities and "
        "clientInfo, or capabilities and info); the version the agent answers with picks the mode",
    ),
    (
        "both",
        "same version at both ends",
        "same version at both ends",
        "every byte after initialize is forwarded unchanged, both ways",
    ),
    ("both", "—", "protocolVersion the bridge does not speak", "read as 2, the newest the bridge speaks"),
    (
        "v2 → v1",
        "InitializeResponse",
        "InitializeResponse",
        "agentCapabilities become capabilities (session present; prompt and mcp booleans become {} markers; "
        "stdio always), agentInfo becomes info (a placeholder if absent), an auth method's id becomes methodId "
        "(type agent where untagged), a terminal method's env map a list",
    ),
    ("v2 → v1", "authenticate, logout", "auth/login, auth/logout", "sent as authenticate, logout"),
    (
        "v2 → v1",
        "session/prompt answered with stopReason",
        "session/prompt acknowledged, state_update",
        "answered at once with the inserted user message's id; user_message and state_update running follow, "
        "then the v1 prompt goes out; its answer becomes state_update idle with the stop reason and usage (an "
        "error answer: idle without a stop reason, the error in _meta.acpBridge.error); a v1 agent takes one "
        "prompt at a time: the next accepted one starts (user_message, running) when the previous goes idle, "
        "at most MAX_QUEUED_PROMPTS wait (more are refused -32600), one cancelled while waiting ends idle "
        "cancelled without reaching the agent",
    ),
    (
        "v2 → v1",
        "messageId optional",
        "messageId required",
        "made: uuid5(NAMESPACE, '<sessionId>/<user|agent|thought>/<n>'), n counting that role's messages of the "
        "session from 0 in history order; a v1 messageId only tells where a message starts; a session the bridge "
        "did not follow from its start (resumed without load, or forked) gets ids that also hold a random epoch",
    ),
    (
        "v2 → v1",
        "user_message_chunk, agent_message_chunk, agent_thought_chunk",
        "user_message, agent_message, agent_thought, *_chunk",
        "the first chunk of a message becomes the whole-message update with that block, the next ones chunks "
        "with the message's id",
    ),
    (
        "v2 → v1",
        "session/load",
        "session/resume with replayFrom start",
        "replayed from the bridge's record when it followed the session from its start (the agent gets "
        "session/resume, or session/load with its replay not sent); else session/load, its replay "
        "translated; else refused (-32602, unmappable); another replayFrom is refused (-32602, unmappable)",
    ),
    (
        "v2 → v1",
        "session/load, session/resume",
        "session/resume without replayFrom",
        "session/resume when the bridge followed the session from its start and the agent can resume; else "
        "session/load with its replay counted and not sent when the agent can load (so later ids are the ones a "
        "replay gives); else session/resume (the session's new ids then hold a random epoch)",
    ),
    (
        "v2 → v1",
        "session/close (capability)",
        "session/close (baseline)",
        "forwarded when advertised; else session/cancel and the answer {}",
    ),
    (
        "v2 → v1",
        "session/list (capability)",
        "session/list (baseline)",
        "forwarded when advertised; else refused (-32601, unmappable)",
    ),
    (
        "v2 → v1",
        "modes, session/set_mode, current_mode_update",
        "config option of category mode",
        "the v1 modes become a select option (configId 'mode') added to configOptions; setting it is "
        "session/set_mode, answered with every option; current_mode_update becomes config_option_update",
    ),
    (
        "v2 → v1",
        "SessionConfigOption.id, group",
        "configId, groupId",
        "renamed; a value id's type 'id' is dropped on the way to v1",
    ),
    (
        "v2 → v1",
        "tool_call, tool_call_update",
        "tool_call_update",
        "both become tool_call_update; a diff becomes changes (modify, or add without oldText, of its path); "
        "terminal content is left out (the v1 agent was told the client has no terminals)",
    ),
    ("v2 → v1", "plan", "plan_update", "plan_update of type items with planId 'plan'"),
    ("v2 → v1", "available_commands_update input {hint}", "input {type: text, hint}", "type text added"),
    (
        "v2 → v1",
        "McpServer stdio (untagged, args and env required)",
        "McpServer stdio (type stdio)",
        "type dropped, args and env default to []",
    ),
    (
        "v2 → v1",
        "session/request_permission toolCall",
        "title, subject tool_call",
        "title from the tool call's (or 'Permission requested'), the tool call as subject",
    ),
    (
        "v2 → v1",
        "fs/*, terminal/* (client methods)",
        "—",
        "the agent is told the client has neither (clientCapabilities all false); a request anyway is refused to "
        "the agent (-32601, unmappable) and logged",
    ),
    ("v2 → v1", "—", "terminal/cancel, tool_call/cancel", "refused (-32601, unmappable)"),
    ("v2 → v1", "—", "batch (JSON array)", "refused with id null (-32600, unmappable): v1 has no batches"),
    (
        "v2 → v1",
        "—",
        "$/cancel_request of an acknowledged prompt",
        "not forwarded: the request is answered already (session/cancel stops the turn)",
    ),
    (
        "v1 → v2",
        "InitializeResponse",
        "InitializeResponse",
        "capabilities become agentCapabilities (loadSession and list, resume, close when session is present; {} "
        "markers become booleans), info becomes agentInfo, methodId becomes id (type agent dropped)",
    ),
    ("v1 → v2", "authenticate, logout", "auth/login, auth/logout", "sent as auth/login, auth/logout"),
    (
        "v1 → v2",
        "session/prompt answered with stopReason",
        "session/prompt acknowledged, state_update",
        "sent as a v2 prompt; the acknowledgement is kept; the client is answered with the stop reason and usage "
        "of the session's next state_update idle (one prompt after another, in order); an idle without a stop "
        "reason is answered -32603; $/cancel_request of the prompt becomes session/cancel",
    ),
    ("v1 → v2", "—", "user_message of the live turn", "not sent: the v1 client sent that prompt itself"),
    (
        "v1 → v2",
        "user_message_chunk, agent_message_chunk, agent_thought_chunk",
        "user_message, agent_message, agent_thought",
        "one chunk per content block, with the message's id",
    ),
    ("v1 → v2", "—", "state_update running, requires_action", "not sent"),
    ("v1 → v2", "session/load", "session/resume with replayFrom start", "sent so, the replay translated"),
    (
        "v1 → v2",
        "session/set_mode",
        "session/set_config_option",
        "of the session's option of category mode (type id); refused (-32602, unmappable) when there is none",
    ),
    (
        "v1 → v2",
        "modes, current_mode_update",
        "select config option of category mode",
        "modes added to setup answers from that option; current_mode_update sent when its value changes",
    ),
    ("v1 → v2", "—", "availableCommands of setup answers", "sent as available_commands_update after the answer"),
    (
        "v1 → v2",
        "tool_call, tool_call_update",
        "tool_call_update, tool_call_content_chunk",
        "the first tool_call_update of an id becomes tool_call (title: its title or the id); a content chunk "
        "becomes tool_call_update with the whole content so far (kept up to MAX_TOOL_CONTENT items)",
    ),
    (
        "v1 → v2",
        "diff {path, oldText, newText}",
        "diff {changes, patch}",
        "a content block of text: the patch text, or the changed paths",
    ),
    (
        "v1 → v2",
        "—",
        "terminal_update, terminal_output_chunk, terminal content",
        "not sent (v1 terminals are the client's); logged once per session",
    ),
    ("v1 → v2", "plan", "plan_update of type items", "plan with its entries; other plan_update types as they are"),
    (
        "v1 → v2",
        "session/request_permission toolCall",
        "subject tool_call",
        "the subject's tool call; without one, a tool call made of the title",
    ),
    ("v1 → v2", "McpServer sse", "—", "refused (-32602, unmappable): v2 removed the transport"),
    (
        "both",
        "—",
        "proxy/initialize (the bridge as a middle member of a chain)",
        "refused (-32601, unmappable): a proxy must keep protocolVersion; the bridge is the last member",
    ),
    ("both", "_-prefixed and unknown methods", "_-prefixed and unknown methods", "forwarded unchanged"),
    (
        "both",
        "a line over max_line_size",
        "a line over max_line_size",
        "a client's is answered -32600 with id null, an agent's dropped with a line on stderr",
    ),
    (
        "both",
        "the agent exits",
        "the agent exits",
        "every request in flight is answered -32603 (a v2 client's turn ends idle without a stop reason, the "
        "error in _meta.acpBridge.error), then the bridge exits with the agent's exit code",
    ),
    (
        "both",
        "the client leaves, SIGTERM, SIGHUP",
        "the client leaves, SIGTERM, SIGHUP",
        "the agent's stdin closes; its process group gets SIGTERM, then SIGKILL",
    ),
)


def message_id(session_id: str, role: str, index: int) -> str:
    """The id the bridge gives the ``index``-th ``role`` message (user, agent, thought) of a session."""
    return str(uuid.uuid5(NAMESPACE, f"{session_id}/{role}/{index}"))


def render_table(crossversion: Path) -> str:
    """docs/bridge.md: the schema's cross-version map and the bridge's rules as one table."""
    data = json.loads(crossversion.read_text(encoding="utf-8"))
    out = [
        "# The v1 ⇄ v2 bridge: every mapping",
        "",
        "Generated by `python -m acp_types.bridge --table schema/crossversion.json` from the bridge's rules",
        "(`acp_types.bridge.RULES`) and `schema/crossversion.json` (what corresponds between the versions).",
        "Do not edit by hand: `tests/test_bridge.py` holds this file equal to what the command prints.",
        "",
        "`client → agent`: `v2 → v1` is a v2 client in front of a v1 agent, `v1 → v2` a v1 client in front",
        'of a v2 agent. An error the bridge answers for what it cannot map has `data.bridge` `"unmappable"`.',
        "The rows from the map (`from`: methods, fields, capabilities, types) are what the rules above apply to:",
        "the bridge applies each rename; what one version alone has is mapped by a rule above, refused with",
        "that error, or (a session update no rule names) forwarded as it is.",
        "",
        "| from | client → agent | v1 | v2 | what the bridge does |",
        "| --- | --- | --- | --- | --- |",
    ]

    def cell(text: Any) -> str:
        return "—" if text is None else str(text).replace("|", "\\|").replace("\n", " ")

    for direction, v1, v2, how in RULES:
        out.append(f"| bridge | {direction} | {cell(v1)} | {cell(v2)} | {cell(how)} |")
    for kind in ("methods", "fields", "capabilities", "types"):
        for row in data.get(kind, []):
            v1, v2, note = row.get("v1"), row.get("v2"), row.get("note")
            if v1 is not None and v2 is not None:
                how = "renamed"
            elif v1 is None:
                how = "v2 only"
            else:
                how = "v1 only"
            if note:
                how = f"{how}: {note}"
            out.append(f"| {kind} | both | {cell(v1 and f'`{v1}`')} | {cell(v2 and f'`{v2}`')} | {cell(how)} |")
    return "\n".join(out) + "\n"


# -- JSON helpers ---------------------------------------------------------------


def _dumps(obj: Any) -> bytes:
    try:
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
    except UnicodeEncodeError:  # a lone surrogate the peer wrote as an escape: written back as one
        return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def _error(rid: Any, code: int, message: str, data: Any = None) -> Json:
    err: Json = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": err}


def _unmappable(rid: Any, code: int, message: str, **data: Any) -> Json:
    return _error(rid, code, f"acp-bridge: {message}", {"bridge": UNMAPPABLE, **data})


def _obj(value: Any) -> Json:
    return value if isinstance(value, dict) else {}


def _on(value: Any) -> bool:
    """A v2 marker ({} or an object) or a v1 boolean that says yes."""
    return value is True or isinstance(value, dict)


class _Lines:
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


class _Session:
    """What the bridge follows of one session."""

    def __init__(self, sid: str, *, known_start: bool) -> None:
        self.sid = sid
        self.counts = {"user": 0, "agent": 0, "thought": 0}
        self.current: dict[str, tuple[Any, str] | None] = {"user": None, "agent": None, "thought": None}
        self.last_role = ""
        self.epoch = "" if known_start else uuid.uuid4().hex[:8]
        # the record: [role, id, blocks]; None once dropped for room (then no replay from it)
        self.record: list[list[Any]] | None = [] if known_start else None
        self.record_bytes = 0
        self.modes: Json | None = None  # v1 SessionModeState (v2→v1) / the mode option (v1→v2)
        self.options: list[Json] = []  # the v2 configOptions last known (v2→v1)
        self.mode_option: str | None = None  # v1→v2: the configId of the mode option
        self.mode_value: Any = None
        self.silent = 0  # v2→v1: replays being counted and not sent
        self.ignored = 0  # v2→v1: replays the bridge's record already holds: neither counted nor sent
        self.replaying = False
        self.prompts: deque[Any] = deque()  # v1→v2: client ids waiting for idle
        self.acks: set[str] = set()  # v1→v2: user message ids of live turns
        self.tools: dict[str, list[Any]] = {}  # v1→v2: tool call id -> content so far
        self.warned = False
        self.waiting: deque[list[Any]] = deque()  # v2→v1: accepted prompts [user id, params, cancelled]
        self.running = False  # v2→v1: a v1 prompt is with the agent

    def new_id(self, role: str) -> str:
        n = self.counts[role]
        self.counts[role] = n + 1
        if self.epoch:
            return message_id(f"{self.sid}#{self.epoch}", role, n)
        return message_id(self.sid, role, n)

    def begin_user(self, key: Any = None, mid: str | None = None) -> str:
        mid = mid or self.new_id("user")
        self.current = {"user": (key, mid), "agent": None, "thought": None}
        self.last_role = "user"
        return mid

    def message(self, role: str, key: Any) -> tuple[str, bool]:
        """The id of the message a chunk of ``role`` belongs to, and whether the chunk starts it."""
        cur = self.current[role]
        if role == "user" and self.last_role != "user":
            cur = None
        if cur is not None and (key is None or cur[0] == key):
            self.last_role = role
            return cur[1], False
        if role == "user":
            return self.begin_user(key), True
        mid = self.new_id(role)
        self.current[role] = (key, mid)
        self.last_role = role
        return mid, True


class _Mode:
    """A translating bridge: one client, one agent, each in its own version."""

    def __init__(self, bridge: _Bridge, agent_init: Json) -> None:
        self.bridge = bridge
        self.agent_init = agent_init
        self.sessions: OrderedDict[str, _Session] = OrderedDict()
        self.to_agent_pending: dict[Any, Callable[[Json], Awaitable[None]]] = {}
        self.to_client_pending: dict[Any, Callable[[Json], Awaitable[None]]] = {}
        self.record_bytes = 0
        self.next_id = 0
        self.gone = False  # the agent exited

    # -- plumbing --

    async def client(self, obj: Json) -> None:
        await self.bridge.to_client(_dumps(obj))

    async def agent(self, obj: Json) -> None:
        await self.bridge.to_agent(_dumps(obj))

    def session(self, sid: Any, *, known_start: bool = False, create: bool = True) -> _Session | None:
        if not isinstance(sid, str):
            return None
        s = self.sessions.get(sid)
        if s is not None:
            self.sessions.move_to_end(sid)
            return s
        if not create:
            return None
        s = self.sessions[sid] = _Session(sid, known_start=known_start)
        if len(self.sessions) > MAX_SESSIONS:
            _, old = self.sessions.popitem(last=False)
            self.record_bytes -= old.record_bytes
        return s

    def record(self, s: _Session, role: str, mid: str, block: Any, new: bool) -> None:
        if s.record is None:
            return
        size = len(_dumps(block))
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
        msg = self.parse(line)
        if msg is None:
            await self.bridge.to_agent(line + b"\n")
            return
        if isinstance(msg, list):
            await self.client(_unmappable(None, INVALID_REQUEST, "a batch cannot be bridged to a v1 agent"))
            return
        if "method" in msg:
            if "id" in msg:
                if len(self.to_agent_pending) >= MAX_PENDING:
                    await self.client(_error(msg["id"], INTERNAL_ERROR, "acp-bridge: too many requests in flight"))
                    return
                await self.client_request(msg, msg["method"], msg.get("params"))
            else:
                await self.client_notification(msg, msg["method"], msg.get("params"))
            return
        then = self.to_client_pending.pop(msg.get("id"), None)
        if then is None:
            await self.agent(msg)
        else:
            await then(msg)

    async def _from_agent(self, line: bytes) -> None:
        msg = self.parse(line)
        if not isinstance(msg, dict):
            await self.bridge.to_client(line + b"\n")
            return
        if "method" in msg:
            if "id" in msg:
                if len(self.to_client_pending) >= MAX_PENDING:
                    await self.agent(_error(msg["id"], INTERNAL_ERROR, "acp-bridge: too many requests in flight"))
                    return
                await self.agent_request(msg, msg["method"], msg.get("params"))
            else:
                await self.agent_notification(msg, msg["method"], msg.get("params"))
            return
        then = self.to_agent_pending.pop(msg.get("id"), None)
        if then is None:
            await self.client(msg)
        else:
            await then(msg)

    @staticmethod
    def parse(line: bytes) -> Any:
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            return None
        return msg if isinstance(msg, (dict, list)) else None

    async def agent_gone(self) -> None:
        """Answer what is in flight at the agent with an error (a prompt of the bridge's own: its turn ends)."""
        self.gone = True
        pending, self.to_agent_pending = self.to_agent_pending, {}
        for rid, then in pending.items():
            await then(_error(rid, INTERNAL_ERROR, "acp-bridge: the agent exited"))

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


# -- v1 → v2 shapes -------------------------------------------------------------


def _auth_up(method: Any) -> Any:
    if not isinstance(method, dict):
        return method
    out = {k: v for k, v in method.items() if k != "id"}
    out = {"methodId": method.get("id"), **out}
    if method.get("type") == "terminal":
        env = method.get("env")
        if isinstance(env, dict):
            out["env"] = [{"name": k, "value": v} for k, v in env.items()]
    elif "type" not in method or method.get("type") == "agent":
        out["type"] = "agent"
    return out


def _auth_down(method: Any) -> Any:
    if not isinstance(method, dict):
        return method
    out = {k: v for k, v in method.items() if k != "methodId"}
    out = {"id": method.get("methodId"), **out}
    if method.get("type") == "terminal":
        env = method.get("env")
        if isinstance(env, list):
            out["env"] = {e.get("name"): e.get("value") for e in env if isinstance(e, dict)}
    elif method.get("type") == "agent":
        del out["type"]
    return out


def _caps_up(result: Json) -> Json:
    ac = _obj(result.get("agentCapabilities"))
    sc = _obj(ac.get("sessionCapabilities"))
    pc = _obj(ac.get("promptCapabilities"))
    mc = _obj(ac.get("mcpCapabilities"))
    session: Json = {}
    prompt: Json = {k: {} for k in ("image", "audio", "embeddedContext") if pc.get(k) is True}
    if prompt:
        session["prompt"] = prompt
    mcp: Json = {"stdio": {}}
    for k in ("http", "acp"):
        if mc.get(k) is True:
            mcp[k] = {}
    session["mcp"] = mcp
    for k in ("delete", "archive", "additionalDirectories", "fork"):
        if _on(sc.get(k)):
            session[k] = sc[k] if isinstance(sc[k], dict) else {}
    caps: Json = {"session": session}
    if isinstance(ac.get("providers"), dict):
        caps["providers"] = ac["providers"]
    return caps


def _caps_down(result: Json) -> Json:
    caps = _obj(result.get("capabilities"))
    session = caps.get("session")
    ac: Json = {}
    if isinstance(session, dict):
        ac["loadSession"] = True
        sc: Json = {"list": {}, "resume": {}, "close": {}}
        for k in ("delete", "archive", "additionalDirectories", "fork"):
            if isinstance(session.get(k), dict):
                sc[k] = session[k]
        ac["sessionCapabilities"] = sc
        prompt = _obj(session.get("prompt"))
        ac["promptCapabilities"] = {k: True for k in ("image", "audio", "embeddedContext") if _on(prompt.get(k))}
        mcp = _obj(session.get("mcp"))
        ac["mcpCapabilities"] = {k: True for k in ("http", "acp") if _on(mcp.get(k))}
    if isinstance(caps.get("providers"), dict):
        ac["providers"] = caps["providers"]
    return ac


def _client_caps_down(params: Json) -> Json:
    """A v2 client's capabilities as v1 clientCapabilities."""
    caps = _obj(params.get("capabilities"))
    out: Json = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    if _on(_obj(caps.get("auth")).get("terminal")):
        out["auth"] = {"terminal": True}
    if isinstance(caps.get("elicitation"), dict):
        out["elicitation"] = caps["elicitation"]
    return out


def _client_caps_up(params: Json) -> Json:
    """A v1 client's capabilities as v2 capabilities."""
    caps = _obj(params.get("clientCapabilities"))
    out: Json = {}
    if _obj(caps.get("auth")).get("terminal") is True:
        out["auth"] = {"terminal": {}}
    if isinstance(caps.get("elicitation"), dict):
        out["elicitation"] = caps["elicitation"]
    return out


def _option_up(option: Any) -> Any:
    if not isinstance(option, dict):
        return option
    out = dict(option)
    if "id" in out:
        out["configId"] = out.pop("id")
    if isinstance(out.get("options"), list):
        out["options"] = [
            {("groupId" if k == "group" else k): v for k, v in o.items()} if isinstance(o, dict) else o
            for o in out["options"]
        ]
    return out


def _option_down(option: Any) -> Any:
    if not isinstance(option, dict):
        return option
    out = dict(option)
    if "configId" in out:
        out["id"] = out.pop("configId")
    if isinstance(out.get("options"), list):
        out["options"] = [
            {("group" if k == "groupId" else k): v for k, v in o.items()} if isinstance(o, dict) else o
            for o in out["options"]
        ]
    return out


MODE_OPTION = "mode"


def _mode_option(modes: Json) -> Json:
    return {
        "type": "select",
        "configId": MODE_OPTION,
        "name": "Mode",
        "category": "mode",
        "currentValue": modes.get("currentModeId"),
        "options": [
            {
                k: v
                for k, v in (("value", m.get("id")), ("name", m.get("name")), ("description", m.get("description")))
                if v is not None
            }
            for m in modes.get("availableModes") or []
            if isinstance(m, dict)
        ],
    }


def _commands_up(commands: Any) -> Any:
    if not isinstance(commands, list):
        return commands
    out = []
    for c in commands:
        if isinstance(c, dict) and isinstance(c.get("input"), dict) and "type" not in c["input"]:
            c = {**c, "input": {"type": "text", **c["input"]}}
        out.append(c)
    return out


def _commands_down(commands: Any) -> Any:
    if not isinstance(commands, list):
        return commands
    out = []
    for c in commands:
        if isinstance(c, dict) and isinstance(c.get("input"), dict) and c["input"].get("type") == "text":
            c = {**c, "input": {k: v for k, v in c["input"].items() if k != "type"}}
        out.append(c)
    return out


def _content_up(items: Any) -> Any:
    if not isinstance(items, list):
        return items
    out = []
    for item in items:
        if isinstance(item, dict) and item.get("type") == "diff" and "path" in item:
            op = "modify" if item.get("oldText") is not None else "add"
            change = {"operation": op, "path": item["path"]}
            item = {"type": "diff", "changes": [change], **({"_meta": item["_meta"]} if "_meta" in item else {})}
        elif isinstance(item, dict) and item.get("type") == "terminal":
            continue  # a v1 client terminal: the v2 client has none (the agent was told so)
        out.append(item)
    return out


def _content_down(items: Any) -> Any:
    if not isinstance(items, list):
        return items
    out = []
    for item in items:
        if isinstance(item, dict) and item.get("type") == "diff":
            patch = _obj(item.get("patch")).get("text")
            paths = [c.get("path") for c in item.get("changes") or [] if isinstance(c, dict)]
            text = patch if isinstance(patch, str) else "changed: " + ", ".join(str(p) for p in paths)
            item = {"type": "content", "content": {"type": "text", "text": text}}
        elif isinstance(item, dict) and item.get("type") not in ("content", "diff"):
            continue  # a v2 display terminal or an unknown kind: v1 has no such content
        out.append(item)
    return out


def _servers_down(servers: Any, rid: Any) -> tuple[Any, Json | None]:
    """v2 MCP servers for a v1 agent: stdio untagged with args and env."""
    if not isinstance(servers, list):
        return servers, None
    out = []
    for s in servers:
        if isinstance(s, dict) and s.get("type") == "stdio":
            s = {k: v for k, v in s.items() if k != "type"}
            s.setdefault("args", [])
            s.setdefault("env", [])
        out.append(s)
    return out, None


def _servers_up(servers: Any, rid: Any) -> tuple[Any, Json | None]:
    if not isinstance(servers, list):
        return servers, None
    out = []
    for s in servers:
        if isinstance(s, dict):
            if s.get("type") == "sse":
                return None, _unmappable(rid, INVALID_PARAMS, "v2 has no SSE MCP servers", field="mcpServers")
            if "type" not in s:
                s = {"type": "stdio", **s}
        out.append(s)
    return out, None


# -- a v2 client in front of a v1 agent -----------------------------------------


class _UpV2(_Mode):
    """The v2 conversation made from a v1 agent's."""

    RENAMES = {"auth/login": "authenticate", "auth/logout": "logout"}

    def caps(self) -> tuple[Json, Json]:
        ac = _obj(self.agent_init.get("agentCapabilities"))
        return ac, _obj(ac.get("sessionCapabilities"))

    def init_result(self, result: Json) -> Json:
        out: Json = {
            "protocolVersion": 2,
            "info": result.get("agentInfo") or {"name": "unnamed v1 agent (through acp-bridge)", "version": "0"},
            "capabilities": _caps_up(result),
        }
        if result.get("authMethods"):
            out["authMethods"] = [_auth_up(m) for m in result["authMethods"]]
        if "_meta" in result:
            out["_meta"] = result["_meta"]
        return out

    def setup_result(self, s: _Session | None, result: Any) -> Any:
        """A v1 answer of session/new, load, resume or fork as v2's."""
        if not isinstance(result, dict):
            return result
        out = {k: v for k, v in result.items() if k not in ("modes", "configOptions")}
        options = [_option_up(o) for o in result.get("configOptions") or []]
        modes = result.get("modes")
        if s is not None:
            s.modes = modes if isinstance(modes, dict) else None
            s.options = options
        if isinstance(modes, dict) and not any(_obj(o).get("category") == "mode" for o in options):
            options = [*options, _mode_option(modes)]
        if options:
            out["configOptions"] = options
        return out

    def options_of(self, s: _Session) -> list[Json]:
        if s.modes is not None and not any(_obj(o).get("category") == "mode" for o in s.options):
            return [*s.options, _mode_option(s.modes)]
        return list(s.options)

    async def client_request(self, msg: Json, method: str, params: Any) -> None:
        rid = msg.get("id")
        p = _obj(params)
        ac, sc = self.caps()
        if method in self.RENAMES:
            await self.forward_request(msg, self.RENAMES[method], params)
        elif method in ("terminal/cancel", "tool_call/cancel"):
            await self.client(_unmappable(rid, METHOD_NOT_FOUND, f"{method} has no v1 equivalent", method=method))
        elif method == "session/new" or method == "session/fork":
            servers, err = _servers_down(p.get("mcpServers"), rid)
            sent = {**p, "mcpServers": servers if servers is not None else []} if method == "session/new" else p

            async def created(answer: Json) -> None:
                result = answer.get("result")
                if isinstance(result, dict):
                    # a fork starts with its parent's history, which the bridge did not count in it
                    s = self.session(result.get("sessionId"), known_start=method == "session/new")
                    answer = {**answer, "result": self.setup_result(s, result)}
                await self.client(answer)

            await self.forward_request(msg, method, sent, created)
        elif method == "session/resume":
            await self.resume(msg, p)
        elif method == "session/list" and not _on(sc.get("list")):
            await self.client(_unmappable(rid, METHOD_NOT_FOUND, "the v1 agent cannot list sessions", method=method))
        elif method == "session/close" and not _on(sc.get("close")):
            await self.agent(
                {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": p.get("sessionId")}}
            )
            await self.client({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "session/set_config_option":
            await self.set_option(msg, p)
        elif method == "session/prompt":
            await self.prompt(msg, p)
        else:
            await self.forward_request(msg, method, params)

    async def set_option(self, msg: Json, p: Json) -> None:
        s = self.session(p.get("sessionId"), create=False)
        if s is not None and s.modes is not None and p.get("configId") == MODE_OPTION:
            value = p.get("value")

            async def moded(answer: Json) -> None:
                if "result" in answer and s.modes is not None:
                    s.modes = {**s.modes, "currentModeId": value}
                    answer = {**answer, "result": {"configOptions": self.options_of(s)}}
                await self.client(answer)

            await self.forward_request(msg, "session/set_mode", {"sessionId": s.sid, "modeId": value}, moded)
            return
        sent = {k: v for k, v in p.items() if not (k == "type" and v == "id")}  # v1's value id has no type

        async def set_(answer: Json) -> None:
            result = answer.get("result")
            if isinstance(result, dict) and s is not None:
                s.options = [_option_up(o) for o in result.get("configOptions") or []]
                answer = {**answer, "result": {**result, "configOptions": self.options_of(s)}}
            elif isinstance(result, dict):
                answer = {
                    **answer,
                    "result": {**result, "configOptions": [_option_up(o) for o in result.get("configOptions") or []]},
                }
            await self.client(answer)

        await self.forward_request(msg, "session/set_config_option", sent, set_)

    async def resume(self, msg: Json, p: Json) -> None:
        rid = msg.get("id")
        ac, sc = self.caps()
        sid = p.get("sessionId")
        replay = p.get("replayFrom")
        if replay is not None and _obj(replay).get("type") != "start":
            await self.client(_unmappable(rid, INVALID_PARAMS, "v1 replays only from the start", field="replayFrom"))
            return
        servers, _ = _servers_down(p.get("mcpServers"), rid)
        base = {k: v for k, v in p.items() if k not in ("replayFrom", "mcpServers")}
        base["mcpServers"] = servers if servers is not None else []
        s = self.session(sid, create=False)
        can_load = ac.get("loadSession") is True
        if s is not None and s.record is not None and replay is not None:
            record = [list(r) for r in s.record]
            kept = s

            async def resumed(answer: Json) -> None:
                kept.ignored = max(0, kept.ignored - 1)
                if "result" in answer:
                    for role, mid, blocks in record:
                        kind = {"user": "user_message", "agent": "agent_message", "thought": "agent_thought"}[role]
                        await self.update(kept.sid, {"sessionUpdate": kind, "messageId": mid, "content": blocks})
                    answer = {**answer, "result": self.setup_result(kept, answer["result"])}
                await self.client(answer)

            if _on(sc.get("resume")):
                await self.forward_request(msg, "session/resume", base, resumed)
            else:
                s.ignored += 1
                await self.forward_request(msg, "session/load", base, resumed)
            return
        if s is not None and not s.epoch and replay is None and _on(sc.get("resume")):
            kept = s  # followed from its start: its counts hold, nothing to load

            async def plain_resume(answer: Json) -> None:
                if "result" in answer:
                    answer = {**answer, "result": self.setup_result(kept, answer["result"])}
                await self.client(answer)

            await self.forward_request(msg, "session/resume", base, plain_resume)
            return
        if can_load:
            fresh = _Session(str(sid), known_start=True)
            if s is not None:  # keep what the bridge knows beyond the counts
                fresh.modes, fresh.options = s.modes, s.options
            if isinstance(sid, str):
                self.sessions[sid] = fresh
                if s is not None:
                    self.record_bytes -= s.record_bytes
            fresh.replaying = True
            if replay is None:
                fresh.silent += 1

            async def loaded(answer: Json) -> None:
                fresh.replaying = False
                fresh.silent = 0
                if "result" in answer:
                    answer = {**answer, "result": self.setup_result(fresh, answer["result"])}
                await self.client(answer)

            await self.forward_request(msg, "session/load", base, loaded)
            return
        if replay is not None:
            await self.client(
                _unmappable(
                    rid,
                    INVALID_PARAMS,
                    "cannot replay: the v1 agent has no session/load and this bridge did not follow the session",
                    field="replayFrom",
                )
            )
            return
        if not _on(sc.get("resume")):
            await self.client(_unmappable(rid, METHOD_NOT_FOUND, "the v1 agent can neither resume nor load"))
            return
        s = self.session(sid)

        async def plain(answer: Json) -> None:
            if "result" in answer:
                answer = {**answer, "result": self.setup_result(s, answer["result"])}
            await self.client(answer)

        await self.forward_request(msg, "session/resume", base, plain)

    async def prompt(self, msg: Json, p: Json) -> None:
        rid = msg.get("id")
        s = self.session(p.get("sessionId"))
        if s is None:
            await self.forward_request(msg, "session/prompt", p)
            return
        if len(s.waiting) >= MAX_QUEUED_PROMPTS:
            await self.client(
                _error(rid, INVALID_REQUEST, f"acp-bridge: {len(s.waiting)} prompts wait on this session already")
            )
            return
        user = s.new_id("user")  # numbered when accepted, so in the order of the session's history
        await self.client({"jsonrpc": "2.0", "id": rid, "result": {"messageId": user}})
        s.waiting.append([user, p, False])
        await self.start_next(s)

    async def start_next(self, s: _Session) -> None:
        """Start the session's next accepted prompt, unless one is running (a v1 agent takes one at a time)."""
        while not s.running and s.waiting:
            user, p, cancelled = s.waiting.popleft()
            blocks: list[Any] = p["prompt"] if isinstance(p.get("prompt"), list) else []
            s.begin_user(mid=user)
            if s.record is not None:
                for i, block in enumerate(blocks or [{"type": "text", "text": ""}]):
                    self.record(s, "user", user, block, i == 0)
            await self.update(s.sid, {"sessionUpdate": "user_message", "messageId": user, "content": blocks})
            if cancelled:  # cancelled while it waited: it never reaches the agent
                await self.update(s.sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"})
                continue
            if self.gone:
                error = {"code": INTERNAL_ERROR, "message": "acp-bridge: the agent exited"}
                idle = {"sessionUpdate": "state_update", "state": "idle", "_meta": {"acpBridge": {"error": error}}}
                await self.update(s.sid, idle)
                continue
            await self.update(s.sid, {"sessionUpdate": "state_update", "state": "running"})
            s.running = True
            await self.request_agent("session/prompt", p, self.ended(s))

    def ended(self, s: _Session) -> Callable[[Json], Awaitable[None]]:
        async def ended(answer: Json) -> None:
            idle: Json = {"sessionUpdate": "state_update", "state": "idle"}
            result = answer.get("result")
            if isinstance(result, dict):
                if result.get("stopReason") is not None:
                    idle["stopReason"] = result["stopReason"]
                if result.get("usage") is not None:
                    idle["usage"] = result["usage"]
            else:
                idle["_meta"] = {"acpBridge": {"error": answer.get("error")}}
                print(f"acp-bridge: the v1 agent refused a prompt: {answer.get('error')}", file=sys.stderr)
            await self.update(s.sid, idle)
            s.running = False
            await self.start_next(s)

        return ended

    async def update(self, sid: str, update: Json) -> None:
        await self.client(
            {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}}
        )

    async def client_notification(self, msg: Json, method: str, params: Any) -> None:
        if method == "$/cancel_request":
            if _obj(params).get("requestId") not in self.to_agent_pending:
                return  # answered already (a v2 prompt's acknowledgement): nothing to cancel
        if method == "session/cancel":
            s = self.session(_obj(params).get("sessionId"), create=False)
            for waiting in s.waiting if s is not None else ():
                waiting[2] = True
        await self.agent(msg)

    async def agent_request(self, msg: Json, method: str, params: Any) -> None:
        rid = msg.get("id")
        if method.startswith(("fs/", "terminal/")):
            print(f"acp-bridge: refused the v1 agent's {method}: a v2 client has none", file=sys.stderr)
            await self.agent(
                _unmappable(rid, METHOD_NOT_FOUND, f"{method}: the v2 client has no such method", method=method)
            )
            return
        if method == "session/request_permission":
            p = _obj(params)
            tool = _obj(p.get("toolCall"))
            if "content" in tool:
                tool = {**tool, "content": _content_up(tool["content"])}
            sent: Json = {
                "sessionId": p.get("sessionId"),
                "title": tool.get("title") or "Permission requested",
                "subject": {"type": "tool_call", "toolCall": tool},
                "options": p.get("options"),
            }
            if "_meta" in p:
                sent["_meta"] = p["_meta"]
            msg = {**msg, "params": sent}
        await super().agent_request(msg, method, params)

    async def agent_notification(self, msg: Json, method: str, params: Any) -> None:
        p = _obj(params)
        if method != "session/update" or not isinstance(p.get("update"), dict):
            await self.client(msg)
            return
        s = self.session(p.get("sessionId"))
        if s is None:
            await self.client(msg)
            return
        if s.ignored:
            return  # a session/load's replay of what the bridge replays from its record
        for update in self.translate(s, p["update"]):
            if not s.silent:
                await self.client({**msg, "params": {**p, "update": update}})

    def translate(self, s: _Session, u: Json) -> list[Json]:
        kind = u.get("sessionUpdate")
        roles = {"user_message_chunk": "user", "agent_message_chunk": "agent", "agent_thought_chunk": "thought"}
        if kind in roles:
            role = roles[kind]
            if (
                role == "user"
                and not (s.replaying or s.silent)
                and s.current["user"] is not None
                and s.last_role == "user"
            ):
                mid, first = s.current["user"][1], False  # the agent echoing the live prompt
            else:
                mid, first = s.message(role, u.get("messageId"))
            block = u.get("content")
            self.record(s, role, mid, block, first)
            rest = {k: v for k, v in u.items() if k not in ("sessionUpdate", "messageId", "content")}
            if first:
                whole = {"user": "user_message", "agent": "agent_message", "thought": "agent_thought"}[role]
                return [{"sessionUpdate": whole, "messageId": mid, "content": [block], **rest}]
            return [{**u, "messageId": mid}]
        if kind in ("tool_call", "tool_call_update"):
            out = {**u, "sessionUpdate": "tool_call_update"}
            if "content" in out:
                out["content"] = _content_up(out["content"])
            return [out]
        if kind == "plan":
            plan = {"type": "items", "planId": "plan", "entries": u.get("entries", [])}
            return [{"sessionUpdate": "plan_update", "plan": plan, **({"_meta": u["_meta"]} if "_meta" in u else {})}]
        if kind == "available_commands_update":
            return [{**u, "availableCommands": _commands_up(u.get("availableCommands"))}]
        if kind == "current_mode_update":
            if s.modes is None:
                return []
            s.modes = {**s.modes, "currentModeId": u.get("currentModeId")}
            return [{"sessionUpdate": "config_option_update", "configOptions": self.options_of(s)}]
        if kind == "config_option_update":
            s.options = [_option_up(o) for o in u.get("configOptions") or []]
            return [{**u, "configOptions": self.options_of(s)}]
        return [u]


# -- a v1 client in front of a v2 agent -----------------------------------------


class _DownV1(_Mode):
    """The v1 conversation made from a v2 agent's."""

    RENAMES = {"authenticate": "auth/login", "logout": "auth/logout"}

    def init_result(self, result: Json) -> Json:
        out: Json = {"protocolVersion": 1, "agentCapabilities": _caps_down(result)}
        if isinstance(result.get("info"), dict):
            out["agentInfo"] = result["info"]
        out["authMethods"] = [_auth_down(m) for m in result.get("authMethods") or []]
        if "_meta" in result:
            out["_meta"] = result["_meta"]
        return out

    def setup_result(self, s: _Session | None, result: Any) -> tuple[Any, Any]:
        """A v2 setup answer as v1's, and the commands to send after it."""
        if not isinstance(result, dict):
            return result, None
        out = {k: v for k, v in result.items() if k not in ("configOptions", "availableCommands")}
        options = result.get("configOptions")
        if isinstance(options, list):
            out["configOptions"] = [_option_down(o) for o in options]
            modes = self.modes(s, options)
            if modes is not None:
                out["modes"] = modes
        return out, result.get("availableCommands") or None

    def modes(self, s: _Session | None, options: list[Any]) -> Json | None:
        for o in options:
            if isinstance(o, dict) and o.get("category") == "mode" and o.get("type") == "select":
                values: list[Json] = []
                for v in o.get("options") or []:
                    if isinstance(v, dict) and isinstance(v.get("options"), list):
                        values += [x for x in v["options"] if isinstance(x, dict)]
                    elif isinstance(v, dict):
                        values.append(v)
                if s is not None:
                    s.mode_option, s.mode_value = o.get("configId"), o.get("currentValue")
                return {
                    "currentModeId": o.get("currentValue"),
                    "availableModes": [
                        {
                            k: x[w]
                            for k, w in (("id", "value"), ("name", "name"), ("description", "description"))
                            if x.get(w) is not None
                        }
                        for x in values
                    ],
                }
        return None

    async def setup(self, msg: Json, method: str, sent: Json, sid: Any) -> None:
        async def answered(answer: Json) -> None:
            result = answer.get("result")
            commands = None
            if isinstance(result, dict):
                s = self.session(result.get("sessionId", sid))
                if s is not None:
                    s.replaying = False
                mapped, commands = self.setup_result(s, result)
                answer = {**answer, "result": mapped}
            await self.client(answer)
            the_sid = result.get("sessionId", sid) if isinstance(result, dict) else sid
            if commands:
                await self.update(
                    the_sid,
                    {"sessionUpdate": "available_commands_update", "availableCommands": _commands_down(commands)},
                )

        await self.forward_request(msg, method, sent, answered)

    async def client_request(self, msg: Json, method: str, params: Any) -> None:
        rid = msg.get("id")
        p = _obj(params)
        if method in self.RENAMES:
            await self.forward_request(msg, self.RENAMES[method], params)
        elif method in ("session/new", "session/load", "session/resume", "session/fork"):
            sent = dict(p)
            if "mcpServers" in p:
                servers, err = _servers_up(p.get("mcpServers"), rid)
                if err is not None:
                    await self.client(err)
                    return
                sent["mcpServers"] = servers
            target = method
            if method == "session/load":
                target = "session/resume"
                sent["replayFrom"] = {"type": "start"}
                s = self.session(p.get("sessionId"))
                if s is not None:
                    s.replaying = True
            await self.setup(msg, target, sent, p.get("sessionId"))
        elif method == "session/set_mode":
            s = self.session(p.get("sessionId"), create=False)
            if s is None or s.mode_option is None:
                await self.client(
                    _unmappable(rid, INVALID_PARAMS, "the session has no config option of category mode", method=method)
                )
                return
            value = p.get("modeId")
            kept = s

            async def moded(answer: Json) -> None:
                if "result" in answer:
                    kept.mode_value = value
                    answer = {**answer, "result": {}}
                await self.client(answer)

            sent = {"sessionId": s.sid, "configId": s.mode_option, "type": "id", "value": value}
            await self.forward_request(msg, "session/set_config_option", sent, moded)
        elif method == "session/set_config_option":
            sent = dict(p)
            if "type" not in sent:
                sent["type"] = "id"

            async def set_(answer: Json) -> None:
                result = answer.get("result")
                if isinstance(result, dict):
                    options = result.get("configOptions") or []
                    s = self.session(p.get("sessionId"), create=False)
                    if s is not None:
                        self.modes(s, options)
                    answer = {**answer, "result": {**result, "configOptions": [_option_down(o) for o in options]}}
                await self.client(answer)

            await self.forward_request(msg, method, sent, set_)
        elif method == "session/prompt":
            s = self.session(p.get("sessionId"))
            if s is None:
                await self.forward_request(msg, method, params)
                return

            async def acked(answer: Json) -> None:
                if "error" in answer:
                    with contextlib.suppress(ValueError):
                        s.prompts.remove(rid)
                    await self.client({**answer, "id": rid})
                elif isinstance(answer.get("result"), dict):
                    mid = answer["result"].get("messageId")
                    if isinstance(mid, str) and len(s.acks) < 64:
                        s.acks.add(mid)

            s.prompts.append(rid)
            await self.request_agent(method, p, acked)
        else:
            await self.forward_request(msg, method, params)

    async def update(self, sid: Any, update: Json) -> None:
        await self.client(
            {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}}
        )

    async def client_notification(self, msg: Json, method: str, params: Any) -> None:
        if method == "$/cancel_request":
            wanted = _obj(params).get("requestId")
            for s in self.sessions.values():
                if wanted in s.prompts:
                    await self.agent({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": s.sid}})
                    return
        await self.agent(msg)

    async def agent_gone(self) -> None:
        await super().agent_gone()
        for s in self.sessions.values():
            while s.prompts:
                await self.client(_error(s.prompts.popleft(), INTERNAL_ERROR, "acp-bridge: the agent exited"))

    async def agent_request(self, msg: Json, method: str, params: Any) -> None:
        if method == "session/request_permission":
            p = _obj(params)
            subject = _obj(p.get("subject"))
            if subject.get("type") == "tool_call" and isinstance(subject.get("toolCall"), dict):
                tool = dict(subject["toolCall"])
                if "content" in tool:
                    tool["content"] = _content_down(tool["content"])
            else:
                tool = {"toolCallId": f"acp-bridge-permission-{msg.get('id')}", "title": p.get("title")}
            sent: Json = {"sessionId": p.get("sessionId"), "toolCall": tool, "options": p.get("options")}
            if "_meta" in p:
                sent["_meta"] = p["_meta"]
            msg = {**msg, "params": sent}
        await super().agent_request(msg, method, params)

    async def agent_notification(self, msg: Json, method: str, params: Any) -> None:
        p = _obj(params)
        if method != "session/update" or not isinstance(p.get("update"), dict):
            await self.client(msg)
            return
        s = self.session(p.get("sessionId"))
        if s is None:
            await self.client(msg)
            return
        u = p["update"]
        if u.get("sessionUpdate") == "state_update":
            if u.get("state") == "idle" and s.prompts:
                rid = s.prompts.popleft()
                if u.get("stopReason") is None:
                    await self.client(_error(rid, INTERNAL_ERROR, "acp-bridge: the turn ended without a stop reason"))
                    return
                result: Json = {"stopReason": u["stopReason"]}
                if u.get("usage") is not None:
                    result["usage"] = u["usage"]
                await self.client({"jsonrpc": "2.0", "id": rid, "result": result})
            return
        for update in self.translate(s, u):
            await self.client({**msg, "params": {**p, "update": update}})

    def translate(self, s: _Session, u: Json) -> list[Json]:
        kind = u.get("sessionUpdate")
        whole = {
            "user_message": "user_message_chunk",
            "agent_message": "agent_message_chunk",
            "agent_thought": "agent_thought_chunk",
        }
        if kind in whole:
            if kind == "user_message" and not s.replaying and (u.get("messageId") in s.acks or s.prompts):
                s.acks.discard(u.get("messageId"))
                return []  # the live turn's own prompt: the v1 client sent it
            content = u.get("content") or []
            rest = {k: v for k, v in u.items() if k not in ("sessionUpdate", "content")}
            return [{"sessionUpdate": whole[kind], **rest, "content": b} for b in content]
        if kind == "tool_call_update":
            tid = u.get("toolCallId")
            out = dict(u)
            if "content" in out:
                out["content"] = _content_down(out["content"])
                if isinstance(tid, str) and tid in s.tools and isinstance(out["content"], list):
                    s.tools[tid] = list(out["content"])[:MAX_TOOL_CONTENT]
            if isinstance(tid, str) and tid not in s.tools:
                if len(s.tools) >= MAX_TOOL_CONTENT:
                    s.tools.pop(next(iter(s.tools)))
                s.tools[tid] = list(out.get("content") or [])[:MAX_TOOL_CONTENT]
                out["sessionUpdate"] = "tool_call"
                if not out.get("title"):
                    out["title"] = tid
                return [{k: v for k, v in out.items() if v is not None or k in ("rawInput", "rawOutput")}]
            return [out]
        if kind == "tool_call_content_chunk":
            tid = u.get("toolCallId")
            items = _content_down([u.get("content")])
            kept = s.tools.setdefault(str(tid), [])
            if len(kept) < MAX_TOOL_CONTENT:
                kept += items
            return [{"sessionUpdate": "tool_call_update", "toolCallId": tid, "content": list(kept)}]
        if kind in ("terminal_update", "terminal_output_chunk"):
            if not s.warned:
                s.warned = True
                print(f"acp-bridge: v1 has no display terminals; {kind} of session {s.sid} not sent", file=sys.stderr)
            return []
        if kind == "plan_update":
            plan = _obj(u.get("plan"))
            if plan.get("type") == "items":
                return [{"sessionUpdate": "plan", "entries": plan.get("entries", [])}]
            return [u]
        if kind == "available_commands_update":
            return [{**u, "availableCommands": _commands_down(u.get("availableCommands"))}]
        if kind == "config_option_update":
            options = u.get("configOptions") or []
            before = s.mode_value
            self.modes(s, options)
            changed = [{**u, "configOptions": [_option_down(o) for o in options]}]
            if s.mode_option is not None and s.mode_value != before:
                changed.append({"sessionUpdate": "current_mode_update", "currentModeId": s.mode_value})
            return changed
        return [u]


# -- the process ----------------------------------------------------------------


class _Bridge:
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
        self.mode: _Mode | None = None
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
            msg = _Mode.parse(line)
            if isinstance(msg, dict) and msg.get("method") == "proxy/initialize" and "id" in msg:
                await self.to_client(
                    _dumps(
                        _unmappable(
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
                params = _obj(msg.get("params"))
                self.init_id, self.asked = msg["id"], params.get("protocolVersion")
                if self.asked != 1:  # 2, or one the bridge does not speak: it answers with its newest, 2
                    self.asked = 2
                extra: Json = {}
                if self.asked == 2:
                    extra = {"clientCapabilities": _client_caps_down(params)}
                    if isinstance(params.get("info"), dict):
                        extra["clientInfo"] = params["info"]
                elif self.asked == 1:
                    extra = {
                        "capabilities": _client_caps_up(params),
                        "info": params.get("clientInfo")
                        or {"name": "unnamed v1 client (through acp-bridge)", "version": "0"},
                    }
                extra = {k: v for k, v in extra.items() if k not in params}
                await self.to_agent(_dumps({**msg, "params": {**params, **extra}}))
                return
        await self.to_agent(line + b"\n")

    async def agent_line(self, line: bytes) -> None:
        if self.mode is not None:
            await self.mode.from_agent(line)
            return
        msg = _Mode.parse(line)
        if self.init_id is not None and isinstance(msg, dict) and "method" not in msg and msg.get("id") == self.init_id:
            result = msg.get("result")
            got = result.get("protocolVersion") if isinstance(result, dict) else None
            if isinstance(result, dict) and self.asked == 2 and got == 1:
                self.mode = _UpV2(self, result)
                await self.to_client(_dumps({**msg, "result": self.mode.init_result(result)}))
            elif isinstance(result, dict) and self.asked == 1 and got == 2:
                self.mode = _DownV1(self, result)
                await self.to_client(_dumps({**msg, "result": self.mode.init_result(result)}))
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
        lines = _Lines(self.max_line_size)
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
        await self.to_client(
            _dumps(_error(None, INVALID_REQUEST, f"acp-bridge: a line over {self.max_line_size} bytes"))
        )

    async def agent_big(self) -> None:
        print(f"acp-bridge: dropped a line of the agent over {self.max_line_size} bytes", file=sys.stderr)

    async def agent_gone(self) -> None:
        self.agent_alive = False
        if self.mode is not None:
            await self.mode.agent_gone()
        elif self.init_id is not None and not self.settled.is_set():
            await self.to_client(_dumps(_error(self.init_id, INTERNAL_ERROR, "acp-bridge: the agent exited")))


async def run(
    command: Sequence[str],
    reader: connection.Reader | None = None,
    writer: connection.Writer | None = None,
    *,
    max_line_size: int = connection.DEFAULT_MAX_LINE_SIZE,
    exit_timeout: float = 1.0,
    stderr: int | None = None,
) -> int:
    """Bridge a client on ``reader``/``writer`` (default: this process's stdio) to the agent ``command``.

    Returns when the client leaves (the agent's stdin is closed, its process
    group stopped after ``exit_timeout``): 0; or when the agent exits first
    (what was in flight answered with an error): its exit code (128 + the
    signal that ended it).
    """
    if reader is None or writer is None:
        reader, writer = await connection.stdio_streams()
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    bridge = _Bridge(reader, writer, process.stdout, process.stdin, max_line_size=max_line_size)

    async def raw_to_agent(data: bytes) -> None:
        await bridge.to_agent(data)

    async def raw_to_client(data: bytes) -> None:
        await bridge.to_client(data)

    client_task = asyncio.ensure_future(bridge.pump(reader, bridge.client_line, bridge.client_big, raw_to_agent))
    agent_task = asyncio.ensure_future(bridge.pump(process.stdout, bridge.agent_line, bridge.agent_big, raw_to_client))
    client_left = False
    try:
        done, _ = await asyncio.wait({client_task, agent_task}, return_when=asyncio.FIRST_COMPLETED)
        if client_task in done:
            client_left = True  # the client left: the agent's stdin closes; it gets time to finish
            with contextlib.suppress(Exception):
                process.stdin.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(agent_task), exit_timeout)
        else:
            await bridge.agent_gone()
        for task in (client_task, agent_task):
            if task.done() and not task.cancelled() and task.exception() is not None:
                print(f"acp-bridge: {task.exception()!r}", file=sys.stderr)
    finally:
        for task in (client_task, agent_task):
            task.cancel()
        await _stop(process, exit_timeout)
    code = process.returncode
    if client_left or code is None:
        return 0
    return 128 - code if code < 0 else code


async def _stop(process: asyncio.subprocess.Process, timeout: float) -> None:
    with contextlib.suppress(Exception):
        if process.stdin is not None:
            process.stdin.close()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if process.returncode is None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(process.wait(), timeout)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)  # what the agent started goes too
        if process.returncode is not None and sig == signal.SIGTERM:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            return
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(process.wait(), timeout)


USAGE = """usage: python -m acp_types.bridge [--max-line-size BYTES] -- AGENT_CMD...
       python -m acp_types.bridge [--max-line-size BYTES] --agent 'AGENT_CMD...'
       python -m acp_types.bridge --table CROSSVERSION_JSON

Serves one ACP client (v1 or v2) on stdin/stdout and speaks to the agent
AGENT_CMD in the version it supports, translating between v1 and v2.
--agent takes the command as one shell-quoted word, for a command line that
has its own -- (the last member of a conductor's chain:
python -m acp_types.conductor -- PROXY... -- python -m acp_types.bridge --agent 'AGENT...')."""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if args[:1] == ["--table"]:
        if len(args) != 2:
            print("acp-bridge: --table takes the path of crossversion.json", file=sys.stderr)
            return 2
        try:
            sys.stdout.write(render_table(Path(args[1])))
        except (OSError, ValueError) as exc:
            print(f"acp-bridge: cannot read {args[1]}: {exc}", file=sys.stderr)
            return 2
        return 0
    max_line = connection.DEFAULT_MAX_LINE_SIZE
    if args[:1] == ["--max-line-size"]:
        try:
            max_line = int(args[1])
            assert max_line > 0
        except (IndexError, ValueError, AssertionError):
            print("acp-bridge: --max-line-size takes a positive number of bytes", file=sys.stderr)
            return 2
        args = args[2:]
    if args[:1] == ["--agent"] and len(args) == 2:  # one word for the command: a member of a conductor's chain
        try:
            args = ["--", *shlex.split(args[1])]
        except ValueError as exc:
            print(f"acp-bridge: --agent: {exc}", file=sys.stderr)
            return 2
    if args[:1] != ["--"] or len(args) < 2:
        print(USAGE, file=sys.stderr)
        return 2

    async def go() -> int:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        got: list[int] = []

        def stop(sig: int) -> None:
            got.append(sig)
            if task is not None:
                task.cancel()

        for sig in (signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, stop, sig)
        try:
            return await run(args[1:], max_line_size=max_line)
        except asyncio.CancelledError:
            if got:
                return 128 + got[0]
            raise

    try:
        return asyncio.run(go())
    except FileNotFoundError as exc:
        print(f"acp-bridge: cannot start the agent: {exc}", file=sys.stderr)
        return 2
    except PermissionError as exc:
        print(f"acp-bridge: cannot start the agent: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
