"""The kit's oracle for the session/update stream: the session state's strict mode, one source of the rules.

INTEGRATION POINT. The update rules (what a ``session/update`` may do to a
session: upserts by messageId, chunks, tool calls, patches) live in the
library's session state, ``acp_types.<version>.SessionState``; its strict mode
lists each broken rule in ``.problems`` (each with ``.rule``). The kit never
restates those rules: where the session state is not in this build of
acp_types, :func:`judge` returns ``None`` and the check that needs it is
SKIPPED with :data:`MISSING`.

Hand-written: the source is runtime/conformance/_oracle.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._driver import MODULES

MISSING = "acp_types.{version}.SessionState (strict mode) is not in this build of acp_types"


def judge(version: str, notifications: Iterable[Any]) -> list[str] | None:
    """The strict session state's problems with ``notifications`` (params of session/update), or None."""
    cls = getattr(MODULES[version], "SessionState", None)
    if cls is None:
        return None
    states: dict[Any, Any] = {}
    found: list[str] = []
    for params in notifications:
        sid = params.get("sessionId") if isinstance(params, dict) else None
        state = states.get(sid)
        if state is None:
            try:
                state = cls(strict=True)
            except TypeError:
                state = cls()
            states[sid] = state
        seen = len(getattr(state, "problems", ()))
        state.apply(params)
        for problem in list(getattr(state, "problems", ()))[seen:]:
            found.append(f"{sid}: {getattr(problem, 'rule', '?')}: {problem}")
    return found
