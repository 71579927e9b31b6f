"""Agent checks, core suite: what every message obeys.

Custom (``_``-prefixed) requests and notifications, JSON-RPC error answers to
bad lines, the stdio framing, each message against its schema, unknown
fields, the client methods the agent may call, and the session state's rules
(STATE-01). Most are ``final``: judged over the whole exchange after the other
checks. Registered with ``@check``; ``_agent.py`` runs them.

Hand-written: the source is runtime/conformance/_checks_messages.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

from typing import Any

from . import _oracle
from ._agent_run import JSONRPC, PROBE, AgentRun, _json, session_of
from ._checks import Fail, Skip, check
from ._driver import Problem
from ._oracle import Found

EXT = "extensibility page"


@check("EXT-03", "a custom (_-prefixed) request is answered, with its id", source=f"{EXT}, Custom Requests")
async def _ext03(run: AgentRun) -> None:
    await run.call("_acp_conformance/ping", {"n": 1})


@check(
    "EXT-04",
    "an unknown method is answered with -32601",
    level="SHOULD",
    source=f"{EXT}, Custom Requests; {JSONRPC} §5.1",
)
async def _ext04(run: AgentRun) -> None:
    reply = await run.call("acp_conformance/not_a_method", {})
    run.implemented.pop("acp_conformance/not_a_method", None)
    run.failed(reply.code != -32601, f"answered {reply.raw.get('error', reply.raw.get('result'))!r}", reply.seq)


@check(
    "EXT-05",
    "an unknown notification is ignored (no answer; the agent goes on)",
    level="SHOULD",
    source=f"{EXT}, Custom Notifications",
)
async def _ext05(run: AgentRun) -> None:
    mark = run.p.notify("_acp_conformance/note", {"n": 1})
    await run.p.quiet(0.2, 0.5)  # notifications may be handled after a later request is answered
    reply = await run.call(PROBE, {})
    run.failed(run.p.exit is not None, f"after a custom notification: {run.p.exit}")
    await run.p.quiet(0.1, 0.5)
    # any response that is not the probe's: with the id null, another id, or no id at all
    stray = [
        line.seq
        for line in run.transcript.between(mark + 1)
        if not line.out
        and line.seq != reply.seq
        and isinstance(m := _json(line.text), dict)
        and "method" not in m
        and ("result" in m or "error" in m)
    ]
    run.failed(bool(stray), "the custom notification was answered (a notification gets no answer)", *stray[:3])


@check(
    "RPC-01",
    "a line that is not JSON is answered with -32700 and id null",
    source=f"{JSONRPC} §5 (Response object), §5.1",
)
async def _rpc01(run: AgentRun) -> None:
    p = run.p
    mark = p.send_raw(b'{"jsonrpc": "2.0", "id": 9, "method": "session/new"')

    def found() -> list[Problem]:
        return [pr for pr in p.problems if pr.seq > mark and pr.kind == "answers" and "None" in pr.detail]

    await p.wait_for(lambda: bool(found()), 2.0)
    await p.quiet(0.1, 0.5)  # an answer with some other id is not found() above
    answers = [(line, _json(line.text)) for line in run.transcript.between(mark + 1) if not line.out]
    errors = [(line, m) for line, m in answers if isinstance(m, dict) and "method" not in m and "error" in m]
    parse = [(line, m) for line, m in errors if isinstance(m["error"], dict) and m["error"].get("code") == -32700]
    if not parse:
        shown = [line.seq for line, _m in errors[:2]]
        raise Fail("no -32700 answer within 2 s" + (" (other errors came)" if shown else ""), mark, *shown)
    line, message = parse[0]
    run.failed(
        "id" not in message or message["id"] is not None,
        f"the -32700 answer has id {message.get('id', '(none)')!r}, not null (the request's id cannot be read)",
        mark,
        line.seq,
    )
    for pr in found():  # the answer to id null is expected here, not a stray answer
        p.problems.remove(pr)


@check("RPC-02", "params that do not fit the method are refused with an error (-32602)", source=f"{JSONRPC} §5.1")
async def _rpc02(run: AgentRun) -> None:
    reply = await run.call("session/new", {"cwd": 42, "mcpServers": []})
    run.failed("result" in reply.raw, "session/new with cwd 42 was answered with a result", reply.seq)
    run.failed(
        reply.code != -32602,
        f"session/new with cwd 42 was answered {reply.code} (invalid params is -32602)",
        reply.seq,
    )


@check(
    "TRN-01",
    "everything the agent writes on stdout is a JSON-RPC message, one per line",
    source="transports page, stdio",
    rows=("TRN-01", "TRN-02"),
    final=True,
)
async def _trn01(run: AgentRun) -> None:
    bad = [pr for program in run.programs for pr in program.problems if pr.kind == "framing"]
    run.failed(
        bool(bad),
        f"{len(bad)} lines are not JSON-RPC messages: {bad[0].detail if bad else ''}",
        *(pr.seq for pr in bad[:5]),
    )


@check(
    "SCH-01",
    "every request and notification the agent sends validates against its method's schema",
    source="the version's schema (transports page: only valid ACP messages)",
    rows=("TRN-01", "PRM-15", "PERM-01"),
    final=True,
)
async def _sch01(run: AgentRun) -> None:
    bad = [pr for program in run.programs for pr in program.problems if pr.kind == "schema"]
    run.failed(
        bool(bad), f"{len(bad)} messages do not validate: {bad[0].detail if bad else ''}", *(pr.seq for pr in bad[:5])
    )


def _extra_keys(value: Any, path: str = "") -> list[str]:
    """Unknown keys kept by the models (``model_extra``), outside ``_meta``, at any depth."""
    found: list[str] = []
    extra = getattr(value, "model_extra", None)
    if isinstance(extra, dict):
        found += [f"{path}/{key}" for key in extra if key != "_meta"]
    fields = getattr(type(value), "model_fields", None)
    if fields is not None:
        for name, info in fields.items():
            if name == "meta" or info.alias == "_meta":
                continue
            found += _extra_keys(getattr(value, name, None), f"{path}/{info.alias or name}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found += _extra_keys(item, f"{path}/{i}")
    root = getattr(value, "root", None)
    if root is not None and fields is not None and "root" in fields:
        pass
    return found


@check(
    "EXT-01",
    "no custom fields at the root of spec types (custom data goes in _meta)",
    level="SHOULD",
    source=f"{EXT}, The _meta Field",
    final=True,
)
async def _ext01(run: AgentRun) -> None:
    found: list[tuple[int, str]] = []
    for program in run.programs:
        for event in program.events:
            if event.msg is not None and not event.method.startswith("_"):
                found += [(event.seq, key) for key in _extra_keys(getattr(event.msg, "params", None), "params")]
    if run.init is not None and run.init.msg is not None:
        found += [(run.init.seq, key) for key in _extra_keys(getattr(run.init.msg, "result", None), "result")]
    run.failed(bool(found), f"unknown keys: {', '.join(key for _, key in found[:5])}", *(seq for seq, _ in found[:5]))


async def _client_methods(run: AgentRun, prefix: str, advertised: bool) -> None:
    if advertised:
        raise Skip(f"the kit advertised {prefix}*")
    calls = [e for program in run.programs for e in program.events if e.method.startswith(prefix)]
    run.failed(
        bool(calls),
        f"{len(calls)} {prefix}* requests though the kit did not advertise them",
        *(e.seq for e in calls[:3]),
    )


@check(
    "FS-01",
    "no fs/* request unless the client advertised it",
    versions=("v1",),
    source="v1 file-system page, Checking Support",
    rows=("FS-01", "INI-08"),
    final=True,
)
async def _fs01(run: AgentRun) -> None:
    await _client_methods(run, "fs/", run.options.client_fs)


@check(
    "TERM-01",
    "no terminal/* request unless the client advertised it",
    versions=("v1",),
    source="v1 terminals page, Checking Support",
    rows=("TERM-01", "INI-08"),
    final=True,
)
async def _term01(run: AgentRun) -> None:
    await _client_methods(run, "terminal/", False)


# the session state's rules that a check of their own reports; STATE-01 reports the others
OWN_CHECKS = {
    "message.reused": "PL-05",
    "turn.user-message": "PL-03",
    "turn.running": "PL-04",
    "turn.idle": "PL-07",
    "turn.stop-reason": "PL-07",
    "value.reserved": "PL-10",
    "update.reserved": "PL-10",
    "cancel.stop-reason": "PL-12",
    "message.kind": "SET-12",
    "replay.chunk-before-reset": "SET-15",
}


@check(
    "STATE-01",
    "the session/update stream obeys every other rule of the session state (strict mode)",
    source="acp_types.session_state.RULES (each rule names its seed or page)",
    rows=("LST-17", "TOOL-02", "TOOL-03", "TOOL-09", "PL-06"),
    final=True,
)
async def _state01(run: AgentRun) -> None:
    if not _oracle.available(run.version):
        raise Skip(_oracle.MISSING.format(version=run.version))
    found: list[Found] = []
    for index, program in enumerate(run.programs):
        updates = [e for e in program.events if e.method == "session/update"]
        for sid in dict.fromkeys(session_of(e) for e in updates):
            judged = run.oracle.judge((index, sid), [e for e in updates if session_of(e) == sid]) or []
            found += [f for f in judged if f.rule not in OWN_CHECKS]
    hard = [f for f in found if f.level != "SHOULD"]
    shown = hard or found
    if shown:
        raise Fail(
            "; ".join(f"{f.rule}: {f.message}" for f in shown[:3]),
            *(f.seq for f in shown[:5] if f.seq is not None),
            soft=not hard,
        )
