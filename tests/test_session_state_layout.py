"""acp_types.session_state's layout: one module a layer, each importing only those before it.

The state's behaviour is tested in test_session_state*.py; these pin the shape that keeps it
readable (runtime/session_state/ read module by module, in the order its docstring gives) and
that splitting the old one-file module changed nothing a user holds: every name it offered is
still offered, and a state pickled by it loads.
"""

from __future__ import annotations

import base64
import pickle

from conftest import ROOT
from test_agent_layout import assert_top_down

from acp_types import session_state, v2
from acp_types.session_state import _base, _rules, _saved, _values

PACKAGE = ROOT / "runtime" / "session_state"
ORDER = ["_rules", "_values", "_saved", "_base", "__init__"]

# What `acp_types.session_state.X` gave before the split (public, or imported by the versions' states),
# and the module that now defines it.
NAMES = {
    _rules: ["RULES", "Level", "Problem", "Rule"],
    _values: ["Compaction", "Info", "Message", "Terminal", "ToolCall"],
    _saved: ["FORMAT", "StateFormatError", "_Reader", "_wire"],
    _base: [
        "BaseSessionState",
        "_decode_base64",
        "_is_absolute",
        "_known_values",
        "_tag",
        "iter_text",
        "shared_handlers",
    ],
}


def test_the_package_reads_from_the_top_down() -> None:
    assert_top_down(PACKAGE, ORDER, 600)


def test_every_name_of_the_one_file_module_is_still_there() -> None:
    for module, names in NAMES.items():
        for name in names:
            assert getattr(session_state, name) is getattr(module, name), f"acp_types.session_state.{name}"
    assert set(session_state.__all__) < {name for names in NAMES.values() for name in names}
    namespace: dict[str, object] = {}
    exec("from acp_types.session_state import *", namespace)
    assert {k for k in namespace if k != "__builtins__"} == set(session_state.__all__)


