"""A small user program, type-checked by `make lint` (mypy --strict) against the installed-style package.

It is not run by pytest: it exists so that a change that breaks the public
API's types for a user shows up as a lint failure.
"""

from __future__ import annotations

from typing_extensions import Never, assert_type

from acp_types import connection, v1, v2


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


# The method table is typed per row: a literal method name gives its params and result types.
assert_type(v1.METHODS["session/new"], v1.MethodSpec[v1.NewSessionRequest, v1.NewSessionResponse])
assert_type(v2.METHODS["session/update"], v2.MethodSpec[v2.UpdateSessionNotification, Never])
assert_type(v1.METHODS["elicitation/create"].validate_result({}), v1.CreateElicitationResponse)


def new_session(wire: dict[str, object]) -> v2.NewSessionRequest:
    return v2.METHODS["session/new"].validate_params(wire)


def any_result(method: str, wire: dict[str, object]) -> object:
    result: object = v1.METHODS[method].validate_result(wire)  # a name only known at run time: Any
    return result


async def handle(conn: connection.AgentConnection, params: v1.NewSessionRequest) -> v1.NewSessionResponse:
    # what a handler gets and answers is what the table says
    spec = v1.METHODS["session/new"]
    assert_type(spec.validate_params(params.to_wire()), v1.NewSessionRequest)
    peer = v1.ClientPeer(conn)
    await peer.session_update(
        v1.SessionNotification(session_id="s", update=v1.AgentMessageChunk(content=v1.TextContent(text="hi")))
    )
    return v1.NewSessionResponse(session_id="s")
