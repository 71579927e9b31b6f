"""Agent checks, core suite: the prompt turn (v1 prompt-turn page, v2 prompt-lifecycle page).

Stop reasons, the turn's updates and message ids, the idle state, a turn
interrupted by session/cancel. Registered with ``@check``; ``_agent.py`` runs them.

Hand-written: the source is runtime/conformance/_checks_prompt_turn.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

from ._agent_run import V1_STOP, AgentRun, _output, _raw_keys, kind, update_of
from ._checks import Skip, check

PRM = "v1 prompt-turn page"
PL = "v2 prompt-lifecycle page"


@check(
    "PRM-03",
    "session/prompt answers with one of the stop reasons",
    versions=("v1",),
    source=f"{PRM}, Check for Completion",
    rows=("PRM-03", "PRM-06"),
)
async def _prm03(run: AgentRun) -> None:
    turn, _ = await run.turn(await run.shared_id())
    assert turn.reply is not None
    stop = turn.reply.result.get("stopReason") if isinstance(turn.reply.result, dict) else None
    run.failed(
        not turn.reply.ok or stop not in V1_STOP,
        f"the prompt's answer has stopReason {stop!r}: {turn.reply.error or ''}",
        turn.reply.seq,
    )


@check(
    "PRM-14",
    "every update of a turn comes before its prompt answer",
    versions=("v1",),
    source=f"{PRM}, Check for Completion",
)
async def _prm14(run: AgentRun) -> None:
    turn, _ = await run.turn(await run.shared_id())
    late = [e.seq for e in turn.updates if e.seq > turn.end_seq]
    run.failed(bool(late), f"{len(late)} session/update after the prompt's answer", *late[:3], turn.end_seq)


@check(
    "PRM-10",
    "session/cancel ends the turn with stopReason cancelled (a result, not an error)",
    versions=("v1",),
    source=f"{PRM}, Cancellation",
    rows=("PRM-10", "PRM-11"),
)
async def _prm10(run: AgentRun) -> None:
    sid = await run.new_session()
    turn, _ = await run.turn(sid, run.options.long_prompt, interrupt="session/cancel")
    assert turn.reply is not None
    run.cancelled_turn(turn)
    run.failed(
        not turn.reply.ok, f"after session/cancel the prompt answered {turn.reply.raw.get('error')}", turn.reply.seq
    )
    run.state_rules(sid, "cancel.stop-reason")


@check(
    "PRM-12",
    "after a cancel, no update of the turn follows the prompt's answer",
    versions=("v1",),
    source=f"{PRM}, Cancellation",
)
async def _prm12(run: AgentRun) -> None:
    turn, _ = await run.turn(await run.new_session(), run.options.long_prompt, interrupt="session/cancel")
    run.cancelled_turn(turn)
    late = [e.seq for e in turn.updates if e.seq > turn.end_seq]
    run.failed(bool(late), f"{len(late)} session/update after the cancelled turn's answer", *late[:3], turn.end_seq)


async def _message_ids(run: AgentRun) -> None:
    sid = await run.shared_id()
    for _ in range(2):
        await run.turn(sid)
    run.state_rules(sid, "message.reused")


check(
    "PRM-04",
    "agent messages of different turns have different messageIds",
    level="SHOULD",
    versions=("v1",),
    source=f"{PRM}, Message IDs",
)(_message_ids)
check(
    "PL-05",
    "agent messages of different turns have different messageIds",
    versions=("v2",),
    source=f"{PL}, Message IDs",
)(_message_ids)


# The November 2026 schema adds the inserted user message's id to the answer (seed 001 needs it for replay).
@check(
    "PL-02",
    "session/prompt answers with the user message's id only (completion comes as a state_update)",
    versions=("v2",),
    source=f"{PL}, 2. Prompt Accepted; the November 2026 v2 schema, PromptResponse",
)
async def _pl02(run: AgentRun) -> None:
    turn, _ = await run.turn(await run.shared_id(), run.options.long_prompt)
    assert turn.reply is not None
    extra = _raw_keys(turn.reply.result) - {"messageId"}
    run.failed(
        not turn.reply.ok or bool(extra), f"the prompt's answer is {turn.reply.raw.get('result')!r}", turn.reply.seq
    )
    ends = [e.seq for e in turn.updates if kind(e) == "state_update" and update_of(e).get("state") == "idle"] + (
        [turn.idle.seq] if turn.idle is not None else []
    )
    if ends and min(ends) < turn.reply.seq:
        streamed = [e.seq for e in turn.updates if _output(e) and not kind(e).startswith("user") and e.seq < min(ends)]
        run.failed(
            len(streamed) > 1,
            f"the prompt was answered only after the turn ended ({len(streamed)} updates of output, then idle,"
            " then the answer): the answer acknowledges the prompt, the idle state ends the turn",
            min(ends),
            turn.reply.seq,
        )


@check(
    "PL-03",
    "the inserted user message is reported (user_message or user_message_chunk)",
    versions=("v2",),
    source=f"{PL}, 2. Prompt Accepted",
)
async def _pl03(run: AgentRun) -> None:
    sid = await run.shared_id()
    await run.turn(sid)
    run.state_rules(sid, "turn.user-message")


@check(
    "PL-04",
    "a state_update running is sent when the turn's work starts",
    versions=("v2",),
    source=f"{PL}, 3. Agent Reports Output",
)
async def _pl04(run: AgentRun) -> None:
    sid = await run.shared_id()
    await run.turn(sid)
    run.state_rules(sid, "turn.running")


@check(
    "PL-07",
    "the turn ends with state_update idle and a stopReason",
    versions=("v2",),
    source=f"{PL}, 4. Report Completion",
)
async def _pl07(run: AgentRun) -> None:
    sid = await run.shared_id()
    await run.turn(sid)
    run.state_rules(sid, "turn.idle", "turn.stop-reason")


@check(
    "PL-10",
    "stop reasons and other enum values are known ones or start with _",
    versions=("v2",),
    source=f"{PL}, Stop Reasons; v2 extensibility page, Enum and Tagged-Union Variants",
    rows=("PL-10", "TOOL-04", "EXT-07", "CNT-03"),
)
async def _pl10(run: AgentRun) -> None:
    sid = await run.shared_id()
    await run.turn(sid)
    run.state_rules(sid, "value.reserved", "update.reserved")


@check(
    "PL-12",
    "session/cancel ends the turn with state_update idle, stopReason cancelled",
    versions=("v2",),
    source=f"{PL}, Cancellation",
    rows=("PL-12", "PL-13"),
)
async def _pl12(run: AgentRun) -> None:
    sid = await run.new_session()
    turn, _ = await run.turn(sid, run.options.long_prompt, interrupt="session/cancel")
    run.cancelled_turn(turn)
    run.state_rules(sid, "cancel.stop-reason")


@check(
    "PL-14", "after a cancel, no message update follows the idle state", versions=("v2",), source=f"{PL}, Cancellation"
)
async def _pl14(run: AgentRun) -> None:
    turn, _ = await run.turn(await run.new_session(), run.options.long_prompt, interrupt="session/cancel")
    run.cancelled_turn(turn)
    if turn.idle is None:
        raise Skip("no idle state_update after the cancel")
    late = [e.seq for e in turn.messages() if e.seq > turn.idle.seq]
    run.failed(bool(late), f"{len(late)} message updates after the idle state", *late[:3], turn.idle.seq)
