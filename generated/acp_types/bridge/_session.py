"""What the bridge follows of one session, and the stable message ids it derives.

A v1 agent's messages have no ids; the bridge gives the ``n``-th user (agent, thought)
message of session ``S`` the id ``uuid5(NAMESPACE, "S/user/n")`` (:func:`message_id`), so a
live turn and a later replay of the same history agree, also across restarts of the bridge.

Hand-written: the source is runtime/bridge/_session.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import uuid
from collections import deque
from typing import Any

from ._messages import Json

NAMESPACE = uuid.UUID("6f1c2a52-9a0e-4c55-8a59-0b7d3c2f1e4a")
"""The namespace of the message ids the bridge derives (see :func:`message_id`)."""


def message_id(session_id: str, role: str, index: int) -> str:
    """The id the bridge gives the ``index``-th ``role`` message (user, agent, thought) of a session."""
    return str(uuid.uuid5(NAMESPACE, f"{session_id}/{role}/{index}"))


class Session:
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