# A v2 state (strict; a message, a tool call with a problem, a terminal, info, a compaction: no
# model inside, so the bytes name only the state's own classes) pickled by the one-file module
# (commit 4bbd4dc), which named its records acp_types.session_state.Message and so on.
OLD_PICKLE = base64.b64decode(
    "gASVigUAAAAAAACME2FjcF90eXBlcy5fc3RhdGVfdjKUjAxTZXNzaW9uU3RhdGWUk5QpgZR9lCiMCnNlc3Npb25faWSUjAJzMZSM"
    "BnN0cmljdJSIjAhwb3NpdGlvbpRLBYwIcHJvYmxlbXOUXZSMF2FjcF90eXBlcy5zZXNzaW9uX3N0YXRllIwHUHJvYmxlbZSTlCmB"
    "lH2UKIwEcnVsZZSMD3Rvb2wtY2FsbC50aXRsZZSMBWxldmVslIwGU0hPVUxElIwGc291cmNllIwsZG9jcy9wcm90b2NvbC92Mi90"
    "b29sLWNhbGxzLm1keCDCpyBSZXBvcnRpbmeUjAdtZXNzYWdllIwtdG9vbCBjYWxsICdjMScgZmlyc3QgcmVwb3J0ZWQgd2l0aG91"
    "dCBhIHRpdGxllGgISwGMBnVwZGF0ZZR9lCiMCXNlc3Npb25JZJRoBmgYfZQojA1zZXNzaW9uVXBkYXRllIwQdG9vbF9jYWxsX3Vw"
    "ZGF0ZZSMCnRvb2xDYWxsSWSUjAJjMZSMBnN0YXR1c5SMB3BlbmRpbmeUjAhyYXdJbnB1dJR9lIwEcGF0aJSMAi9hlHN1dXViYYwK"
    "dHJhbnNjcmlwdJRdlChoC4wHTWVzc2FnZZSTlCmBlH2UKIwKbWVzc2FnZV9pZJSMAnUxlIwEcm9sZZSMBHVzZXKUjAdjb250ZW50"
    "lF2UjARtZXRhlE6MCmNodW5rX21ldGGUfZSMBHR1cm6USwCMCF9pbmRleGVklGgxjAZfcGFydHOUXZSMBV9lbmRzlF2UjAdfam9p"
    "bmVklIwAlIwJX3JldmlzaW9ulEsAdWJoC4wIVG9vbENhbGyUk5QpgZR9lCiMDHRvb2xfY2FsbF9pZJRoH4wFdGl0bGWUTowEa2lu"
    "ZJROaCCMB3BlbmRpbmeUaDBdlIwJbG9jYXRpb25zlF2UjAlyYXdfaW5wdXSUfZSMBHBhdGiUaCVzjApyYXdfb3V0cHV0lE6MBG5h"
    "bWWUTmgyTmgzfZR1YmWMCG1lc3NhZ2VzlF2UaCphjAp0b29sX2NhbGxzlH2UaB9oQHOMBXBsYW5zlH2UjBJhdmFpbGFibGVfY29t"
    "bWFuZHOUTowOY29uZmlnX29wdGlvbnOUTowEaW5mb5RoC4wESW5mb5STlCmBlH2UKGhDjAFUlIwKdXBkYXRlZF9hdJROjAhhcmNo"
    "aXZlZJROaDJOdWKMBXVzYWdllE6MCnR1cm5fdXNhZ2WUTowLc3RvcF9yZWFzb26UTowHbm90aWNlc5RdlIwLY29tcGFjdGlvbnOU"
    "fZSMAmsxlGgLjApDb21wYWN0aW9ulJOUKYGUfZQojA1jb21wYWN0aW9uX2lklGhmaCCMB3J1bm5pbmeUjAdzdW1tYXJ5lF2UjAVl"
    "cnJvcpROdWJzjApleHRlbnNpb25zlF2UaDVLAIwHaW5fdHVybpSJjAhwcm9tcHRlZJSJjAljYW5jZWxsZWSUiYwJcmVwbGF5aW5n"
    "lImMCl90dXJuX3VzZXKUXZRoLWGMDV90dXJuX3N0YXJ0ZWSUiYwPX2NhbmNlbGxlZF90dXJulE6MDV9yZXBsYXlfcmVzZXSUj5SM"
    "Bl9ieV9pZJR9lGgtaCpzjAl0ZXJtaW5hbHOUfZSMAnQxlGgLjAhUZXJtaW5hbJSTlCmBlH2UKIwLdGVybWluYWxfaWSUaICMB2Nv"
    "bW1hbmSUjAJsc5SMA2N3ZJSMBC90bXCUjAtvdXRwdXRfbWV0YZROjAtleGl0X3N0YXR1c5ROaDJOjAdfYnVmZmVylIwIYnVpbHRp"
    "bnOUjAlieXRlYXJyYXmUk5RDAmhplIWUUpSMBl9jYWNoZZROaD1LAHVic4wJcnVuX3N0YXRllE6MCF9jdXJyZW50lE6MA19hdJRL"
    "BHViLg=="
)

CHUNK = {
    "sessionId": "s1",
    "update": {"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "go"}},
}


def _the_same_state() -> v2.SessionState:
    state = v2.SessionState("s1", strict=True)
    for update in [
        {"sessionUpdate": "user_message", "messageId": "u1", "content": []},
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "pending", "rawInput": {"path": "/a"}},
        {
            "sessionUpdate": "terminal_update",
            "terminalId": "t1",
            "command": "ls",
            "cwd": "/tmp",
            "output": {"data": "aGk="},
        },
        {"sessionUpdate": "session_info_update", "title": "T"},
        {"sessionUpdate": "compaction_update", "compactionId": "k1", "status": "running"},
    ]:
        state.apply({"sessionId": "s1", "update": update})
    return state


def test_a_state_pickled_before_the_split_loads() -> None:
    old = pickle.loads(OLD_PICKLE)
    assert type(old) is v2.SessionState
    assert isinstance(old.messages[0], session_state.Message) and isinstance(old.problems[0], session_state.Problem)
    assert old.terminals["t1"].output == b"hi"
    assert old.to_json() == _the_same_state().to_json()
    old.apply(CHUNK)
    assert old.messages[-1].text == "go" and old.position == 6


def test_a_state_pickled_now_loads_equal() -> None:
    state = _the_same_state()
    state.apply(CHUNK)
    again = pickle.loads(pickle.dumps(state))
    assert again == state and again.messages[-1].text_since(1) == "o"
