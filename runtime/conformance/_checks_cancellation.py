"""Agent checks, core suite: cancellation (``$/cancel_request``) and one answer per request.

Registered with ``@check``; ``_agent.py`` runs them.

Hand-written: the source is runtime/conformance/_checks_cancellation.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import asyncio

from ._agent_run import AgentRun, kind, session_of, update_of
from ._checks import Fail, Note, check

CAN = "cancellation page"


@check(
    "CAN-01",
    "a request cancelled with $/cancel_request still gets one answer (a result or -32800)",
    source=f"{CAN}, $/cancel_request",
)
async def _can01(run: AgentRun) -> None:
    p = run.p
    sid = await run.new_session()
    mark = p.mark()
    rid, future = p.start_request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": run.options.long_prompt}]}
    )
    await p.wait_for(lambda: bool(p.since(mark, "session/update")) or future.done(), run.options.turn_timeout)
    if future.done():  # v2 answers a prompt at once: cancel a custom request that waits instead
        if run.version == "v2":
            await p.wait_for(
                lambda: any(
                    kind(e) == "state_update" and update_of(e).get("state") == "idle"
                    for e in p.since(mark, "session/update")
                    if session_of(e) == sid
                ),
                run.options.turn_timeout,
            )
        rid, future = p.start_request("_acp_conformance/wait", {"seconds": run.options.turn_timeout * 2})
        await p.quiet(0.1, 0.3)
        if future.done():
            raise Note("no request of the agent's stayed unanswered long enough to be cancelled")
    p.notify("$/cancel_request", {"requestId": rid})
    try:
        reply = await asyncio.wait_for(asyncio.shield(future), run.options.turn_timeout)
    except asyncio.TimeoutError:
        raise Fail(f"no answer to the cancelled request {rid} within {run.options.turn_timeout:g} s") from None
    run.failed(
        "result" not in reply.raw and reply.code != -32800,
        f"the cancelled request was answered {reply.raw.get('error')}",
        reply.seq,
    )
    await p.quiet(0.15, 1.0)


@check(
    "CAN-03",
    "every request is answered exactly once (no second answer, no answer to an unknown id)",
    source=f"{CAN}, JSON-RPC 2.0",
    final=True,
)
async def _can03(run: AgentRun) -> None:
    bad = [pr for program in run.programs for pr in program.problems if pr.kind == "answers"]
    run.failed(bool(bad), "; ".join(pr.detail for pr in bad[:3]), *(pr.seq for pr in bad[:5]))
