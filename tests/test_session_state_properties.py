"""Properties of the session state, over generated streams.

- A v2 session watched live and the replay of its history (``session/resume``
  with ``replayFrom``, the messages as full updates or as ``content: []`` and
  chunks) give the same conversation, on a fresh client and on the client
  that watched it live.
- A state written out (``to_json``) and read back in the middle of a stream
  applies the rest of it exactly as the state that never stopped.
- Strict and lenient states hold the same content for any stream.
"""

from __future__ import annotations

import json
from typing import Any

from conftest import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_types import session_state, v1, v2

S = "s"
IDS = st.sampled_from(["a", "b", "c"])
WORDS = st.text(alphabet="xyz €", min_size=0, max_size=4)
SETTINGS = settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def up(update: dict[str, Any]) -> dict[str, Any]:
    return {"sessionId": S, "update": update}


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


ROLES = {"user": "user_message", "agent": "agent_message", "thought": "agent_thought"}


@st.composite
def live_message_steps(draw: Any) -> list[dict[str, Any]]:
    """A live stream of message updates and chunks, interleaved, ids never shared across roles."""
    steps: list[dict[str, Any]] = []
    roles = {mid: draw(st.sampled_from(sorted(ROLES))) for mid in ("m1", "m2", "m3")}
    for _ in range(draw(st.integers(1, 12))):
        mid = draw(st.sampled_from(sorted(roles)))
        kind = ROLES[roles[mid]]
        choice = draw(st.sampled_from(["chunk", "chunk", "full", "clear", "meta"]))
        if choice == "chunk":
            steps.append(up({"sessionUpdate": f"{kind}_chunk", "messageId": mid, "content": text(draw(WORDS))}))
        elif choice == "full":
            blocks = [text(w) for w in draw(st.lists(WORDS, max_size=3))]
            steps.append(up({"sessionUpdate": kind, "messageId": mid, "content": blocks}))
        elif choice == "clear":
            steps.append(up({"sessionUpdate": kind, "messageId": mid, "content": draw(st.sampled_from([None, []]))}))
        else:
            steps.append(up({"sessionUpdate": kind, "messageId": mid, "_meta": {"n": draw(st.integers(0, 3))}}))
    return steps


@st.composite
def live_tool_steps(draw: Any) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    item = {"type": "content", "content": text("out")}
    for _ in range(draw(st.integers(0, 8))):
        cid = draw(IDS)
        if draw(st.booleans()):
            steps.append(up({"sessionUpdate": "tool_call_content_chunk", "toolCallId": cid, "content": item}))
            continue
        update: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": cid}
        for key, values in (
            ("title", st.sampled_from([None, "T", "U"])),
            ("status", st.sampled_from([None, "pending", "completed"])),
            ("content", st.sampled_from([None, [], [item]])),
            ("rawInput", st.sampled_from([None, {"a": 1}, [2]])),
            ("locations", st.sampled_from([None, [], [{"path": "/p", "line": 3}]])),
        ):
            if draw(st.booleans()):
                update[key] = draw(values)
        steps.append(up(update))
    return steps


def replay_of(state: v2.SessionState, as_chunks: list[bool]) -> list[dict[str, Any]]:
    """What an agent replays for ``state``'s history: each message as a full update, or reset and chunks."""
    steps: list[dict[str, Any]] = []
    flags = iter(as_chunks)
    for entry in state.transcript:
        if isinstance(entry, session_state.Message):
            kind = ROLES[entry.role]
            blocks = [b.to_wire() for b in entry.content]
            update: dict[str, Any] = {"sessionUpdate": kind, "messageId": entry.message_id}
            if entry.meta is not None:
                update["_meta"] = entry.meta
            if next(flags, False):
                steps.append(up({**update, "content": []}))
                steps.extend(
                    up({"sessionUpdate": f"{kind}_chunk", "messageId": entry.message_id, "content": b}) for b in blocks
                )
            else:
                steps.append(up({**update, "content": blocks}))
        else:
            steps.append(
                up(
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": entry.tool_call_id,
                        "title": entry.title,
                        "status": entry.status,
                        "content": [c.to_wire() for c in entry.content],
                        "locations": [loc.to_wire() for loc in entry.locations],
                        "rawInput": entry.raw_input,
                    }
                )
            )
    return steps


