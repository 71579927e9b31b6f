"""Agent checks, seeds suite: session/list (seed 002).

Pages and cursors, the cwd filter, titles and timestamps, no updates sent by
listing. Registered with ``@check``; ``_agent.py`` runs them.

Hand-written: the source is runtime/conformance/_checks_session_list.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path

from ._agent_run import SEED_002, AgentRun, _ids, session_of
from ._checks import Skip, check


@check(
    "LST-02",
    "session/list with no params answers the first page (sessions present)",
    source=f"{SEED_002}, listing",
    suite="seeds",
    rows=("LST-02", "LST-05"),
)
async def _lst02(run: AgentRun) -> None:
    run.needs_list()
    sid = await run.shared_id()
    reply = await run.ok("session/list", {})
    run.failed(not isinstance(reply.result.get("sessions"), list), "no sessions array", reply.seq)
    sessions, replies = await run.list_all({})  # the first page may hold others: walk them all
    run.failed(
        sid not in _ids(sessions),
        f"the session {sid} just made is on no page of session/list {{}} ({len(sessions)} listed)",
        replies[-1].seq,
    )


@check(
    "LST-04",
    "the cwd filter lists exactly the sessions of that directory",
    source=f"{SEED_002}, parameter cwd",
    suite="seeds",
)
async def _lst04(run: AgentRun) -> None:
    run.needs_list()
    b = run.directory()
    # near misses: a directory inside b, and one whose path starts with b's (a prefix match takes both)
    inside, beside = Path(b) / "sub", Path(b + "-x")
    inside.mkdir(exist_ok=True)
    beside.mkdir(exist_ok=True)
    made = await run.new_sessions([b, b, str(inside), str(beside)])
    mine = set(made[:2])
    others = {made[2]: str(inside), made[3]: str(beside)}
    sessions, replies = await run.list_all({"cwd": b})
    got = _ids(sessions)
    wrong = sorted(f"{sid} (of {cwd})" for sid, cwd in others.items() if sid in got)
    run.failed(bool(wrong), f"listing cwd {b} includes {', '.join(wrong)}", replies[-1].seq)
    run.failed(not mine <= got, f"listing cwd {b} misses {sorted(mine - got)}", replies[-1].seq)


@check("LST-10", "a cwd no session has lists an empty sessions array", source=f"{SEED_002}, listing", suite="seeds")
async def _lst10(run: AgentRun) -> None:
    run.needs_list()
    await run.shared()
    reply = await run.ok("session/list", {"cwd": run.directory()})
    run.failed(
        reply.result.get("sessions") != [],
        f"{len(reply.result.get('sessions') or [])} sessions listed for an unused cwd",
        reply.seq,
    )


@check(
    "LST-06",
    "every listed session has an absolute cwd",
    source=f"{SEED_002}, SessionInfo",
    suite="seeds",
    rows=("LST-06", "TRN-05"),
)
async def _lst06(run: AgentRun) -> None:
    run.needs_list()
    _sid, cwd, _reply = await run.shared()
    sessions, replies = await run.list_all({"cwd": cwd})
    bad = [s.get("cwd") for s in sessions if not (isinstance(s.get("cwd"), str) and os.path.isabs(s["cwd"]))]
    run.failed(bool(bad), f"cwd not absolute: {bad[:3]}", replies[-1].seq)


@check(
    "LST-07",
    "additionalDirectories is listed only when advertised",
    source=f"{SEED_002}, SessionInfo.additionalDirectories",
    suite="seeds",
)
async def _lst07(run: AgentRun) -> None:
    run.needs_list()
    if run.adv.feature("session.additional_directories") or run.adv.feature("session.additionalDirectories"):
        raise Skip("the agent advertises additionalDirectories")
    _sid, cwd, _reply = await run.shared()
    sessions, replies = await run.list_all({"cwd": cwd})
    bad = [s.get("sessionId") for s in sessions if "additionalDirectories" in s]
    run.failed(bool(bad), f"additionalDirectories listed without the capability: {bad[:3]}", replies[-1].seq)


@check(
    "LST-13",
    "an invalid cursor is answered with an error",
    level="SHOULD",
    source=f"{SEED_002}, pagination",
    suite="seeds",
)
async def _lst13(run: AgentRun) -> None:
    run.needs_list()
    reply = await run.call("session/list", {"cursor": "\u00a7acp-conformance-not-a-cursor\u00a7"})
    run.failed("result" in reply.raw, "a made-up cursor was answered with a result", reply.seq)


@check("LST-15", "walking nextCursor ends and lists each session once", source=f"{SEED_002}, pagination", suite="seeds")
async def _lst15(run: AgentRun) -> None:
    run.needs_list()
    cwd = run.directory()
    made = set(await run.new_sessions([cwd] * 5))
    sessions, replies = await run.list_all({"cwd": cwd})
    ids = [str(s.get("sessionId")) for s in sessions]
    run.failed(len(ids) != len(set(ids)), f"a session is listed twice over {len(replies)} pages", replies[-1].seq)
    run.failed(not made <= set(ids), f"{sorted(made - set(ids))} never listed", replies[-1].seq)


@check(
    "LST-18",
    "session/list only discovers: no session/update while listing",
    source=f"{SEED_002}, interaction with other methods",
    suite="seeds",
)
async def _lst18(run: AgentRun) -> None:
    run.needs_list()
    sid, cwd, _reply = await run.shared()
    await run.turn(sid)
    mark = run.p.mark()
    reply = await run.ok("session/list", {"cwd": cwd})
    await run.p.quiet(0.1, 0.5)
    stray = [e.seq for e in run.p.since(mark, "session/update") if session_of(e) == sid]
    run.failed(bool(stray), f"{len(stray)} session/update after a session/list", reply.seq, *stray[:3])
