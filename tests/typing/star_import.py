"""``from acp_types.v1 import *`` as a user writes it, type-checked by `make lint` (mypy --strict).

The version module's ``__all__`` is the export list type checkers read: the
models, the entry points and the lazily loaded JSON-RPC layer are all bound.
Not run by pytest.
"""

from __future__ import annotations

from acp_types.v1 import *  # noqa: F403


def stream(session_id: str, text: str) -> str:
    chunk = AgentMessageChunk(content=TextContent(text=text))  # noqa: F405
    note = SessionNotification(session_id=session_id, update=chunk)  # noqa: F405
    again: SessionNotification = parse_params("session/update", note.to_wire())  # noqa: F405
    pending: PendingRequests = PendingRequests()  # noqa: F405
    pending.add(1, "session/new")
    assert RESOURCE_NOT_FOUND == -32002  # noqa: F405
    return again.to_json()
