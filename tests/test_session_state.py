"""The session state: golden states of the seeds' and pages' update sequences, each rule applied, JSON round trips.

A golden file in tests/session_states/ holds a stream (``steps``) and the
state it must give (``view``, a compact reading of the state, checked by
hand when written). ``ACP_RECORD_STATES=1`` writes the views of new files
only; an existing view is never rewritten, so a change in behaviour fails.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from acp_types import session_state, v1, v2

STATES = Path(__file__).resolve().parent / "session_states"
MODULES = {"v1": v1, "v2": v2}


def run(version: str, steps: list[Any], *, strict: bool = True) -> Any:
    """Apply a stream of steps: params of session/update, or a marker for the client's own calls."""
    m = MODULES[version]
    state = m.SessionState(strict=strict)
    for step in steps:
        if isinstance(step, str):
            getattr(state, step)()
        elif "setup" in step:
            state.apply_setup(m.parse_result("session/new", step["setup"]))
        elif "finish" in step:
            state.finish(m.parse_result("session/prompt", step["finish"]))
        elif "end_turn" in step:
            state.end_turn(m.parse_result("session/prompt", step["end_turn"]))
        else:
            state.apply(step)
    return state


def _blocks(blocks: list[Any]) -> list[Any]:
    out: list[Any] = []
    for block in blocks:
        kind = getattr(block, "type", None) or block.tag("type")
        if kind == "text":
            out.append(block.text)
        elif kind == "content":
            out.extend(_blocks([block.content]))
        elif kind == "terminal":
            out.append(f"[terminal {block.terminal_id}]")
        else:
            out.append(f"[{kind}]")
    return out


def view(state: Any) -> dict[str, Any]:
    """What a client shows, compactly: the golden files' ``view``."""
    out: dict[str, Any] = {"transcript": []}
    for entry in state.transcript:
        if isinstance(entry, session_state.Message):
            item: dict[str, Any] = {"role": entry.role, "id": entry.message_id, "content": _blocks(entry.content)}
            if entry.meta is not None:
                item["meta"] = entry.meta
            if entry.chunk_meta:
                item["chunkMeta"] = {str(k): v for k, v in entry.chunk_meta.items()}
        else:
            item = {
                "tool": entry.tool_call_id,
                "title": entry.title,
                "kind": entry.kind,
                "status": entry.status,
                "content": _blocks(entry.content),
            }
            for key, value in (
                ("locations", [loc.path for loc in entry.locations]),
                ("rawInput", entry.raw_input),
                ("rawOutput", entry.raw_output),
                ("meta", entry.meta),
                ("chunkMeta", {str(k): v for k, v in entry.chunk_meta.items()}),
            ):
                if value:
                    item[key] = value
        out["transcript"].append(item)
    if state.plans:
        out["plans"] = {key: plan.to_wire() for key, plan in state.plans.items()}
    if getattr(state, "plan", None) is not None:
        out["plan"] = [[e.content, e.status] for e in state.plan]
    if state.available_commands is not None:
        out["commands"] = [c.name for c in state.available_commands]
    if state.config_options is not None:
        out["config"] = {
            (getattr(o, "config_id", None) or getattr(o, "id", None)): o.current_value for o in state.config_options
        }
    info = state.info
    if info != session_state.Info():
        out["info"] = {"title": info.title, "updatedAt": info.updated_at, "archived": info.archived, "meta": info.meta}
    if state.usage is not None:
        out["usage"] = state.usage.to_wire()
    if state.stop_reason is not None:
        out["stopReason"] = state.stop_reason
    if state.extensions:
        out["extensions"] = [e.to_wire() for e in state.extensions]
    if getattr(state, "terminals", None):
        out["terminals"] = {
            t.terminal_id: {
                "command": t.command,
                "cwd": t.cwd,
                "text": t.text(),
                "exit": None if t.exit_status is None else t.exit_status.to_wire(),
            }
            for t in state.terminals.values()
        }
    if getattr(state, "run_state", None) is not None:
        out["state"] = state.state
    if getattr(state, "current_mode_id", None) is not None:
        out["mode"] = state.current_mode_id
    out["problems"] = state.rules_broken()
    return out


