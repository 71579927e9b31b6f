"""Client mode: the kit plays a scriptable agent for a client it spawns, and checks the client's side.

The client runs its own script (initialize, sessions, prompts); the kit agent
advertises as little as a version allows, so every gated method, field and
content type the client uses is one it was not offered. A client that spawns
its agent gets the kit through ``{agent}`` in its command (replaced by the
relay, ``python .../acp_types/conformance/_relay.py SOCKET``); without it the kit
talks to the client over the client's own stdio. Each prompt turn streams a
reply and asks permission twice; a client that cancels the turn then must
answer what is pending ``cancelled``. The run ends when the client exits, when
it has been quiet for a while after a turn, or at the deadline; then every
check judges the whole exchange.

Hand-written: the source is runtime/conformance/_client.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ._agent_run import KIT_INFO, Options
from ._checks import FAILURE, INFO, SKIPPED, SUCCESS, WARNING, Check, Fail, Note, Result, Skip, check, scrub
from ._driver import Advertised, Closed, Event, Program, Refuse, Transcript

AGENT_PLACEHOLDER = "{agent}"
OPTIONS = [
    {"optionId": "kit-allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "kit-reject", "name": "Reject", "kind": "reject_once"},
]


class ClientRun:
    """The kit agent of one version, and the context of every client check."""

    def __init__(self, command: list[str], version: str, options: Options, workspace: Path) -> None:
        self.version = version
        self.options = options
        self.sessions: set[str] = set()
        self.permissions: list[tuple[int, str, Any]] = []  # (request seq, session, the client's reply or error)
        self.prompted = 0
        self.ids = itertools.count(1)
        self.init_answer = self._initialize_result()
        self.adv = Advertised(version, self.init_answer)
        relay = None
        if AGENT_PLACEHOLDER in command:
            relay = str(workspace / "kit.sock")
            at = command.index(AGENT_PLACEHOLDER)
            # by path: the relay needs the standard library only, not acp_types on the client's path
            command = [
                *command[:at],
                sys.executable,
                str(Path(__file__).with_name("_relay.py")),
                relay,
                *command[at + 1 :],
            ]
        directory = options.transcript_dir
        self.transcript = Transcript(directory / f"client-{version}.jsonl" if directory else None)
        self.p = Program(
            command,
            self.transcript,
            self._answer,
            version=version,
            relay=relay,
            stdin_text=options.client_input.encode(),
        )
        self._tasks: list[asyncio.Task[Any]] = []

    def _initialize_result(self) -> dict[str, Any]:
        if self.version == "v1":
            return {
                "protocolVersion": 1,
                "agentInfo": KIT_INFO,
                "authMethods": [],
                "agentCapabilities": {
                    "loadSession": False,
                    "promptCapabilities": {},
                    "mcpCapabilities": {},
                    "sessionCapabilities": {},
                },
            }
        return {"protocolVersion": 2, "info": KIT_INFO, "authMethods": [], "capabilities": {"session": {}}}

    async def _answer(self, method: str, params: Any) -> Any:
        if method == "initialize":
            return self.init_answer
        if not self.adv.method(method) or method in ("authenticate", "auth/login", "auth/logout", "logout"):
            raise Refuse(-32601, f"the conformance kit's agent does not offer {method}")
        if method == "session/new":
            sid = f"kit-session-{next(self.ids)}"
            self.sessions.add(sid)
            return {"sessionId": sid}
        if method == "session/prompt":
            return await self._prompt(str(params.get("sessionId")))
        if method == "session/list":
            return {"sessions": []}
        if method in ("session/resume", "session/close"):
            if params.get("sessionId") not in self.sessions:
                raise Refuse(-32002, "no such session")
            return {}
        raise Refuse(-32601, f"the conformance kit's agent does not handle {method}")

    async def _update(self, sid: str, update: dict[str, Any]) -> None:
        self.p.notify("session/update", {"sessionId": sid, "update": update})
        await asyncio.sleep(0)

    async def _prompt(self, sid: str) -> Any:
        if sid not in self.sessions:
            raise Refuse(-32002, f"no session {sid!r}")
        self.prompted += 1
        start = self.p.mark()
        n = next(self.ids)
        if self.version == "v2":  # accepted at once, naming the user message the turn inserts; it ends idle
            self._tasks.append(asyncio.create_task(self._turn(sid, start, n)))
            return {"messageId": f"kit-user-{n}"}
        return {"stopReason": await self._turn(sid, start, n)}

    def _cancelled(self, sid: str, since: int) -> bool:
        return any(self.params(e).get("sessionId") == sid for e in self.p.since(since, "session/cancel"))

    async def _turn(self, sid: str, start: int, n: int) -> str:
        if self.version == "v2":
            await self._update(sid, {"sessionUpdate": "user_message", "messageId": f"kit-user-{n}", "content": []})
            await self._update(sid, {"sessionUpdate": "state_update", "state": "running"})
        await self._update(
            sid,
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": f"kit-agent-{n}",
                "content": {"type": "text", "text": "Hello from the conformance kit."},
            },
        )
        for i in range(2):
            if self._cancelled(sid, start):
                break
            if self.version == "v1":
                params: dict[str, Any] = {
                    "sessionId": sid,
                    "options": OPTIONS,
                    "toolCall": {"toolCallId": f"kit-tool-{n}-{i}", "title": "A tool the kit pretends to run"},
                }
            else:
                params = {"sessionId": sid, "options": OPTIONS, "title": "A tool the kit pretends to run"}
            rid, future = self.p.start_request("session/request_permission", params)
            seq = self.p.mark()
            try:
                reply = await asyncio.wait_for(asyncio.shield(future), self.options.turn_timeout)
                self.permissions.append((seq, sid, reply))
            except asyncio.TimeoutError:
                self.permissions.append((seq, sid, f"no answer within {self.options.turn_timeout:g} s"))
                break
            except Closed as exc:
                self.permissions.append((seq, sid, f"closed: {exc}"))
                break
        stop = "cancelled" if self._cancelled(sid, start) else "end_turn"
        if self.version == "v2":
            await self._update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": stop})
        return stop

    async def run(self) -> None:
        await self.p.start()
        deadline = time.monotonic() + self.options.timeout * 3
        if not await self.p.connected(self.options.timeout):
            return
        turns = 0
        while self.p.alive and time.monotonic() < deadline:
            seen = self.p.mark()
            await self.p.wait_for(functools.partial(self._moved, seen), min(1.0, max(deadline - time.monotonic(), 0)))
            if self.prompted and self.p.mark() == seen:
                turns += 1
                if turns >= 2:  # quiet for two seconds after a turn: the client's script is done
                    break
            else:
                turns = 0

    def _moved(self, seen: int) -> bool:
        return self.p.mark() != seen

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await self.p.stop()
        self.transcript.close()

    # -- helpers for checks --------------------------------------------------

    def calls(self, method: str | None = None) -> list[Event]:
        return [e for e in self.p.events if method is None or e.method == method]

    def failed(self, condition: bool, detail: str, *seqs: int) -> None:
        if condition:
            raise Fail(detail, *seqs)

    def params(self, event: Event) -> dict[str, Any]:
        params = event.raw.get("params")
        return params if isinstance(params, dict) else {}


async def run_client(
    command: list[str], versions: list[str], checks: list[Check], options: Options
) -> tuple[list[Result], dict[str, Any]]:
    results: list[Result] = []
    info: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="acp-conformance-") as tmp:
        for version in versions:
            workspace = Path(tmp) / version
            workspace.mkdir()
            run = ClientRun(command, version, options, workspace)
            started = time.monotonic()
            try:
                await run.run()
                for c in (c for c in checks if version in c.versions):
                    results.append(await _judge(run, c, started))
                methods = sorted({e.method for e in run.calls()})
                info[version] = {
                    "advertised": run.init_answer,
                    "table": [
                        {
                            "method": m,
                            "advertised": "yes" if run.adv.method(m) else "no",
                            "observed": f"{len(run.calls(m))} calls",
                        }
                        for m in methods
                    ],
                }
                if not run.calls():
                    info[version]["error"] = f"the client sent nothing ({run.p.exit or 'no connection'})"
            finally:
                await run.close()
    return scrub(results, tmp), info


async def _judge(run: ClientRun, c: Check, started: float) -> Result:
    """Judge the finished exchange by check ``c``."""
    seqs: tuple[int, ...] = ()
    try:
        if not any(not line.out for line in run.transcript.lines):
            raise Skip(f"the client sent nothing ({run.p.exit or 'it never connected to the kit'})")
        await c.run(run)
        verdict, detail = SUCCESS, ""
    except Fail as exc:
        verdict, detail, seqs = (FAILURE if c.level == "MUST" and not exc.soft else WARNING), exc.detail, exc.seqs
    except Skip as exc:
        verdict, detail = SKIPPED, exc.detail
    except Note as exc:
        verdict, detail = INFO, exc.detail
    except Exception as exc:  # a fault of the kit, not of the program: said, never a traceback
        verdict, detail = INFO, f"the kit could not judge this check: {type(exc).__name__}: {exc}"
    evidence = [line.show() for line in run.transcript.lines if line.seq in seqs]
    return Result(c, run.version, verdict, detail, evidence, time.monotonic() - started)


# == the client checks =======================================================

INIT = "initialization page"


@check(
    "INI-01",
    "initialize comes first, and sessions are set up before prompting",
    binds="client",
    mode="client",
    source=f"{INIT}, intro; v1 prompt-turn page, intro",
    rows=("INI-01", "SET-01", "PRM-01"),
)
async def _c_ini01(run: ClientRun) -> None:
    calls = [e for e in run.calls() if e.id is not None]
    if not calls:
        raise Skip("the client sent no request")
    run.failed(calls[0].method != "initialize", f"the first request is {calls[0].method}", calls[0].seq)
    for e in run.calls("session/prompt"):
        sid = run.params(e).get("sessionId")
        run.failed(sid not in run.sessions, f"a prompt for {sid!r}, a session the agent never created", e.seq)


@check(
    "INI-02",
    "initialize gives clientInfo",
    level="SHOULD",
    binds="client",
    mode="client",
    versions=("v1",),
    source=f"{INIT}, Implementation Information",
)
async def _c_ini02(run: ClientRun) -> None:
    for e in run.calls("initialize"):
        asked = run.params(e).get("protocolVersion")
        if asked != 1:
            raise Skip(f"the client asked for protocol version {asked!r} (v2 requires info instead)")
        run.failed(not isinstance(run.params(e).get("clientInfo"), dict), "no clientInfo", e.seq)


@check(
    "TRN-03",
    "everything the client writes to the agent is a valid ACP message, one per line",
    binds="client",
    mode="client",
    source="transports page, stdio",
    rows=("TRN-03", "TRN-02"),
)
async def _c_trn03(run: ClientRun) -> None:
    bad = [pr for pr in run.p.problems if pr.kind in ("framing", "schema")]
    run.failed(
        bool(bad),
        f"{len(bad)} lines are not valid messages: {bad[0].detail if bad else ''}",
        *(pr.seq for pr in bad[:5]),
    )


@check(
    "INI-08",
    "no method the agent did not advertise (archive, list, load, resume, close, delete, auth)",
    binds="client",
    mode="client",
    source=f"{INIT}, Capabilities; seed 000 Capabilities; seed 002 checking support",
    rows=("INI-08", "ARC-03", "LST-01", "S1-01", "S1-05", "S1-07", "DEL-01", "INI-14"),
)
async def _c_ini08(run: ClientRun) -> None:
    bad = [
        e
        for e in run.calls()
        if not e.method.startswith("_") and (not run.adv.method(e.method) or e.method in ("auth/login", "auth/logout"))
    ]
    bad += [e for e in run.calls("session/list") if run.params(e).get("archived") is not None]
    run.failed(
        bad != [],
        f"{', '.join(sorted({e.method for e in bad}))} though the agent did not advertise it",
        *(e.seq for e in bad[:5]),
    )


@check(
    "SET-24",
    "cwd (and every additionalDirectories entry) is an absolute path",
    binds="client",
    mode="client",
    source="seed 001, Working Directory; seed 002, parameter cwd",
    rows=("SET-24", "SET-21", "LST-03", "TRN-05"),
)
async def _c_set24(run: ClientRun) -> None:
    for e in run.calls():
        p = run.params(e)
        paths = ([p["cwd"]] if "cwd" in p and p["cwd"] is not None else []) + list(p.get("additionalDirectories") or [])
        bad = [path for path in paths if not (isinstance(path, str) and os.path.isabs(path))]
        run.failed(bool(bad), f"{e.method} with a relative path {bad[0]!r}" if bad else "", e.seq)


@check(
    "SET-22",
    "additionalDirectories only when the agent advertises it",
    binds="client",
    mode="client",
    source="seed 001, Additional Workspace Roots; seed 002",
    rows=("SET-22", "S1-09"),
)
async def _c_set22(run: ClientRun) -> None:
    bad = [e for e in run.calls() if run.params(e).get("additionalDirectories")]
    run.failed(bool(bad), "additionalDirectories sent though not advertised", *(e.seq for e in bad[:3]))


@check(
    "PRM-02",
    "prompt content only of the types the agent advertised (text and resource_link here)",
    binds="client",
    mode="client",
    source="v1 prompt-turn page, 1. User Message; v2 prompt-lifecycle page",
    rows=("PRM-02", "PL-01", "CNT-02"),
)
async def _c_prm02(run: ClientRun) -> None:
    for e in run.calls("session/prompt"):
        kinds = {b.get("type") for b in run.params(e).get("prompt") or [] if isinstance(b, dict)}
        run.failed(
            not kinds <= {"text", "resource_link"},
            f"prompt blocks of type {sorted(map(str, kinds - {'text', 'resource_link'}))}",
            e.seq,
        )


@check(
    "SET-29",
    "MCP servers only over transports the agent advertised",
    binds="client",
    mode="client",
    source="seed 001, Checking Transport Support; v1 session-setup page",
    rows=("SET-29", "S1-12"),
)
async def _c_set29(run: ClientRun) -> None:
    allowed = {"stdio"} if run.version == "v1" else set()
    for e in run.calls():
        servers = run.params(e).get("mcpServers") or []
        kinds = {str(s.get("type", "stdio")) for s in servers if isinstance(s, dict)}
        run.failed(
            not kinds <= allowed, f"{e.method} with MCP servers over {sorted(kinds - allowed)}, not advertised", e.seq
        )


@check(
    "PERM-05",
    "a permission answer selects one of the options offered",
    binds="client",
    mode="client",
    source="tool-calls page, Permission Options",
)
async def _c_perm05(run: ClientRun) -> None:
    offered = {o["optionId"] for o in OPTIONS}
    answered = [(seq, r) for seq, _sid, r in run.permissions if not isinstance(r, str) and r.ok]
    if not answered:
        raise Skip("the client answered no permission request with a result")
    for _seq, reply in answered:
        outcome = reply.result.get("outcome") or {}
        run.failed(
            outcome.get("outcome") == "selected" and outcome.get("optionId") not in offered,
            f"selected {outcome.get('optionId')!r}, not one of {sorted(offered)}",
            reply.seq,
        )


@check(
    "PRM-08",
    "after cancelling a turn, pending permission requests are answered cancelled",
    binds="client",
    mode="client",
    source="v1 prompt-turn page, Cancellation; v2 prompt-lifecycle page, Cancellation",
    rows=("PRM-08", "PL-11", "PERM-02"),
)
async def _c_prm08(run: ClientRun) -> None:
    cancels = {run.params(e).get("sessionId"): e.seq for e in run.calls("session/cancel")}
    judged = [
        (seq, sid, r)
        for seq, sid, r in run.permissions
        if sid in cancels and not isinstance(r, str) and seq < cancels[sid] < r.seq
    ]
    if not judged:
        raise Skip("the client cancelled no turn while a permission request was pending")
    for _seq, _sid, reply in judged:
        outcome = (reply.result or {}).get("outcome") if reply.ok else None
        run.failed(
            not isinstance(outcome, dict) or outcome.get("outcome") != "cancelled",
            f"a permission request pending at the cancel was answered {reply.raw.get('result', reply.raw.get('error'))}",
            reply.seq,
        )


@check(
    "CAN-03",
    "every request of the agent is answered exactly once",
    binds="client",
    mode="client",
    source="cancellation page, JSON-RPC 2.0",
)
async def _c_can03(run: ClientRun) -> None:
    bad = [pr for pr in run.p.problems if pr.kind == "answers"]
    run.failed(bool(bad), "; ".join(pr.detail for pr in bad[:3]), *(pr.seq for pr in bad[:5]))
    # unanswered whether the kit gave up waiting or the client closed the connection first (which of
    # the two comes first depends on the machine's speed)
    lost = [seq for seq, _sid, r in run.permissions if isinstance(r, str) and r.startswith(("no answer", "closed"))]
    run.failed(bool(lost), f"{len(lost)} permission requests never answered", *lost[:3])
