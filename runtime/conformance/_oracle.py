"""The kit's oracle for the session/update stream: the session state's strict mode, one source of the rules.

The update rules (message upserts by messageId, chunks, turns that start
running and end idle, replays, tool calls, reserved values...) live in the
library's ``acp_types.<version>.SessionState``; with ``strict=True`` it lists
each broken rule in ``.problems`` (each with ``.rule``, an id of
``acp_types.session_state.RULES``). The kit never restates them: it records,
per session, the updates the agent sent and the points where the client's side
of the exchange marks a turn or a replay (``begin_turn``, ``note_cancel``,
``end_turn`` / ``finish``, ``begin_replay`` / ``end_replay``), then applies them
in transcript order to a fresh strict state. Checks ask for the problems of
the rules they stand for; STATE-01 reports every other rule.

Hand-written: the source is runtime/conformance/_oracle.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ._driver import MODULES, Event

MISSING = "acp_types.{version}.SessionState (strict mode) is not in this build of acp_types"


def available(version: str) -> bool:
    return getattr(MODULES[version], "SessionState", None) is not None


def rules() -> dict[str, Any]:
    """The session state's table of rules, by id (empty when the session state is missing)."""
    try:
        from acp_types.session_state import RULES
    except ImportError:
        return {}
    return dict(RULES)


@dataclass
class Found:
    rule: str
    level: str
    message: str
    seq: int | None  # the transcript line of the offending update, when there is one


class Oracle:
    """Markers and updates per session of one agent process; judged on demand."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.marks: dict[Any, list[tuple[float, str, Any]]] = {}

    def mark(self, key: Any, at: float, what: str, payload: Any = None) -> None:
        """Record a client-side point of session ``key``: ``at`` orders it among the transcript's lines."""
        self.marks.setdefault(key, []).append((at, what, payload))

    def judge(self, key: Any, updates: Iterable[Event]) -> list[Found] | None:
        """The strict state's problems for ``updates`` of session ``key`` with its marks (None: no session state)."""
        cls = getattr(MODULES[self.version], "SessionState", None)
        if cls is None:
            return None
        state = cls(strict=True)
        stream: list[tuple[float, str, Any]] = [(float(e.seq), "update", e) for e in updates if e.msg is not None]
        stream += self.marks.get(key, [])
        seqs: dict[int, int] = {}  # the state's position of an update -> its transcript line
        for _at, what, payload in sorted(stream, key=lambda item: item[0]):
            if what == "update":
                seqs[state.position] = payload.seq
                state.apply(payload.msg.params)
            elif what in ("end_turn", "finish"):
                getattr(state, what)(payload)
            else:
                getattr(state, what)()
        return [
            Found(p.rule, p.level, p.message, seqs.get(p.position) if p.update is not None else None)
            for p in state.problems
        ]
