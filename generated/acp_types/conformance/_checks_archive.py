"""Agent checks, seeds suite: session archive (seed 000), including its state across a restart.

Archive and unarchive, the archived filter of session/list, what an archived
session still allows, and (ARC-12, ARC-19) the archive state after the agent's
process is restarted. Registered with ``@check``; ``_agent.py`` runs them.

Hand-written: the source is runtime/conformance/_checks_archive.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

from ._agent_run import (
    MESSAGE_UPDATES,
    RESOURCE_NOT_FOUND,
    SEED_000,
    AgentRun,
    _ids,
    _quiet_after,
    _raw_keys,
    _restart,
    kind,
    session_of,
    update_of,
)
from ._checks import Note, check


def _archive_ready(run: AgentRun) -> None:
    run.needs("session/archive")


@check(
    "ARC-02",
    "an agent that advertises archive implements session/archive and session/unarchive",
    source=f"{SEED_000}, Capabilities",
    suite="seeds",
)
async def _arc02(run: AgentRun) -> None:
    _archive_ready(run)
    sid = await run.new_session()
    for method in ("session/archive", "session/unarchive"):
        reply = await run.call(method, {"sessionId": sid})
        run.failed(reply.code == -32601, f"{method} answered -32601 though archive is advertised", reply.seq)


@check("ARC-01", "session/archive and session/unarchive answer {}", source=f"{SEED_000}, Methods", suite="seeds")
async def _arc01(run: AgentRun) -> None:
    _archive_ready(run)
    sid = await run.new_session()
    for method in ("session/archive", "session/unarchive"):
        reply = await run.ok(method, {"sessionId": sid})
        run.failed(bool(_raw_keys(reply.result)), f"{method} answered {reply.result!r}", reply.seq)


async def _archived_pair(run: AgentRun) -> tuple[str, str, str]:
    _archive_ready(run)
    run.needs_list()
    cwd = run.directory()
    live, gone = await run.new_sessions([cwd, cwd])
    await run.ok("session/archive", {"sessionId": gone})
    return cwd, live, gone


@check(
    "ARC-04",
    "the archived filter: only lists archived sessions, include both, exclude the others",
    source=f"{SEED_000}, Listing and state",
    suite="seeds",
    rows=("ARC-04", "ARC-21"),
)
async def _arc04(run: AgentRun) -> None:
    cwd, live, gone = await _archived_pair(run)
    for value, want in (("only", {gone}), ("include", {live, gone}), ("exclude", {live})):
        sessions, replies = await run.list_all({"cwd": cwd, "archived": value})
        got = _ids(sessions) & {live, gone}
        run.failed(
            got != want,
            f"archived={value!r} listed {sorted(got)} of the archived {gone} and the live {live}",
            replies[-1].seq,
        )


@check(
    "ARC-24",
    "an archived filter value the agent does not support is refused with -32602, not read as exclude",
    source=f"{SEED_000}, Listing; the November 2026 schema, SessionArchiveFilter",
    suite="seeds",
)
async def _arc24(run: AgentRun) -> None:
    _archive_ready(run)
    run.needs_list()
    _sid, cwd, _reply = await run.shared()
    reply = await run.call("session/list", {"cwd": cwd, "archived": "acp-conformance-sometimes"})
    run.failed(
        reply.code != -32602,
        f"session/list with archived 'acp-conformance-sometimes' answered {reply.raw.get('error', reply.raw.get('result'))!r}",
        reply.seq,
    )


@check(
    "ARC-05",
    "the default list leaves archived sessions out",
    source=f"{SEED_000}, Listing (3-value filter)",
    suite="seeds",
)
async def _arc05(run: AgentRun) -> None:
    cwd, _live, gone = await _archived_pair(run)
    sessions, replies = await run.list_all({"cwd": cwd})
    run.failed(gone in _ids(sessions), f"the archived session {gone} is in the default list", replies[-1].seq)


@check(
    "ARC-06",
    "with archive advertised, every listed session carries a boolean archived",
    source=f"{SEED_000}, SessionInfo",
    suite="seeds",
)
async def _arc06(run: AgentRun) -> None:
    cwd, _live, _gone = await _archived_pair(run)
    sessions, replies = await run.list_all({"cwd": cwd, "archived": "include"})
    bad = [s.get("sessionId") for s in sessions if not isinstance(s.get("archived"), bool)]
    run.failed(bool(bad), f"sessions without a boolean archived: {bad}", replies[-1].seq)


@check(
    "ARC-09",
    "archiving an open session reports session_info_update archived: true",
    level="SHOULD",
    source=f"{SEED_000}, SessionInfoUpdate",
    suite="seeds",
    rows=("ARC-09", "ARC-14"),
)
async def _arc09(run: AgentRun) -> None:
    _archive_ready(run)
    sid = await run.new_session()
    mark = run.p.mark()
    await run.ok("session/archive", {"sessionId": sid})
    await run.p.quiet(0.1, 0.5)
    info = [
        e
        for e in run.p.since(mark, "session/update")
        if session_of(e) == sid and kind(e) == "session_info_update" and update_of(e).get("archived") is True
    ]
    run.failed(not info, "no session_info_update with archived: true")


@check(
    "ARC-11",
    "archive then unarchive keeps the session's id",
    source=f"{SEED_000}, Semantics: Preservation",
    suite="seeds",
)
async def _arc11(run: AgentRun) -> None:
    cwd, _live, gone = await _archived_pair(run)
    await run.ok("session/unarchive", {"sessionId": gone})
    sessions, replies = await run.list_all({"cwd": cwd})
    run.failed(gone not in _ids(sessions), f"after unarchive, {gone} is not listed", replies[-1].seq)


# -- across a restart of the program under test (issue 30) -------------------------------------


_NOT_KEPT = "the agent keeps no session across a restart of its process"


@check(
    "ARC-12",
    "archive state persists across a restart of the agent",
    source=f"{SEED_000}, Semantics: Preservation",
    suite="seeds",
)
async def _arc12(run: AgentRun) -> None:
    _archive_ready(run)
    run.needs_list()
    cwd = run.directory()
    sid = await run.new_session(cwd)
    await run.ok("session/archive", {"sessionId": sid})
    await _restart(run)
    sessions, replies = await run.list_all({"cwd": cwd, "archived": "include"})
    found = [s for s in sessions if s.get("sessionId") == sid]
    if not found:
        raise Note(f"{_NOT_KEPT}: {sid} is not listed after it")
    run.failed(
        found[0].get("archived") is not True,
        f"archived before a restart, {sid} is listed after it with archived={found[0].get('archived')!r}",
        replies[-1].seq,
    )


@check(
    "ARC-19",
    "archive and unarchive reach a session made before a restart, not open on this connection",
    source=f"{SEED_000}, Semantics: Idempotency",
    suite="seeds",
)
async def _arc19(run: AgentRun) -> None:
    _archive_ready(run)
    sid = await run.new_session()
    await _restart(run)
    for method in ("session/archive", "session/unarchive"):
        reply = await run.call(method, {"sessionId": sid})
        if reply.code == RESOURCE_NOT_FOUND and method == "session/archive":
            raise Note(f"{_NOT_KEPT}: {method} answered -32002")
        run.failed(not reply.ok, f"{method} after a restart answered {reply.raw.get('error')!r}", reply.seq)


@check(
    "ARC-13",
    "archiving a session mid-turn cancels the turn",
    source=f"{SEED_000}, Semantics: Archiving closes",
    suite="seeds",
)
async def _arc13(run: AgentRun) -> None:
    _archive_ready(run)
    sid = await run.new_session()
    turn, answer = await run.turn(sid, run.options.long_prompt, interrupt="session/archive")
    run.cancelled_turn(turn)
    run.failed(answer is None or not answer.ok, "session/archive failed mid-turn")
    run.state_rules(sid, "cancel.stop-reason")
    _quiet_after(turn, answer, "session/archive")


@check("ARC-15", "session/unarchive replays nothing", source=f"{SEED_000}, Semantics: Archiving closes", suite="seeds")
async def _arc15(run: AgentRun) -> None:
    _archive_ready(run)
    sid = await run.new_session()
    await run.turn(sid)
    await run.ok("session/archive", {"sessionId": sid})
    await run.p.quiet(0.1, 0.5)
    mark = run.p.mark()
    reply = await run.ok("session/unarchive", {"sessionId": sid})
    replay = [e.seq for e in run.p.since(mark, "session/update") if e.seq < reply.seq and kind(e) in MESSAGE_UPDATES]
    run.failed(bool(replay), f"{len(replay)} message updates during session/unarchive", *replay[:3])


@check("ARC-18", "archive and unarchive are idempotent", source=f"{SEED_000}, Semantics: Idempotency", suite="seeds")
async def _arc18(run: AgentRun) -> None:
    _archive_ready(run)
    sid = await run.new_session()
    for method in ("session/archive", "session/archive", "session/unarchive", "session/unarchive"):
        await run.ok(method, {"sessionId": sid})


@check(
    "ARC-20",
    "archive and unarchive of an unknown session answer -32002",
    source=f"{SEED_000}, Semantics: Unknown sessions",
    suite="seeds",
)
async def _arc20(run: AgentRun) -> None:
    _archive_ready(run)
    for method in ("session/archive", "session/unarchive"):
        reply = await run.call(method, {"sessionId": "acp-conformance-no-such-session"})
        run.failed(
            reply.code != -32002,
            f"{method} of an unknown session answered {reply.raw.get('error', reply.raw.get('result'))!r}",
            reply.seq,
        )
