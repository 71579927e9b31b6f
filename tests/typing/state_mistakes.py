"""Each line marked ``# E:`` must be an error under mypy --strict and pyright (tests/test_session_state_typing.py)."""

from __future__ import annotations

from acp_types import client, v1, v2


def typos(state: v2.SessionState, state1: v1.SessionState, acp: client.SessionClient) -> None:
    print(state.mesages)  # E: attr-defined
    print(state1.plans["p"].entriess)  # E: union-attr
    text: int = state.messages[0].text  # noqa: F841  # E: assignment
    print(acp.states["s"].mesages)  # E: union-attr
    print(acp.state("s").tool_cals)  # E: union-attr
    turn: client.Turn = client.Turn(None, None, state)
    print(turn.state.messages[0].contnet)  # E: union-attr
    print(state.terminals["t"].outptu)  # E: attr-defined
