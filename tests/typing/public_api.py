"""A small user program, type-checked by `make lint` (mypy --strict) against the installed-style package.

It is not run by pytest: it exists so that a change that breaks the public
API's types for a user shows up as a lint failure.
"""

from __future__ import annotations

from acp_types import v1, v2


def list_sessions(cwd: str) -> v1.ListSessionsRequest:
    params = v1.ListSessionsRequest(cwd=cwd)
    wire: dict[str, object] = params.to_wire()
    assert wire["cwd"] == cwd
    return params


def allowed(init: dict[str, object]) -> bool:
    return v1.method_allowed("session/archive", init) and v2.feature_supported("mcp.http", init)


def parse(line: str) -> str:
    pending = v2.PendingRequests()
    pending.add(1, "session/archive")
    message = v2.parse_message(line, pending=pending)
    return type(message).__name__


def spec_side(method: str) -> str:
    return v1.METHODS[method].side