def conversation(state: Any) -> list[Any]:
    """The conversation a client shows: the transcript entries, without the turn bookkeeping."""
    out = []
    for entry in state.to_wire()["transcript"]:
        entry = dict(entry)
        entry.pop("turn", None)
        out.append(entry)
    return out


@SETTINGS
@given(live_message_steps(), live_tool_steps(), st.randoms(use_true_random=False), st.lists(st.booleans(), max_size=6))
def test_replay_gives_the_live_state(messages: list[Any], tools: list[Any], rnd: Any, as_chunks: list[bool]) -> None:
    steps = messages + tools
    rnd.shuffle(steps)  # messages and tool calls interleave; per id the order is what it is
    live = v2.SessionState(strict=True)
    live.apply_all(steps)
    replay = replay_of(live, as_chunks)

    fresh = v2.SessionState(strict=True)
    fresh.begin_replay()
    fresh.apply_all(replay)
    fresh.end_replay()
    assert conversation(fresh) == conversation(live)
    assert [p for p in fresh.problems if p.rule != "tool-call.title"] == []

    again = live.copy()  # the client that watched it live resumes with a replay
    again.begin_replay()
    again.apply_all(replay)
    again.end_replay()
    assert conversation(again) == conversation(live)


STEP_V2 = st.one_of(
    live_message_steps().map(lambda s: s[0]),
    live_tool_steps().filter(bool).map(lambda s: s[0]),
    st.sampled_from(
        [
            "begin_turn",
            "finish",
            "note_cancel",
            "begin_replay",
            "end_replay",
            up({"sessionUpdate": "state_update", "state": "running"}),
            up({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
            up({"sessionUpdate": "state_update", "state": "idle"}),
            up({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "4g=="}),
            up({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "%%"}),
            up({"sessionUpdate": "terminal_update", "terminalId": "t", "output": {"data": "YQ=="}, "cwd": "rel"}),
            up({"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p", "entries": []}}),
            up({"sessionUpdate": "plan_removed", "planId": "p"}),
            up({"sessionUpdate": "session_info_update", "title": None, "archived": True}),
            up(
                {"sessionUpdate": "available_commands_update", "availableCommands": [{"name": "x", "description": "d"}]}
            ),
            up({"sessionUpdate": "usage_update", "used": 1, "size": 2}),
            up({"sessionUpdate": "_ext", "n": 1}),
            up({"sessionUpdate": "nope"}),
            {"sessionId": "other", "update": {"sessionUpdate": "state_update", "state": "running"}},
        ]
    ),
)

STEP_V1 = st.sampled_from(
    [
        "begin_turn",
        "note_cancel",
        "begin_replay",
        "end_replay",
        {"end_turn": {"stopReason": "end_turn"}},
        {"end_turn": {"stopReason": "cancelled"}},
        up({"sessionUpdate": "agent_message_chunk", "content": text("x")}),
        up({"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": text("y")}),
        up({"sessionUpdate": "user_message_chunk", "messageId": "a", "content": text("z")}),
        up({"sessionUpdate": "agent_thought_chunk", "content": text("t")}),
        up({"sessionUpdate": "tool_call", "toolCallId": "c", "title": "T"}),
        up({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed", "title": None}),
        up({"sessionUpdate": "tool_call_update", "toolCallId": "d", "content": []}),
        up({"sessionUpdate": "plan", "entries": [{"content": "e", "priority": "low", "status": "pending"}]}),
        up({"sessionUpdate": "current_mode_update", "currentModeId": "code"}),
        up({"sessionUpdate": "session_info_update", "title": "T", "cwd": "/x"}),
        {"sessionId": "other", "update": {"sessionUpdate": "plan", "entries": []}},
    ]
)


def play(state: Any, steps: list[Any]) -> None:
    m = v1 if state.VERSION == "v1" else v2
    for step in steps:
        if isinstance(step, str):
            getattr(state, step)()
        elif "end_turn" in step:
            state.end_turn(m.parse_result("session/prompt", step["end_turn"]))
        else:
            state.apply(step)


@SETTINGS
@given(st.sampled_from(["v1", "v2"]), st.data())
def test_written_out_and_read_back_continues_the_same(version: str, data: Any) -> None:
    cls = v1.SessionState if version == "v1" else v2.SessionState
    steps = data.draw(st.lists(STEP_V1 if version == "v1" else STEP_V2, max_size=25))
    cut = data.draw(st.integers(0, len(steps)))
    strict = data.draw(st.booleans())
    whole = cls(strict=strict)
    play(whole, steps)
    first = cls(strict=strict)
    play(first, steps[:cut])
    resumed = cls.from_json(first.to_json())
    assert resumed == first
    play(resumed, steps[cut:])
    assert resumed == whole
    assert resumed.to_json() == whole.to_json()  # deterministic text too


@SETTINGS
@given(st.sampled_from(["v1", "v2"]), st.data())
def test_the_mode_changes_only_the_report(version: str, data: Any) -> None:
    cls = v1.SessionState if version == "v1" else v2.SessionState
    steps = data.draw(st.lists(STEP_V1 if version == "v1" else STEP_V2, max_size=25))
    strict, lenient = cls(strict=True), cls()
    play(strict, steps)
    play(lenient, steps)
    a, b = strict.to_wire(), lenient.to_wire()
    assert {**a, "strict": False, "problems": []} == {**b, "problems": []}
    assert {p["rule"] for p in b["problems"]} <= {p["rule"] for p in a["problems"]}
    assert all(session_state.RULES[p["rule"]].lenient for p in b["problems"])


JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=4),
    st.sampled_from(["²", "01", "-1", "x", "text", "idle", "user", "message", "tool_call", "NaN"]),
    # type confusions that once went through: a bool for a count, mixed arrays, a digit that is not ASCII
    st.sampled_from([True, -1, ["a", 1], [{}], {"²": 1}, {"01": 1}, [["a"]]]),
)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=6,
)


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [here]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*here, key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found.extend(_paths(item, (*here, i)))
    return found


