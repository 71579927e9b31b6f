"""Agent checks, core suite: initialize (the initialization page), and distinct session ids.

Each check is an ``async`` function of an :class:`~._agent_run.AgentRun`
registered with ``@check``; ``_agent.py`` runs them in the order of its table.

Hand-written: the source is runtime/conformance/_checks_initialize.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

from typing import Any

from ._agent_run import SEED_001, AgentRun, kind, session_of, update_of
from ._checks import Fail, check
from ._driver import NUMBERS

INIT_PAGE = "initialization page"


@check(
    "INI-03",
    "initialize answers with a protocol version and capabilities that validate",
    source=f"{INIT_PAGE}, intro",
    rows=("INI-03",),
)
async def _ini03(run: AgentRun) -> None:
    reply = run.init
    assert reply is not None
    run.failed(
        not reply.ok, f"the initialize answer does not validate: {reply.error or reply.raw.get('error')}", reply.seq
    )
    run.failed(not isinstance(reply.result.get("protocolVersion"), int), "protocolVersion is not an integer", reply.seq)


@check(
    "INI-04",
    "initialize answers with agentInfo",
    level="SHOULD",
    versions=("v1",),
    source=f"{INIT_PAGE}, Implementation Information",
)
async def _ini04(run: AgentRun) -> None:
    assert run.init is not None
    run.failed(
        not isinstance(run.adv.raw.get("agentInfo"), dict), "no agentInfo in the initialize answer", run.init.seq
    )


@check(
    "INI-05",
    "version negotiation: an unsupported version is answered with the latest supported one",
    source=f"{INIT_PAGE}, Version Negotiation",
    rows=("INI-05", "INI-06"),
)
async def _ini05(run: AgentRun) -> None:
    program, reply = await run.spawn(protocol=99)
    try:
        result = reply.raw.get("result")
        chosen: Any = result.get("protocolVersion") if isinstance(result, dict) else None
        if chosen not in NUMBERS.values():
            raise Fail(f"asked for version 99, the agent answered {chosen!r} (not a version it can speak)", reply.seq)
        run.failed(
            int(chosen) < NUMBERS[run.version],
            f"asked for version 99, the agent answered {chosen}, older than {NUMBERS[run.version]} which it speaks",
            reply.seq,
        )
    finally:
        await program.stop()


@check(
    "INI-11",
    "the baseline methods answer: session/new and session/prompt (v2 also session/list)",
    source=f"{INIT_PAGE}, Session Capabilities",
    rows=("INI-11", "INI-12", "CNT-01"),
)
async def _ini11(run: AgentRun) -> None:
    sid = await run.shared_id()
    turn, _ = await run.turn(sid)
    assert turn.reply is not None
    run.failed(
        not turn.reply.ok,
        f"session/prompt did not answer a valid result: {turn.reply.error or turn.reply.raw.get('error')}",
        turn.reply.seq,
    )
    if run.version == "v2" and run.adv.raw.get("capabilities", {}).get("session") is not None:
        await run.ok("session/list", {})


@check("INI-10", "prompts of text and resource_link blocks are accepted", source=f"{INIT_PAGE}, Prompt Capabilities")
async def _ini10(run: AgentRun) -> None:
    sid = await run.shared_id()
    blocks = [
        {"type": "text", "text": run.options.prompt},
        {"type": "resource_link", "uri": "file:///conformance/readme.txt", "name": "readme.txt"},
    ]
    reply = await run.call("session/prompt", {"sessionId": sid, "prompt": blocks}, run.options.turn_timeout)
    run.failed(not reply.ok, f"a prompt with a resource_link block was refused: {reply.raw.get('error')}", reply.seq)
    if run.version == "v2":
        await run.p.wait_for(
            lambda: any(
                kind(e) == "state_update" and update_of(e).get("state") == "idle"
                for e in run.p.since(reply.seq, "session/update")
                if session_of(e) == sid
            ),
            run.options.turn_timeout,
        )


@check("SET-02", "session/new answers a unique sessionId", source=f"{SEED_001}, Creating a Session")
async def _set02(run: AgentRun) -> None:
    ids = [await run.shared_id(), *await run.new_sessions([run.directory(), run.directory()])]
    run.failed(len(set(ids)) != 3, f"three session/new calls answered {ids}")