GOLDEN = sorted(STATES.glob("*.json"))


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_state(path: Path) -> None:
    data = json.loads(path.read_text("utf-8"))
    state = run(data["version"], data["steps"])
    got = json.loads(json.dumps(view(state)))  # tuples as lists, as in the file
    if "view" not in data:
        if os.environ.get("ACP_RECORD_STATES") != "1":
            pytest.fail(f"{path.name} has no view; write one (ACP_RECORD_STATES=1 records it, then check it by hand)")
        data["view"] = got
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")
    assert got == data["view"]
    # the same stream in a lenient state gives the same state, only the report differs
    lenient = run(data["version"], data["steps"], strict=False)
    assert {**view(lenient), "problems": []} == {**got, "problems": []}
    # written out and read back, in the middle and at the end: the same state
    assert type(state).from_json(state.to_json()) == state


def test_golden_files_cover_every_source() -> None:
    sources = " ".join(json.loads(p.read_text("utf-8"))["source"] for p in GOLDEN)
    for source in (
        "seed 000",
        "seed 001",
        "seed 002",
        "v2/prompt-lifecycle",
        "v2/tool-calls",
        "v2/agent-plan",
        "v1/prompt-turn",
    ):
        assert source in sources


# -- each rule, applied -----------------------------------------------------

S = "s"


def up(update: dict[str, Any], session: str = S) -> dict[str, Any]:
    return {"sessionId": session, "update": update}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def texts(state: Any) -> list[tuple[str | None, str]]:
    return [(m.message_id, m.text) for m in state.messages]


def test_v2_message_update_without_content_keeps_content() -> None:
    state = run(
        "v2",
        [
            up({"sessionUpdate": "agent_message", "messageId": "m", "content": [text("A")]}),
            up({"sessionUpdate": "agent_message", "messageId": "m", "_meta": {"x": 1}}),
        ],
    )
    assert texts(state) == [("m", "A")]
    assert state.messages[0].meta == {"x": 1}


def test_v2_message_content_null_and_empty_clear() -> None:
    for cleared in (None, []):
        state = run(
            "v2",
            [
                up({"sessionUpdate": "user_message", "messageId": "m", "content": [text("A")]}),
                up({"sessionUpdate": "user_message_chunk", "messageId": "m", "content": text("B")}),
                up({"sessionUpdate": "user_message", "messageId": "m", "content": cleared}),
            ],
        )
        assert texts(state) == [("m", "")]