def _mutate(data: Any, draw: Any) -> Any:
    def value() -> Any:  # a copy: a later mutation must not change the strategy's constants
        return json.loads(json.dumps(draw(JSON_VALUE)))

    path = draw(st.sampled_from(_paths(data)))
    if not path:
        return value()
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    choice = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
    if choice == "replace":
        parent[path[-1]] = value()
    elif choice == "delete":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[draw(st.text(max_size=3))] = value()
    else:
        parent.append(json.loads(json.dumps(parent[path[-1]])))  # an entry twice
    return data


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["v1", "v2"]), st.data())
def test_from_json_refuses_with_a_pointer_or_reads_what_round_trips(version: str, data: Any) -> None:
    # whatever text it accepts, it can write back and read again to the same state; nothing else escapes
    cls = v1.SessionState if version == "v1" else v2.SessionState
    state = cls(strict=data.draw(st.booleans()))
    play(state, data.draw(st.lists(STEP_V1 if version == "v1" else STEP_V2, max_size=15)))
    wire = json.loads(json.dumps(state.to_wire()))  # a copy: the state shares values with the drawn steps
    for _ in range(data.draw(st.integers(1, 3))):
        wire = _mutate(wire, data.draw)
    text = json.dumps(wire)
    try:
        read = cls.from_json(text)
    except session_state.StateFormatError as exc:
        assert exc.pointer == "" or exc.pointer.startswith("/")
        return
    again = cls.from_json(read.to_json())
    assert again == read
    assert again.to_json() == read.to_json()


@SETTINGS
@given(live_message_steps(), st.data())
def test_a_follower_of_text_since_sees_the_text(steps: list[Any], data: Any) -> None:
    # whatever the stream (chunks, rewrites, clears, blocks without text), text_since(k) is text[k:],
    # text_length is len(text), and the revision stays exactly while the text extends what it was
    state = v2.SessionState(S)
    last: dict[str, tuple[str, int]] = {}
    image = {"type": "image", "data": "", "mimeType": "image/png"}
    for step in steps:
        state.apply(step)
        kind = step["update"]["sessionUpdate"]
        if kind.endswith("_chunk") and data.draw(st.booleans()):  # a block with no text in between
            state.apply(up({"sessionUpdate": kind, "messageId": step["update"]["messageId"], "content": image}))
        for msg in state.messages:
            text = "".join(getattr(b, "text", "") for b in msg.content if getattr(b, "type", None) == "text")
            assert (msg.text, msg.text_length) == (text, len(text))
            k = data.draw(st.integers(-1, len(text) + 1))
            assert msg.text_since(k) == text[max(k, 0) :]
            before = last.get(str(msg.message_id))
            if before is not None:
                assert (msg.revision == before[1]) == text.startswith(before[0]), (before, text, msg.revision)
            last[str(msg.message_id)] = (text, msg.revision)
