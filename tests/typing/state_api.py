"""The session state as a user's program reads it: typed per version (mypy --strict and pyright pass; not run)."""

from __future__ import annotations

from typing_extensions import assert_type

from acp_types import client, session_state, v1, v2


def last_agent_text(state: v2.SessionState) -> str:
    agent = [m for m in state.messages if m.role == "agent"]
    return agent[-1].text if agent else ""


def blocks(state: v2.SessionState) -> list[v2.ContentBlock]:
    return state.messages[0].content


def follow(msg: session_state.Message[v1.ContentBlock], shown: int) -> str:
    return msg.text_since(shown)


def v1_plan(state: v1.SessionState) -> list[v1.PlanEntry]:
    # v1's plan (the stable `plan` update) is in `plan`; `plans` holds the unstable `plan_update`s by id
    return state.plan or []


def plans(state: v2.SessionState) -> list[v2.PlanUpdateContent]:
    return list(state.plans.values())


def terminal_output(state: v2.SessionState, terminal_id: str) -> bytes:
    return state.terminals[terminal_id].output


def from_the_client(acp: client.SessionClient, session_id: str) -> int:
    state = acp.states[session_id]
    assert_type(state.messages[0].text, str)
    if isinstance(state, v2.SessionState):  # the settled version tells which
        return len(state.terminals)
    return len(state.plan or [])


def turn_state(turn: client.Turn) -> list[str]:
    return [p.rule for p in turn.problems] + [m.role for m in turn.state.messages]


def by_id(state: v2.SessionState, state1: v1.SessionState) -> tuple[list[v2.ContentBlock], list[v1.ContentBlock]]:
    msg, msg1 = state.message("m"), state1.message("m")
    return (msg.content if msg else []), (msg1.content if msg1 else [])
