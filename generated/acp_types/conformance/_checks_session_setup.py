"""Agent checks, seeds suite: v2 session setup (seed 001) and v1 session resume/close.

The initial session state, session/resume and its replay, session/close of a
running turn, message ids across a restart (SET-13). Registered with
``@check``; ``_agent.py`` runs them.

Hand-written: the source is runtime/conformance/_checks_session_setup.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

from typing import Any

from ._agent_run import (
    MESSAGE_UPDATES,
    SEED_001,
    AgentRun,
    Turn,
    _quiet_after,
    _raw_keys,
    _restart,
    kind,
    session_of,
    update_of,
)
from ._checks import Fail, Skip, check
from ._driver import Event, Reply


def _needs_v1(run: AgentRun, method: str) -> None:
    if run.version == "v1":
        run.needs(method)


@check(
    "SET-03",
    "availableCommands is never null, and empty lists are left out, in setup answers",
    source=f"{SEED_001}, Initial Session State",
    suite="seeds",
    versions=("v2",),
    rows=("SET-03", "SET-04"),
)
async def _set03(run: AgentRun) -> None:
    _sid, _cwd, reply = await run.shared()
    for key, value in reply.result.items():
        run.failed(key == "availableCommands" and value is None, "availableCommands is null", reply.seq)
        if value == []:  # stated without a keyword (REQ): a warning
            raise Fail(f"{key} is an empty list (left out when empty)", reply.seq, soft=True)


async def _resume(run: AgentRun, sid: str, cwd: str, replay: bool) -> tuple[Reply, list[Event]]:
    mark = run.p.mark()
    params: dict[str, Any] = {"sessionId": sid, "cwd": cwd, "mcpServers": []}
    if replay:
        params["replayFrom"] = {"type": "start"}
        run.mark(sid, "begin_replay")
    reply = await run.call("session/resume", params)
    if replay:
        run.oracle.mark(run.key(sid), reply.seq, "end_replay")
    if reply.code == -32601 and run.version == "v2":
        raise Skip("session/resume is not implemented (see SET-07)")
    run.failed(
        not reply.ok,
        f"session/resume did not answer a valid result: {reply.error or reply.raw.get('error')}",
        reply.seq,
    )
    await run.p.quiet(0.1, 0.5)
    return reply, [e for e in run.p.since(mark, "session/update") if session_of(e) == sid]


async def _session_with_turn(run: AgentRun) -> tuple[str, str, Turn]:
    _needs_v1(run, "session/resume")
    sid, cwd, _reply = await run.shared()
    turn, _ = await run.turn(sid)
    return sid, cwd, turn


@check(
    "SET-07",
    "session/resume is implemented",
    source=f"{SEED_001}, Resuming Sessions",
    suite="seeds",
    versions=("v2",),
    rows=("SET-07", "INI-12"),
)
async def _set07(run: AgentRun) -> None:
    sid, cwd, _reply = await run.shared()
    await run.ok("session/resume", {"sessionId": sid, "cwd": cwd, "mcpServers": []})


@check(
    "SET-09",
    "session/resume without replayFrom replays no history",
    source=f"{SEED_001}, Resuming Sessions; v1 session-setup page",
    suite="seeds",
    rows=("SET-09", "S1-06"),
)
async def _set09(run: AgentRun) -> None:
    sid, cwd, _turn = await _session_with_turn(run)
    reply, updates = await _resume(run, sid, cwd, replay=False)
    replayed = [e.seq for e in updates if kind(e) in MESSAGE_UPDATES and e.seq < reply.seq]
    run.failed(bool(replayed), f"{len(replayed)} message updates before the resume answer", *replayed[:3])


@check(
    "SET-10",
    "replayFrom start replays the history before answering",
    source=f"{SEED_001}, Resuming Sessions",
    suite="seeds",
    versions=("v2",),
)
async def _set10(run: AgentRun) -> None:
    sid, cwd, _turn = await _session_with_turn(run)
    reply, updates = await _resume(run, sid, cwd, replay=True)
    before = [e for e in updates if e.seq < reply.seq and kind(e) in MESSAGE_UPDATES]
    run.failed(
        not any(kind(e).startswith("user_message") for e in before),
        "no replayed user message before the resume answer",
        reply.seq,
    )
    run.failed(
        not any(kind(e).startswith("agent_message") for e in before),
        "no replayed agent message before the resume answer",
        reply.seq,
    )


@check(
    "SET-12",
    "replayed messages have distinct messageIds",
    source=f"{SEED_001}, Resuming Sessions",
    suite="seeds",
    versions=("v2",),
)
async def _set12(run: AgentRun) -> None:
    sid, cwd, _turn = await _session_with_turn(run)
    await _resume(run, sid, cwd, replay=True)
    run.state_rules(sid, "message.kind")


@check(
    "SET-13",
    "a replayed user message keeps the messageId it had in the live turn",
    source=f"{SEED_001}, Resuming Sessions",
    suite="seeds",
    versions=("v2",),
)
async def _set13(run: AgentRun) -> None:
    sid, cwd, turn = await _session_with_turn(run)
    live = {update_of(e).get("messageId") for e in turn.messages() if kind(e).startswith("user_message")}
    if not live:
        raise Skip("the live turn reported no user message (see PL-03)")
    _reply, updates = await _resume(run, sid, cwd, replay=True)
    replayed = {update_of(e).get("messageId") for e in updates if kind(e).startswith("user_message")}
    run.failed(
        not live <= replayed,
        f"the live user message {sorted(map(str, live))} was replayed as {sorted(map(str, replayed))}",
    )
    # "including after reconnecting or restarting the Agent": the same, from a fresh process
    await _restart(run)
    mark = run.p.mark()
    params = {"sessionId": sid, "cwd": cwd, "mcpServers": [], "replayFrom": {"type": "start"}}
    reply = await run.call("session/resume", params)
    if not reply.ok:
        return  # the agent keeps no session across a restart (or cannot resume it): nothing more to judge
    await run.p.quiet(0.1, 0.5)
    updates = [e for e in run.p.since(mark, "session/update") if session_of(e) == sid and e.seq < reply.seq]
    replayed = {update_of(e).get("messageId") for e in updates if kind(e).startswith("user_message")}
    run.failed(  # a user message need not be retained; one that is keeps its id
        bool(replayed) and not live <= replayed,
        f"after a restart, the live user message {sorted(map(str, live))} was replayed as "
        f"{sorted(map(str, replayed)) or 'nothing'}",
        reply.seq,
    )


@check(
    "SET-15",
    "a replayed message starts with a message update (content reset), not a chunk",
    source=f"{SEED_001}, Resuming Sessions",
    suite="seeds",
    versions=("v2",),
)
async def _set15(run: AgentRun) -> None:
    sid, cwd, _turn = await _session_with_turn(run)
    await _resume(run, sid, cwd, replay=True)
    run.state_rules(sid, "replay.chunk-before-reset")


@check(
    "SET-17",
    "session/resume answers only after every replayed entry",
    source=f"{SEED_001}, Resuming Sessions",
    suite="seeds",
    versions=("v2",),
)
async def _set17(run: AgentRun) -> None:
    sid, cwd, _turn = await _session_with_turn(run)
    reply, updates = await _resume(run, sid, cwd, replay=True)
    late = [e.seq for e in updates if e.seq > reply.seq and kind(e) in MESSAGE_UPDATES]
    run.failed(bool(late), f"{len(late)} replayed message updates after the resume answer", reply.seq, *late[:3])


@check(
    "SET-18",
    "session/close is implemented",
    source=f"{SEED_001}, Closing Active Sessions",
    suite="seeds",
    versions=("v2",),
    rows=("SET-18", "INI-12"),
)
async def _set18(run: AgentRun) -> None:
    await run.ok("session/close", {"sessionId": await run.new_session()})


@check(
    "SET-20",
    "session/close mid-turn cancels the turn and answers {}",
    source=f"{SEED_001}, Closing Active Sessions; v1 session-setup page",
    suite="seeds",
    rows=("SET-20", "S1-08"),
)
async def _set20(run: AgentRun) -> None:
    _needs_v1(run, "session/close")
    sid = await run.new_session()
    turn, answer = await run.turn(sid, run.options.long_prompt, interrupt="session/close")
    if answer is not None and answer.code == -32601 and run.version == "v2":
        raise Skip("session/close is not implemented (see SET-18)")
    run.cancelled_turn(turn)
    run.failed(
        answer is None or not answer.ok or bool(_raw_keys(answer.result)),
        f"session/close answered {answer.raw if answer else None}",
    )
    run.state_rules(sid, "cancel.stop-reason")
    _quiet_after(turn, answer, "session/close")
