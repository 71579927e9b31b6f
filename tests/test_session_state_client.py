"""The client helpers (acp_types.client) over real pipes: against tests/state_agent.py and examples/echo_agent.py."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_types import client, connection, v1, v2

ROOT = Path(__file__).resolve().parents[1]
STATE_AGENT = [sys.executable, str(ROOT / "tests" / "state_agent.py")]
ECHO_AGENT = [sys.executable, str(ROOT / "examples" / "echo_agent.py")]
# the raw-handler echo the connection tests keep: it breaks the turn rules the library now follows for App agents
RAW_ECHO_AGENT = [
    sys.executable,
    "-c",
    f"import runpy, sys; sys.path.insert(0, {str(ROOT / 'generated')!r}); "
    f"runpy.run_path({str(ROOT / 'tests' / 'echo_handler.py')!r}, run_name='__main__')",
]
INFO = {"name": "state-tests", "version": "1"}


async def _open(command: list[str], version: str, **options: Any) -> Any:
    versions = ("v2", "v1") if version == "v2" else ("v1",)
    cm = connection.spawn_agent(command, lambda c: client.SessionClient(c, **options), versions=versions)
    conn = await cm.__aenter__()
    if version == "v2":
        await conn.initialize(v2.InitializeRequest(protocol_version=2, info=INFO))
    else:
        await conn.initialize(v1.InitializeRequest(protocol_version=1, client_info=INFO))
    assert conn.version == version
    return cm, conn


def session(command: list[str], version: str, body: Any, **options: Any) -> Any:
    async def main() -> Any:
        cm, conn = await _open(command, version, **options)
        try:
            return await asyncio.wait_for(body(conn, conn.handler), 30)
        finally:
            await cm.__aexit__(None, None, None)

    return asyncio.run(main())


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_prompt_returns_at_the_end_of_the_turn_with_the_state_complete(version: str) -> None:
    async def body(conn: Any, acp: client.SessionClient) -> Any:
        sid = await acp.new_session(os.getcwd())
        first = await acp.prompt(sid, "one two")
        second = await acp.prompt(sid, "three")
        return first, second, acp.states[sid]

    first, second, state = session(STATE_AGENT, version, body, strict=True)
    assert (first.stop_reason, second.stop_reason) == ("end_turn", "end_turn")
    assert not first.timed_out and first.problems == [] and second.problems == []
    agent = [m.text for m in state.messages if m.role == "agent"]
    assert agent == ["onetwo", "three"]
    if version == "v2":
        assert [m.text for m in state.messages if m.role == "user"] == ["one two", "three"]
        assert state.state == "idle" and state.ok


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_cancel_answers_the_pending_permission_request_cancelled(version: str) -> None:
    never = asyncio.Event()

    async def wait_forever(params: Any) -> Any:
        await never.wait()  # the user never answers: only the cancel can

    async def body(conn: Any, acp: client.SessionClient) -> Any:
        sid = await acp.new_session(os.getcwd())
        turn = asyncio.ensure_future(acp.prompt(sid, "ask"))
        while not acp._pending.get(sid):
            await asyncio.sleep(0.01)
        await acp.cancel(sid)
        return await turn, acp.states[sid]

    turn, state = session(STATE_AGENT, version, body, strict=True, permission=wait_forever)
    assert turn.stop_reason == "cancelled" and turn.problems == []
    assert state.messages[-1].text == "outcome cancelled"
    (call,) = state.tool_calls.values()
    assert call.status == ("cancelled" if version == "v2" else "failed")  # v1 has no `cancelled` tool status


def test_the_default_permission_policy_rejects_or_cancels() -> None:
    async def body(conn: Any, acp: client.SessionClient) -> Any:
        sid = await acp.new_session(os.getcwd())
        await acp.prompt(sid, "ask")
        return acp.states[sid]

    # the agent offers only an allow option: without a policy nothing is allowed
    state = session(STATE_AGENT, "v2", body)
    assert state.messages[-1].text == "outcome cancelled"
    state = session(STATE_AGENT, "v2", body, permission=lambda params: "yes")
    assert state.messages[-1].text == "outcome selected"


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_list_sessions_follows_next_cursor_to_the_end(version: str) -> None:
    async def body(conn: Any, acp: client.SessionClient) -> Any:
        return [info.session_id async for info in client.list_sessions(conn)]

    assert session(STATE_AGENT, version, body) == [f"listed_{i}" for i in range(5)]


def test_list_sessions_stops_an_agent_that_repeats_a_cursor() -> None:
    class Looping:
        def __init__(self) -> None:
            self.peer = self
            self.version = "v2"
            self.calls: list[Any] = []

        async def session_list(self, params: Any) -> Any:
            self.calls.append(params.cursor)
            return v2.ListSessionsResponse(sessions=[], next_cursor="same")

    async def main() -> Any:
        conn = Looping()
        with pytest.raises(client.CursorLoop):
            async for _ in client.list_sessions(conn, cwd="/tmp"):
                pass
        return conn.calls

    assert asyncio.run(main()) == [None, "same"]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_replay_reconstructs_the_live_state(version: str) -> None:
    async def body(conn: Any, acp: client.SessionClient) -> Any:
        sid = await acp.new_session(os.getcwd())
        await acp.prompt(sid, "alpha beta")
        await acp.prompt(sid, "gamma")
        live = acp.states[sid].copy()
        await acp.replay(sid, os.getcwd())  # into the state that watched it live
        again = acp.states[sid]
        fresh = client.SessionClient(conn, strict=True)  # a client that never saw it
        conn.handler = fresh
        await fresh.replay(sid, os.getcwd())
        return live, again, fresh.states[sid]

    live, again, fresh = session(STATE_AGENT, version, body, strict=True)

    def conversation(state: Any) -> Any:
        return [{k: v for k, v in e.items() if k != "turn"} for e in state.to_wire()["transcript"]]

    assert conversation(again) == conversation(live) == conversation(fresh)
    assert again.ok and fresh.ok


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_strict_client_names_the_raw_echo_agents_broken_rules(version: str) -> None:
    async def body(conn: Any, acp: client.SessionClient) -> Any:
        sid = await acp.new_session(os.getcwd())
        turns = [await acp.prompt(sid, text, idle_timeout=0.3) for text in ("hello there", "again")]
        return turns, acp.states[sid]

    turns, state = session(RAW_ECHO_AGENT, version, body, strict=True)
    rules = state.rules_broken()
    # every reply is messageId "msg_1": turn 2 is appended to turn 1
    assert "message.reused" in rules
    if version == "v2":
        # no user_message, no running, no idle: the prompt waited idle_timeout and gave up
        assert all(t.timed_out and t.stop_reason is None for t in turns)
        assert {"turn.idle", "turn.user-message", "turn.running"} <= set(rules)
    else:
        assert [t.stop_reason for t in turns] == ["end_turn", "end_turn"]
    lenient = session(RAW_ECHO_AGENT, version, body)[1]
    assert lenient.problems == []  # nothing in it made the lenient state guess


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_the_echo_agent_on_acp_types_agent_breaks_no_rule(version: str) -> None:
    # the library runs the turn (fresh message ids, v2's ack/running/idle), so the example passes strict mode
    async def body(conn: Any, acp: client.SessionClient) -> Any:
        sid = await acp.new_session(os.getcwd())
        turns = [await acp.prompt(sid, text, idle_timeout=5) for text in ("hello there", "again")]
        return turns, acp.states[sid]

    turns, state = session(ECHO_AGENT, version, body, strict=True)
    assert [t.stop_reason for t in turns] == ["end_turn", "end_turn"]
    assert not any(t.timed_out for t in turns)
    assert state.rules_broken() == []


@pytest.fixture(scope="module")
def sdk_python() -> str:
    from _venvs import ensure_venv

    return ensure_venv(
        ROOT / ".venv-interop", sys.executable, ROOT / "tests" / "interop" / "requirements.txt", timeout=300
    )


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_prompt_against_the_official_python_sdk_agent(sdk_python: str, version: str) -> None:
    # the SDK speaks v1 only: a client asking v2 accepts its v1 answer, and the same API serves it
    async def body(conn: Any, acp: client.SessionClient) -> Any:
        sid = await acp.new_session(os.getcwd())
        turns = [await acp.prompt(sid, text) for text in ("hi from the sdk", "and again")]
        return conn.version, turns, acp.states[sid]

    async def main() -> Any:
        versions = ("v2", "v1") if version == "v2" else ("v1",)
        command = [sdk_python, str(ROOT / "tests" / "interop" / "sdk_agent.py")]
        factory = lambda c: client.SessionClient(c, strict=True)  # noqa: E731
        async with connection.spawn_agent(command, factory, versions=versions) as conn:
            m: Any = v2 if version == "v2" else v1
            info = {"info": INFO} if version == "v2" else {"client_info": INFO}
            await conn.initialize(m.InitializeRequest(protocol_version=2 if version == "v2" else 1, **info))
            return await asyncio.wait_for(body(conn, conn.handler), 60)

    settled, turns, state = asyncio.run(main())
    assert settled == "v1" and [t.stop_reason for t in turns] == ["end_turn", "end_turn"]
    assert [m.text for m in state.messages] == ["hi from the sdk", "and again"]  # one message per turn
    assert state.problems == []


def test_the_transcript_example_prints_a_live_and_correct_transcript(capsys: pytest.CaptureFixture[str]) -> None:
    sys.path.insert(0, str(ROOT / "examples"))
    import transcript

    state = v2.SessionState()
    for update in (
        {"sessionUpdate": "user_message", "messageId": "u", "content": [{"type": "text", "text": "hi"}]},
        {"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": {"type": "text", "text": "Hel"}},
        {"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": {"type": "text", "text": "lo"}},
        {"sessionUpdate": "agent_message", "messageId": "a", "content": [{"type": "text", "text": "Bye"}]},
    ):
        state.apply({"sessionId": "s", "update": update})
        transcript.show(state, None)
    assert capsys.readouterr().out == "user: hi\nagent: Hello\nagent (rewritten): Bye"

    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "transcript.py"), "--strict", "one two", "--", *STATE_AGENT],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (out.returncode, out.stdout) == (0, "user: one two\nagent: onetwo\n[end_turn]\n"), out.stderr


def test_the_readme_transcript_client_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    section = readme[readme.index("### The conversation, not just the messages") :]
    code = section[section.index("```python") + len("```python") : section.index("```", section.index("```python") + 9)]
    script = tmp_path / "demo.py"
    script.write_text(code, "utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "generated")}
    out = subprocess.run(
        [sys.executable, str(script), *STATE_AGENT], capture_output=True, text=True, timeout=60, env=env
    )
    assert (out.returncode, out.stdout) == (0, "\nuser: hello\nagent: hello\n[end_turn]\n"), out.stderr


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_cancel_ends_a_streaming_turn_cancelled(version: str) -> None:
    async def body(conn: Any, acp: client.SessionClient) -> Any:
        sid = await acp.new_session(os.getcwd())
        turn = asyncio.ensure_future(acp.prompt(sid, "slow"))
        while not acp.states[sid].messages:
            await asyncio.sleep(0.01)
        await acp.cancel(sid)
        return await turn

    turn = session(STATE_AGENT, version, body, strict=True)
    assert turn.stop_reason == "cancelled" and turn.problems == []


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_prompt_raises_connection_closed_when_the_agent_dies_mid_turn(version: str) -> None:
    # v2: the prompt was acknowledged, then the agent exited before any idle: nothing else will end the turn
    async def body(conn: Any, acp: client.SessionClient) -> Any:
        sid = await acp.new_session(os.getcwd())
        with pytest.raises(connection.ConnectionClosed):
            await acp.prompt(sid, "die")
        return acp.states[sid]

    state = session(STATE_AGENT, version, body)
    assert state.messages[-1].text == "bye"


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_two_prompts_on_one_session_each_return_their_own_turn(version: str) -> None:
    # the second call waits for the first turn to end; before, it took the first's idle waiter and the first hung
    async def body(conn: Any, acp: client.SessionClient) -> Any:
        sid = await acp.new_session(os.getcwd())
        turns = await asyncio.gather(acp.prompt(sid, "one two"), acp.prompt(sid, "three"))
        return turns, acp.states[sid], acp._prompting

    turns, state, queues = session(STATE_AGENT, version, body, strict=True)
    assert [t.stop_reason for t in turns] == ["end_turn", "end_turn"]
    assert all(t.problems == [] for t in turns) and state.ok
    assert [m.text for m in state.messages if m.role == "agent"] == ["onetwo", "three"]
    assert queues == {}  # nothing kept once the prompts are done


@pytest.mark.parametrize(
    ("agent", "stdout", "error"),
    [
        (
            [*STATE_AGENT],
            "user: die\nagent: bye\n",
            "error: the connection ended before the turn on session 'sess_1' did\n",
        ),
        (
            [sys.executable, str(ROOT / "tests" / "client_agents.py"), "bad-result"],
            "",
            "error: invalid result of 'session/new': sessionId: Input should be a valid string\n",
        ),
    ],
)
def test_the_transcript_example_ends_with_one_line_on_a_bad_agent(agent: list[str], stdout: str, error: str) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "transcript.py"), "die", "--", *agent],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (out.returncode, out.stdout, out.stderr) == (1, stdout, error)
