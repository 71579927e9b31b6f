"""Agent mode: the kit plays a scriptable client for an agent it spawns, and checks the agent's side.

One agent process serves the checks of a version in turn, each in sessions of
its own; when it dies, the next check starts a fresh one (the check that was
running fails with the exit status). A check that needs a capability the agent
did not advertise is SKIPPED with the reason.

This file runs them (:func:`run_agent`) and holds the check table: the checks
are in ``_checks_*.py``, one file per part of the spec, in the order below,
which is the order they run and are reported in; the client the checks drive
(:class:`AgentRun`, :class:`Turn`, :class:`Options`) is in ``_agent_run.py``.

Hand-written: the source is runtime/conformance/_agent.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import tempfile
import time
from pathlib import Path
from typing import Any

from . import (
    _checks_archive,
    _checks_cancellation,
    _checks_initialize,
    _checks_messages,
    _checks_prompt_turn,
    _checks_session_list,
    _checks_session_setup,
)
from ._agent_run import AgentRun, Options
from ._checks import FAILURE, INFO, REGISTRY, SKIPPED, SUCCESS, WARNING, Check, Fail, Note, Result, Skip, scrub
from ._checks_archive import _arc09
from ._checks_initialize import _ini11
from ._driver import NUMBERS, Closed

__all__ = ["INTERRUPTING", "PARTS", "PROMPTING", "Options", "run_agent"]  # Options: its home is _agent_run


async def run_agent(
    command: list[str], versions: list[str], checks: list[Check], options: Options
) -> tuple[list[Result], dict[str, Any]]:
    """Run ``checks`` against the agent ``command`` in each version; results and what it advertised.

    Each result goes to ``options.on_result`` as its check ends (with the workspace named
    ``$WORKSPACE``), and each version's row of the table to ``options.info`` when it is done, so that
    a run that is interrupted still has what it found so far.
    """
    results: list[Result] = []
    info: dict[str, Any] = options.info if options.info is not None else {}
    with tempfile.TemporaryDirectory(prefix="acp-conformance-") as tmp:

        def add(*found: Result) -> None:
            for r in scrub(list(found), tmp):
                results.append(r)
                if options.on_result is not None:
                    options.on_result(r)

        for version in versions:
            workspace = Path(tmp) / version
            workspace.mkdir()
            run = AgentRun(command, version, options, workspace)
            started = time.monotonic()
            chosen = [c for c in checks if version in c.versions]
            try:
                try:
                    await asyncio.wait_for(run.connect(), options.timeout + 2)
                except (TimeoutError, asyncio.TimeoutError, Closed) as exc:
                    why = str(exc) or "no answer to initialize"
                    add(
                        *(
                            Result(
                                c,
                                version,
                                FAILURE if c.id == "INI-03" else SKIPPED,
                                f"initialize failed: {why}",
                                [line.show() for line in run.transcript.lines][-8:],
                                time.monotonic() - started,
                            )
                            for c in chosen
                        )
                    )
                    info[version] = {"advertised": {}, "implemented": {}, "error": why}
                    continue
                answered = run.adv.raw.get("protocolVersion")
                assert run.init is not None
                if not run.init.ok:
                    why = f"the initialize answer does not validate: {run.init.error or run.init.raw.get('error')}"
                    add(
                        *(
                            Result(
                                c,
                                version,
                                FAILURE if c.id == "INI-03" else SKIPPED,
                                why,
                                [run.init.show(run.transcript)] if c.id == "INI-03" else [],
                            )
                            for c in chosen
                        )
                    )
                    info[version] = {"advertised": {}, "implemented": {}, "error": why}
                    continue
                if answered != NUMBERS[version]:
                    reason = f"asked for protocol version {NUMBERS[version]}, the agent answered {answered!r}"
                    wrong = await _speaks_anyway(run, answered)
                    add(
                        *(
                            Result(c, version, FAILURE, wrong[0], wrong[1], time.monotonic() - started)
                            if wrong is not None and c.id == "INI-05"
                            else Result(c, version, SKIPPED, reason)
                            for c in chosen
                        )
                    )
                    info[version] = {
                        "advertised": run.adv.raw,
                        "implemented": {},
                        "error": wrong[0] if wrong else reason,
                    }
                    continue
                if options.auth is not None:
                    run.login_error = await run.login()  # what then asks for a login is SKIPPED, saying why
                if chosen and all(c.final for c in chosen):
                    await _exercise(run)
                for c in sorted(chosen, key=lambda c: c.final):
                    if options.stopped is not None and options.stopped():
                        # asyncio.wait_for may swallow the cancellation of a step that ended with it
                        raise asyncio.CancelledError("interrupted")
                    add(await _one(run, c))
                info[version] = {"advertised": run.adv.raw, "implemented": dict(run.implemented), "table": _table(run)}
            finally:
                await run.close()
    return results, info


async def _speaks_anyway(run: AgentRun, answered: Any) -> tuple[str, list[str]] | None:
    """An agent that answered another version than asked: does it speak the asked one after all?

    Asked for a version it does not know (99), an agent answers the latest it supports; when that is
    the version the kit asked for first, the first answer broke version negotiation (a supported
    version is answered with the same version). Returns the failure's detail and evidence, or None.
    """
    asked = NUMBERS[run.version]
    try:
        program, reply = await asyncio.wait_for(run.spawn(protocol=99), run.options.timeout + 2)
    except (TimeoutError, asyncio.TimeoutError, Closed, Fail):
        return None
    try:
        result = reply.raw.get("result")
        latest = result.get("protocolVersion") if isinstance(result, dict) else None
        if isinstance(latest, int) and not isinstance(latest, bool) and latest >= asked:
            assert run.init is not None
            return (
                f"asked for protocol version {asked}, the agent answered {answered!r}; asked for 99 it answered"
                f" {latest}, so it speaks {asked}: a supported version is answered with the same version",
                [run.init.show(run.transcript), reply.show(run.transcript)],
            )
        return None
    finally:
        await program.stop()


async def _exercise(run: AgentRun) -> None:
    """A short exchange for checks that judge the whole of it, when they run alone."""
    with contextlib.suppress(Fail, Skip, Note, Closed, TimeoutError, asyncio.TimeoutError):
        await asyncio.wait_for(_ini11(run), run.options.timeout * 3)
        if run.adv.method("session/archive"):
            await asyncio.wait_for(_arc09(run), run.options.timeout * 3)


async def _one(run: AgentRun, c: Check) -> Result:
    started = time.monotonic()
    seqs: tuple[int, ...] = ()
    try:
        if not c.final:
            await asyncio.wait_for(run.ready(), run.options.timeout + 2)
        if c.prompt and run.unfinished and c.id not in INTERRUPTING:
            raise Skip(f"needs a prompt turn that finishes; {run.unfinished} (an agent without a working model?)")
        first = run.transcript.seq + 1
        await asyncio.wait_for(c.run(run), run.options.timeout * 3)
        verdict, detail = SUCCESS, ""
    except Fail as exc:
        verdict, detail, seqs = (FAILURE if c.level == "MUST" and not exc.soft else WARNING), exc.detail, exc.seqs
    except Skip as exc:
        verdict, detail = SKIPPED, exc.detail
    except Note as exc:
        verdict, detail = INFO, exc.detail
    except (asyncio.TimeoutError, TimeoutError):
        verdict, detail = (
            (FAILURE if c.level == "MUST" else WARNING),
            f"the check did not finish within {run.options.timeout * 3:g} s",
        )
        await run.p.stop()  # a fresh agent for the next check
    except Closed as exc:
        verdict, detail = FAILURE, str(exc)
    except Exception as exc:  # a fault of the kit, not of the agent: said, never a traceback
        verdict, detail = INFO, f"the kit could not judge this check: {type(exc).__name__}: {exc}"
    first = locals().get("first", run.transcript.seq)
    lines = run.transcript.lines
    if seqs:
        evidence = [line.show() for line in lines if line.seq in seqs]
    elif verdict in (FAILURE, WARNING) and not c.final:
        evidence = [line.show() for line in run.transcript.between(first)][-8:]
    else:
        evidence = []
    return Result(c, run.version, verdict, detail, evidence, time.monotonic() - started)


def _table(run: AgentRun) -> list[dict[str, Any]]:
    """Each agent-side method: advertised (per the initialize answer) against what the agent did."""
    models = run.p.models if run.programs else None
    rows: list[dict[str, Any]] = []
    if models is None:
        return rows
    for method, spec in sorted(models.METHODS.items()):
        if spec.side != "agent" or spec.kind != "request" or method == "initialize":
            continue
        if spec.stability not in ("stable", "proposal") and method not in run.implemented:
            continue
        rows.append(
            {
                "method": method,
                "advertised": "baseline" if spec.capability is None else "yes" if run.adv.method(method) else "no",
                "gated": spec.capability is not None,
                "observed": run.implemented.get(method, "not tried"),
            }
        )
    return rows


# Checks that need a prompt turn (the "prompt" suite; the others are "setup": no model needed).
PROMPTING = {
    "INI-11", "INI-10", "PRM-03", "PRM-14", "PRM-10", "PRM-12", "PRM-04", "PL-05", "PL-02", "PL-03", "PL-04",
    "PL-07", "PL-10", "PL-12", "PL-14", "CAN-01", "ARC-13", "ARC-15", "SET-09", "SET-10", "SET-12", "SET-13",
    "SET-15", "SET-17", "SET-20", "LST-18",
}  # fmt: skip
# Of those, the ones that interrupt a running turn: they still run when no turn finishes on its own.
INTERRUPTING = {"PRM-10", "PRM-12", "PL-12", "PL-14", "ARC-13", "SET-20", "CAN-01"}

# The check table: each part's checks in the order of its file, the parts in this order.
PARTS = (
    _checks_initialize,
    _checks_prompt_turn,
    _checks_cancellation,
    _checks_messages,
    _checks_archive,
    _checks_session_setup,
    _checks_session_list,
)
_PART = {part.__name__: index for index, part in enumerate(PARTS)}
REGISTRY["agent"][:] = sorted(
    (dataclasses.replace(c, prompt=c.id in PROMPTING) for c in REGISTRY["agent"]), key=lambda c: _PART[c.run.__module__]
)