def test_chunk_meta_stays_with_its_chunk() -> None:
    state = run(
        "v2",
        [
            up({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": text("A"), "_meta": {"c": 1}}),
            up({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": text("B")}),
        ],
    )
    msg = state.messages[0]
    assert msg.meta is None and msg.chunk_meta == {0: {"c": 1}}
    state.apply(up({"sessionUpdate": "agent_message", "messageId": "m", "content": [text("C")]}))
    assert msg.chunk_meta == {}  # replaced content takes its chunks' _meta with it


def test_v2_messages_keep_first_appearance_order() -> None:
    state = run(
        "v2",
        [
            up({"sessionUpdate": "user_message", "messageId": "u1", "content": [text("q")]}),
            up({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": text("x")}),
            up({"sessionUpdate": "user_message", "messageId": "u1", "content": [text("q2")]}),
        ],
    )
    assert texts(state) == [("u1", "q2"), ("a1", "x")]


def test_v2_tool_call_created_by_first_update_and_patched() -> None:
    state = run(
        "v2",
        [
            up(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": "c",
                    "title": "T",
                    "kind": "read",
                    "rawInput": {"a": 1},
                }
            ),
            up({"sessionUpdate": "tool_call_update", "toolCallId": "c", "kind": None, "status": "in_progress"}),
        ],
    )
    call = state.tool_calls["c"]
    assert (call.title, call.kind, call.status, call.raw_input) == ("T", None, "in_progress", {"a": 1})


def test_v2_tool_call_content_chunk_appends_update_replaces() -> None:
    item = {"type": "content", "content": text("x")}
    state = run(
        "v2",
        [
            up({"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "T", "content": [item]}),
            up({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c", "content": item}),
        ],
    )
    assert len(state.tool_calls["c"].content) == 2
    state.apply(up({"sessionUpdate": "tool_call_update", "toolCallId": "c", "content": [item]}))
    assert len(state.tool_calls["c"].content) == 1
    state.apply(up({"sessionUpdate": "tool_call_update", "toolCallId": "c", "content": None}))
    assert state.tool_calls["c"].content == []


def test_v1_tool_call_update_null_changes_nothing() -> None:
    state = run(
        "v1",
        [
            up({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "T", "status": "pending"}),
            up({"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": None, "status": "completed"}),
        ],
    )
    call = state.tool_calls["c"]
    assert (call.title, call.status) == ("T", "completed")


def test_v1_second_tool_call_replaces_the_call() -> None:
    state = run(
        "v1",
        [
            up({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "T", "status": "completed", "kind": "read"}),
            up({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "U"}),
        ],
    )
    call = state.tool_calls["c"]
    assert (call.title, call.status, call.kind) == ("U", None, None)
    assert state.rules_broken() == ["tool-call.duplicate"]


def test_v1_plan_replaces_all_entries() -> None:
    entry = {"content": "a", "priority": "high", "status": "pending"}
    state = run(
        "v1",
        [
            up({"sessionUpdate": "plan", "entries": [entry, {**entry, "content": "b"}]}),
            up({"sessionUpdate": "plan", "entries": [{**entry, "content": "c"}]}),
        ],
    )
    assert [e.content for e in state.plan] == ["c"]


def test_terminal_snapshot_replaces_chunks_append() -> None:
    state = run(
        "v2",
        [
            up({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "YWJj"}),  # abc
            up({"sessionUpdate": "terminal_update", "terminalId": "t", "output": {"data": "eHl6"}}),  # xyz
            up({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "MQ=="}),  # 1
        ],
    )
    assert state.terminals["t"].output == b"xyz1"
    state.apply(up({"sessionUpdate": "terminal_update", "terminalId": "t", "output": None}))
    assert state.terminals["t"].output == b""


def test_terminal_chunks_are_decoded_one_by_one() -> None:
    # "YQ==" + "Yg==" concatenated is not base64; each chunk decoded alone is
    state = run(
        "v2",
        [
            up({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "YQ=="}),
            up({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "Yg=="}),
        ],
    )
    assert state.terminals["t"].output == b"ab" and state.ok


def test_session_info_omit_null_archived() -> None:
    state = run(
        "v2",
        [
            up(
                {
                    "sessionUpdate": "session_info_update",
                    "title": "T",
                    "updatedAt": "2026-01-01T00:00:00Z",
                    "archived": True,
                }
            ),
            up({"sessionUpdate": "session_info_update", "archived": None, "updatedAt": None}),
        ],
    )
    assert state.info == session_state.Info("T", None, True, None)
    state.apply(up({"sessionUpdate": "session_info_update", "archived": False, "title": None}))
    assert state.info == session_state.Info(None, None, False, None)


def test_idle_sets_stop_reason_and_a_repeated_idle_is_no_new_completion() -> None:
    usage = {"totalTokens": 3, "inputTokens": 1, "outputTokens": 2}
    state = run(
        "v2",
        [
            up({"sessionUpdate": "state_update", "state": "running"}),
            up({"sessionUpdate": "state_update", "state": "idle", "stopReason": "max_tokens", "usage": usage}),
            up({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
        ],
    )
    assert state.stop_reason == "max_tokens" and state.turn_usage.total_tokens == 3
    assert state.state == "idle" and not state.busy


def test_updates_while_idle_leave_the_run_state() -> None:
    state = run(
        "v2",
        [
            up({"sessionUpdate": "state_update", "state": "idle"}),
            up({"sessionUpdate": "tool_call_update", "toolCallId": "bg", "title": "background"}),
        ],
    )
    assert state.state == "idle"


# -- the report ---------------------------------------------------------------

R = "running"
RUNNING = up({"sessionUpdate": "state_update", "state": R})
IDLE = up({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
USER = up({"sessionUpdate": "user_message", "messageId": "u1", "content": [text("q")]})

# one stream per rule that breaks it (and nothing else)
VIOLATIONS: dict[str, tuple[str, list[Any]]] = {
    "session.other": ("v2", [USER, up({"sessionUpdate": "agent_message", "messageId": "a", "content": []}, "other")]),
    "message.kind": (
        "v2",
        [USER, up({"sessionUpdate": "agent_message_chunk", "messageId": "u1", "content": text("x")})],
    ),
    "message.reused": (
        "v1",
        [
            "begin_turn",
            up({"sessionUpdate": "agent_message_chunk", "messageId": "msg_1", "content": text("a")}),
            {"end_turn": {"stopReason": "end_turn"}},
            "begin_turn",
            up({"sessionUpdate": "agent_message_chunk", "messageId": "msg_1", "content": text("b")}),
            {"end_turn": {"stopReason": "end_turn"}},
        ],
    ),
    "replay.chunk-before-reset": (
        "v2",
        [
            "begin_replay",
            up({"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": text("x")}),
            "end_replay",
        ],
    ),
    "turn.user-message": ("v2", ["begin_turn", RUNNING, IDLE]),
    "turn.user-message-id": ("v2", ["begin_turn", USER, RUNNING, IDLE, {"finish": {"messageId": "other"}}]),
    "turn.running": ("v2", ["begin_turn", USER, IDLE]),
    "turn.idle": ("v2", ["begin_turn", USER, RUNNING, "finish"]),
    "turn.stop-reason": ("v2", ["begin_turn", USER, RUNNING, up({"sessionUpdate": "state_update", "state": "idle"})]),
    "cancel.stop-reason": ("v2", ["begin_turn", USER, RUNNING, "note_cancel", IDLE]),
    "cancel.after-end": (
        "v1",
        [
            "begin_turn",
            "note_cancel",
            {"end_turn": {"stopReason": "cancelled"}},
            up({"sessionUpdate": "agent_message_chunk", "content": text("late")}),
        ],
    ),
    "tool-call.unknown": ("v1", [up({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed"})]),
    "tool-call.duplicate": (
        "v1",
        [
            up({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "a"}),
            up({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "b"}),
        ],
    ),
    "tool-call.title": ("v2", [up({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "pending"})]),
    "tool-call.chunk-unknown": (
        "v2",
        [
            up(
                {
                    "sessionUpdate": "tool_call_content_chunk",
                    "toolCallId": "c",
                    "content": {"type": "content", "content": text("x")},
                }
            )
        ],
    ),
    "terminal.base64": (
        "v2",
        [up({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "not base64!"})],
    ),
    "terminal.cwd": ("v2", [up({"sessionUpdate": "terminal_update", "terminalId": "t", "cwd": "project"})]),
    "update.reserved": ("v2", [up({"sessionUpdate": "progress", "percent": 3})]),
    "value.reserved": (
        "v2",
        [up({"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "T", "kind": "teleport"})],
    ),
    "session-info.fields": ("v1", [up({"sessionUpdate": "session_info_update", "title": "T", "cwd": "/elsewhere"})]),
}


def test_every_rule_has_a_violation() -> None:
    assert set(VIOLATIONS) == set(session_state.RULES)


@pytest.mark.parametrize("rule_id", sorted(VIOLATIONS))
def test_strict_state_names_the_broken_rule(rule_id: str) -> None:
    version, steps = VIOLATIONS[rule_id]
    state = run(version, steps)
    assert state.rules_broken() == [rule_id], [str(p) for p in state.problems]
    problem = state.problems[0]
    rule = session_state.RULES[rule_id]
    assert (problem.level, problem.source) == (rule.level, rule.source)
    assert version in rule.versions and rule_id in type(state).RULES
    if problem.update is not None:  # found at an update: that update, at its position
        updates = [s for s in steps if isinstance(s, dict) and "update" in s]
        assert problem.update == updates[problem.position]
    lenient = run(version, steps, strict=False)
    assert lenient.rules_broken() == ([rule_id] if rule.lenient else [])
    assert {**lenient.to_wire(), "strict": True, "problems": []} == {**state.to_wire(), "problems": []}


def test_clean_turns_break_nothing() -> None:
    v2_turn = [
        "begin_turn",
        USER,
        RUNNING,
        up({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": text("x")}),
        IDLE,
        "finish",
        "begin_turn",
        up({"sessionUpdate": "user_message", "messageId": "u2", "content": [text("q")]}),
        RUNNING,
        up({"sessionUpdate": "agent_message_chunk", "messageId": "a2", "content": text("y")}),
        "note_cancel",
        up({"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}),
        "finish",
    ]
    assert run("v2", v2_turn).problems == []
    v1_turns = [
        "begin_turn",
        up({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": text("x")}),
        {"end_turn": {"stopReason": "end_turn"}},
        "begin_turn",
        up({"sessionUpdate": "agent_message_chunk", "messageId": "a2", "content": text("y")}),
        {"end_turn": {"stopReason": "end_turn"}},
    ]
    assert run("v1", v1_turns).problems == []


def test_v2_output_of_a_cancelled_turn_after_its_idle() -> None:
    chunk = up({"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": text("x")})
    steps = ["begin_turn", USER, RUNNING, chunk, "note_cancel"]
    cancelled = up({"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"})
    assert run("v2", [*steps, cancelled, chunk]).rules_broken() == ["cancel.after-end"]
    # background work while idle is allowed: a tool call, or a message of no turn of the client's
    background = [
        up({"sessionUpdate": "tool_call_update", "toolCallId": "bg", "title": "T"}),
        up({"sessionUpdate": "agent_message_chunk", "messageId": "other", "content": text("y")}),
    ]
    assert run("v2", [*steps, cancelled, *background]).problems == []
    assert run("v2", [*steps, chunk, cancelled]).problems == []


def test_replay_with_reset_or_full_content_breaks_nothing() -> None:
    steps = [
        "begin_replay",
        up({"sessionUpdate": "agent_message", "messageId": "a", "content": []}),
        up({"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": text("x")}),
        up({"sessionUpdate": "user_message", "messageId": "u", "content": [text("q")]}),
        up({"sessionUpdate": "user_message_chunk", "messageId": "u", "content": text("!")}),
        "end_replay",
    ]
    assert run("v2", steps).problems == []


def test_prompt_response_message_id_is_checked_when_present() -> None:
    state = run("v2", ["begin_turn", USER, RUNNING, IDLE])
    assert state.problems == []
    response = v2.PromptResponse.model_validate({"messageId": "other"})
    assert [p.rule for p in state.finish(response)] == ["turn.user-message-id"]


def test_reserved_values_and_underscore_extensions() -> None:
    ok = run(
        "v2",
        [
            up(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": "c",
                    "title": "T",
                    "kind": "_teleport",
                    "status": "_queued",
                }
            ),
            up({"sessionUpdate": "_acme", "x": 1}),
            up({"sessionUpdate": "state_update", "state": "_paused"}),
        ],
    )
    assert ok.problems == [] and ok.state == "_paused" and len(ok.extensions) == 1
    bad = run("v2", [up({"sessionUpdate": "state_update", "state": "paused"})])
    assert bad.rules_broken() == ["value.reserved"]


def test_rules_are_public_and_complete() -> None:
    for rule in session_state.RULES.values():
        assert rule.level in ("MUST", "MUST NOT", "SHOULD", "REQ", "IMPL")
        assert rule.source and rule.description and rule.versions
    assert set(v1.SessionState.RULES) | set(v2.SessionState.RULES) == set(session_state.RULES)
    assert "replay.chunk-before-reset" not in v1.SessionState.RULES


# -- types, copies, JSON --------------------------------------------------------


def test_typed_with_the_versions_models() -> None:
    state = run("v2", [up({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": text("x")})])
    assert isinstance(state.messages[0].content[0], v2.TextContent)
    state1 = run("v1", [up({"sessionUpdate": "agent_message_chunk", "content": text("x")})])
    assert isinstance(state1.messages[0].content[0], v1.TextContent)


def test_wrong_version_is_a_type_error() -> None:
    notification = v1.parse_params("session/update", up({"sessionUpdate": "agent_message_chunk", "content": text("x")}))
    with pytest.raises(TypeError, match="UpdateSessionNotification"):
        v2.SessionState().apply(notification)


def test_copy_is_independent_and_equal() -> None:
    state = run("v2", [up({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": text("x")})])
    twin = state.copy()
    assert twin == state and twin is not state
    twin.apply(up({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": text("y")}))
    assert twin != state and state.messages[0].text == "x"


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        (lambda d: d.update(format=9), "/format"),
        (lambda d: d.update(version="v1"), "/version"),
        (lambda d: d["transcript"][0].update(content=[{"type": "text"}]), "/transcript/0/content/0"),
        (lambda d: d["transcript"][0].pop("role"), "/transcript/0"),
        (lambda d: d["terminals"][0].update(output="%%"), "/terminals/0/output"),
        (lambda d: d.update(position="3"), "/position"),
        # what let other exceptions through, or was read and could not be written back
        (lambda d: d["transcript"][0].update(chunkMeta={"²": 1}), "/transcript/0/chunkMeta/²"),
        (lambda d: d["transcript"][0].update(chunkMeta={"a/b": 1}), "/transcript/0/chunkMeta/a~1b"),
        (lambda d: d["transcript"][0].update(meta=float("nan")), ""),
        (lambda d: d["replay"].update(reset=["a", 1]), "/replay/reset/1"),
        (lambda d: d["replay"].update(reset=[{}]), "/replay/reset/0"),
        (lambda d: d["turn"].update(userMessages=["u", None]), "/turn/userMessages/1"),
        (lambda d: d.update(position=True), "/position"),
        (lambda d: d.update(position=-1), "/position"),
        (lambda d: d["transcript"].append({**d["transcript"][1]}), "/transcript/2/toolCallId"),
        (lambda d: d["terminals"].append({**d["terminals"][0]}), "/terminals/1/terminalId"),
        (
            lambda d: d["transcript"][0].update(meta=json.loads("[" * 200 + "]" * 200)),
            "/transcript/0/meta" + "/0" * 127,
        ),
    ],
)
def test_from_json_names_the_fault(change: Any, pointer: str) -> None:
    state = run(
        "v2",
        [
            up({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": text("x")}),
            up({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "YQ=="}),
            up({"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "Run"}),
        ],
    )
    data = state.to_wire()
    assert type(state).from_json(json.dumps(data)) == state
    change(data)
    with pytest.raises(session_state.StateFormatError) as info:
        v2.SessionState.from_json(json.dumps(data))
    assert info.value.pointer == pointer
    with pytest.raises(session_state.StateFormatError):
        v2.SessionState.from_json("{not json")


@pytest.mark.parametrize(
    "text",
    ["[" * 100_000 + "]" * 100_000, b"\xff", '{"format": 1, "format": 1}', "[1e400]", '"\\ud800"', "", "null"],
)
def test_from_json_refuses_what_is_not_json_within_the_limits(text: str | bytes) -> None:
    with pytest.raises(session_state.StateFormatError) as info:
        v2.SessionState.from_json(text)
    assert "\n" not in str(info.value)
