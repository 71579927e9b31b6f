"""Agent mode: the kit plays a scriptable client for an agent it spawns, and checks the agent's side.

One agent process serves the checks of a version in turn, each in sessions of
its own; when it dies, the next check starts a fresh one (the check that was
running fails with the exit status). A check that needs a capability the agent
did not advertise is SKIPPED with the reason.

Hand-written: the source is runtime/conformance/_agent.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _oracle
from ._checks import (
    FAILURE,
    INFO,
    REGISTRY,
    SKIPPED,
    SUCCESS,
    WARNING,
    Check,
    Fail,
    Note,
    Result,
    Skip,
    check,
    scrub,
)
from ._driver import NUMBERS, Advertised, Closed, Event, Problem, Program, Refuse, Reply, Transcript
from ._oracle import Found, Oracle

KIT_INFO = {"name": "acp-types-conformance", "version": "1"}
LONG_PROMPT = "Count: " + " ".join(str(i) for i in range(1, 3001))
MESSAGE_UPDATES = {
    "user_message",
    "agent_message",
    "agent_thought",
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
}
V1_STOP = {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}
AUTH_REQUIRED = -32000
SLOW_SESSION = 2.0  # seconds: a session/new slower than this makes the kit ask for SPARES sessions at once
SPARES = 4
PROBE = "_acp_conformance/probe"  # a request sent right behind an interruption (see AgentRun.turn)

SEED_000 = "seed 000 (session archive)"
RESOURCE_NOT_FOUND = -32002
SEED_001 = "seed 001 (v2 session setup)"
SEED_002 = "seed 002 (v1 session list)"
JSONRPC = "JSON-RPC 2.0"


@dataclass
class Options:
    timeout: float = 10.0  # per check
    turn_timeout: float = 5.0  # per prompt turn
    prompt: str = "Hello from the ACP conformance kit."
    long_prompt: str = LONG_PROMPT
    permission: str = "allow"  # allow, reject or cancel
    client_fs: bool = False
    quiet: float = 1.0  # a v2 turn without an idle state ends after this long without a message
    client_input: str = ""  # client mode with {agent}: written to the client's stdin, as a user would type
    transcript_dir: Path | None = None
    auth: str | None = None  # the id of an advertised auth method to log in with after initialize
    on_result: Callable[[Result], None] | None = None  # told each result as its check ends
    info: dict[str, Any] | None = None  # filled with each version's table as it is done
    stopped: Callable[[], bool] | None = None  # the run was interrupted: no further check starts


def update_of(event: Event) -> dict[str, Any]:
    params = event.raw.get("params")
    update = params.get("update") if isinstance(params, dict) else None
    return update if isinstance(update, dict) else {}


def session_of(event: Event) -> Any:
    params = event.raw.get("params")
    return params.get("sessionId") if isinstance(params, dict) else None


def kind(event: Event) -> str:
    return str(update_of(event).get("sessionUpdate", ""))


@dataclass
class Turn:
    sid: str
    mark: int
    reply: Reply | None = None
    updates: list[Event] = field(default_factory=list)
    idle: Event | None = None
    cancel_seq: int | None = None
    streaming: bool = False  # v2: still sending when the turn's time ran out
    probe: asyncio.Future[Reply] | None = None  # the request sent right behind the interruption

    @property
    def probe_seq(self) -> int | None:
        """Where the probe's answer is in the transcript (None: not answered)."""
        probe = self.probe
        if probe is None or not probe.done() or probe.cancelled() or probe.exception() is not None:
            return None
        return probe.result().seq

    @property
    def end_seq(self) -> int:
        """Where the turn ended: the prompt's answer in v1, the idle state in v2 (else the answer)."""
        if self.idle is not None:
            return self.idle.seq
        return self.reply.seq if self.reply is not None else 1 << 62

    def messages(self) -> list[Event]:
        return [e for e in self.updates if kind(e) in MESSAGE_UPDATES]

    @property
    def stop_reason(self) -> Any:
        if self.idle is not None:
            return update_of(self.idle).get("stopReason")
        return (
            self.reply.result.get("stopReason")
            if self.reply is not None and isinstance(self.reply.result, dict)
            else None
        )


class AgentRun:
    """The context every agent check gets: the agent of one version and what it advertised."""

    def __init__(self, command: list[str], version: str, options: Options, workspace: Path) -> None:
        self.command = command
        self.version = version
        self.options = options
        self.workspace = workspace
        self.programs: list[Program] = []
        self.adv = Advertised(version)
        self.init: Reply | None = None
        self.implemented: dict[str, str] = {}  # method -> what the agent did with it
        self.cwd_count = 0
        self.oracle = Oracle(version)
        self.login_error: str | None = None  # why --auth could not log in
        self.unfinished: str | None = None  # why no prompt turn finishes (an agent without a working model)
        self._shared: tuple[Program, str, str, Reply] | None = None
        self._spares: list[asyncio.Task[str]] = []  # fresh sessions made ahead, for a slow agent (see shared)
        self._spares_of: Program | None = None
        name = f"agent-{version}"
        directory = options.transcript_dir
        self.transcript = Transcript(directory / f"{name}.jsonl" if directory else None)

    # -- the program -------------------------------------------------------

    @property
    def p(self) -> Program:
        return self.programs[-1]

    async def spawn(self, protocol: Any = None) -> tuple[Program, Reply]:
        program = Program(self.command, self.transcript, self._answer, version=self.version)
        await program.start()
        number = NUMBERS[self.version] if protocol is None else protocol
        params: dict[str, Any] = {"protocolVersion": number}
        if protocol is not None:  # a version neither side knows: both versions' fields
            params.update(clientCapabilities={}, clientInfo=KIT_INFO, capabilities={}, info=KIT_INFO)
        elif self.version == "v1":
            fs = self.options.client_fs
            params["clientCapabilities"] = {"fs": {"readTextFile": fs, "writeTextFile": fs}, "terminal": False}
            params["clientInfo"] = KIT_INFO
        else:
            params["capabilities"] = {}
            params["info"] = KIT_INFO
        try:
            reply = await program.request("initialize", params, self.options.timeout)
        except BaseException:
            await program.stop()
            raise
        return program, reply

    async def connect(self) -> None:
        program, reply = await self.spawn()
        self.programs.append(program)
        self.init = reply
        if reply.ok and isinstance(reply.result, dict):
            self.adv = Advertised(self.version, reply.result)

    async def ready(self) -> None:
        if not self.programs or not self.p.alive:
            await self.connect()
            if self.options.auth is not None:
                self.login_error = await self.login()

    def auth_methods(self) -> list[dict[str, Any]]:
        methods = self.adv.raw.get("authMethods")
        return [m for m in methods if isinstance(m, dict)] if isinstance(methods, list) else []

    def auth_ids(self) -> list[str]:
        return [_auth_id(m) for m in self.auth_methods()]

    def _auth_choice(self) -> str | None:
        """``--auth``'s method id; ``auto``: an env-var method whose variables are set, else one the agent completes."""
        wanted = self.options.auth
        if wanted != "auto":
            return wanted if wanted in self.auth_ids() else None
        methods = self.auth_methods()
        for m in methods:
            names = [v.get("name") for v in m.get("vars") or [] if isinstance(v, dict)]
            if m.get("type") == "env_var" and names and all(isinstance(n, str) and os.environ.get(n) for n in names):
                return _auth_id(m)
        return next((_auth_id(m) for m in methods if m.get("type") in (None, "agent")), None)

    async def login(self) -> str | None:
        """Log in with ``--auth``'s method (v1 ``authenticate``, v2 ``auth/login``); why not, or None."""
        wanted = self._auth_choice()
        offered = ", ".join(self.auth_ids()) or "none"
        if wanted is None:
            return f"--auth {self.options.auth}: the agent offers no such auth method (it offers: {offered})"
        method = "authenticate" if self.version == "v1" else "auth/login"
        try:
            reply = await self.p.request(method, {"methodId": wanted}, self.options.timeout)
        except (TimeoutError, Closed) as exc:
            return f"--auth {wanted}: {method} failed: {exc}"
        if not reply.ok:
            return f"--auth {wanted}: {method} answered {reply.raw.get('error')!r}"
        return None

    async def close(self) -> None:
        self._drop_spares()
        for program in self.programs:
            await program.stop()
        self.transcript.close()

    async def _answer(self, method: str, params: Any) -> Any:
        """The kit as a scriptable client."""
        if method == "session/request_permission":
            options = params.get("options") or []
            if self.options.permission == "cancel":
                return {"outcome": {"outcome": "cancelled"}}
            want = "allow" if self.options.permission == "allow" else "reject"
            chosen = next(
                (o for o in options if str(o.get("kind", "")).startswith(want)), options[0] if options else {}
            )
            return {"outcome": {"outcome": "selected", "optionId": chosen.get("optionId")}}
        if method.startswith("fs/") and self.version == "v1" and self.options.client_fs:
            return self._fs(method, params)
        raise Refuse(-32601, f"the conformance kit does not handle {method}")

    def _fs(self, method: str, params: dict[str, Any]) -> Any:
        path = Path(str(params.get("path", "")))
        if not path.is_absolute() or self.workspace.resolve() not in path.resolve().parents:
            raise Refuse(-32602, "the kit serves files under its workspace only")
        if method == "fs/read_text_file":
            if not path.exists():
                raise Refuse(-32002, f"no file {path}")
            lines = path.read_text("utf-8").splitlines(keepends=True)
            start = max(int(params.get("line") or 1), 1) - 1
            limit = params.get("limit")
            return {"content": "".join(lines[start : start + limit if limit else None])}
        if method == "fs/write_text_file":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(str(params.get("content", "")), "utf-8")
            return {}
        raise Refuse(-32601, f"the conformance kit does not handle {method}")

    # -- helpers for checks --------------------------------------------------

    def directory(self) -> str:
        self.cwd_count += 1
        path = self.workspace / f"cwd{self.cwd_count}"
        path.mkdir(exist_ok=True)
        return str(path)

    async def call(self, method: str, params: Any, timeout: float | None = None) -> Reply:
        try:
            reply = await self.p.request(method, params, timeout or self.options.timeout)
        except TimeoutError as exc:
            self.implemented.setdefault(method, "no answer")
            raise Fail(str(exc)) from None
        except Closed as exc:
            raise Fail(f"{method}: {exc}") from None
        self._observe(method, reply)
        self._auth_required(method, reply)
        return reply

    def _auth_required(self, method: str, reply: Reply) -> None:
        """-32000 (authentication required): what needs a login is SKIPPED, not failed."""
        if reply.code != AUTH_REQUIRED or method in ("authenticate", "auth/login"):
            return
        offered = ", ".join(self.auth_ids()) or "none advertised"
        if self.options.auth is not None:
            why = self.login_error or f"logged in with --auth {self.options.auth}"
            raise Skip(f"{method} asks for authentication (-32000): {why}")
        raise Skip(f"{method} asks for authentication (-32000): give --auth METHOD_ID (the agent offers: {offered})")

    def _observe(self, method: str, reply: Reply) -> None:
        code = reply.code
        if self.implemented.get(method) != "answered":
            self.implemented[method] = (
                "answered" if reply.ok else f"error {code}" if code is not None else "invalid answer"
            )

    async def _await(self, method: str, future: asyncio.Future[Reply], timeout: float) -> Reply:
        """The answer to a request started with ``start_request``, observed as ``call`` does."""
        try:
            reply = await asyncio.wait_for(asyncio.shield(future), timeout)
        except asyncio.TimeoutError:
            self.implemented.setdefault(method, "no answer")
            raise Fail(f"no answer to {method} within {timeout:g} s") from None
        except Closed as exc:
            raise Fail(f"{method}: {exc}") from None
        self._observe(method, reply)
        return reply

    async def ok(self, method: str, params: Any, timeout: float | None = None) -> Reply:
        """Call ``method``; anything but a valid result fails the check."""
        reply = await self.call(method, params, timeout)
        if reply.code == -32601:
            raise Fail(f"{method} answered -32601 (method not found)", reply.seq)
        if not reply.ok:
            raise Fail(f"{method} did not answer a valid result: {reply.error or reply.raw.get('error')}", reply.seq)
        return reply

    async def new_session(self, cwd: str | None = None) -> str:
        if cwd is None and self._spares and self._spares_of is self.p:
            return await self._spares.pop(0)  # made ahead, never used
        reply = await self.ok("session/new", {"cwd": cwd or self.directory(), "mcpServers": []})
        return str(reply.result["sessionId"])

    def _make_spares(self, count: int) -> None:
        """Ask for ``count`` fresh sessions side by side now, for the checks that need one later."""
        self._drop_spares()
        self._spares_of = self.p
        for _ in range(count):
            task = asyncio.ensure_future(self.new_session(self.directory()))
            task.add_done_callback(lambda t: t.cancelled() or t.exception())  # a failure is seen when used
            self._spares.append(task)

    def _drop_spares(self) -> None:
        for task in self._spares:
            task.cancel()
        self._spares.clear()

    async def new_sessions(self, cwds: list[str]) -> list[str]:
        """A session in each of ``cwds``, asked for all at once (a slow agent makes them side by side)."""
        made = await asyncio.gather(*(self.new_session(cwd) for cwd in cwds), return_exceptions=True)
        for item in made:
            if isinstance(item, BaseException):
                raise item
        return [str(sid) for sid in made]

    async def shared(self) -> tuple[str, str, Reply]:
        """A session of this agent process that checks share (id, cwd, the session/new answer).

        Made once per process, for checks that need a session but no fresh one; a check that
        closes, archives or interrupts a session makes its own.
        """
        if self._shared is None or self._shared[0] is not self.p:
            cwd = self.directory()
            started = time.monotonic()
            reply = await self.ok("session/new", self.new_params(cwd))
            self._shared = (self.p, str(reply.result["sessionId"]), cwd, reply)
            if time.monotonic() - started > SLOW_SESSION:  # a slow agent: make the later checks' sessions now
                self._make_spares(SPARES)
        return self._shared[1], self._shared[2], self._shared[3]

    async def shared_id(self) -> str:
        return (await self.shared())[0]

    def new_params(self, cwd: str | None = None) -> dict[str, Any]:
        return {"cwd": cwd or self.directory(), "mcpServers": []}

    async def turn(
        self,
        sid: str,
        text: str | None = None,
        *,
        interrupt: str | None = None,
        interrupt_params: dict[str, Any] | None = None,
    ) -> tuple[Turn, Reply | None]:
        """One prompt turn; ``interrupt`` is a method sent once the first update arrived."""
        p = self.p
        turn = Turn(sid, p.mark())
        self.mark(sid, "begin_turn")
        blocks = [{"type": "text", "text": text or self.options.prompt}]
        rid, future = p.start_request("session/prompt", {"sessionId": sid, "prompt": blocks})

        def mine() -> list[Event]:
            return [e for e in p.since(turn.mark, "session/update") if session_of(e) == sid]

        answer: Reply | None = None
        if interrupt is not None:
            # once the turn is under way: its first update (v1 also: its answer; v2 answers at once)
            await p.wait_for(
                lambda: bool(mine()) or (future.done() and self.version == "v1"),
                min(self.options.turn_timeout, 2.0) if self.unfinished else self.options.turn_timeout,
            )
            params = interrupt_params or {"sessionId": sid}
            self.mark(sid, "note_cancel")  # archive and close cancel the turn as session/cancel does
            pending: asyncio.Future[Reply] | None = None
            if interrupt == "session/cancel":
                turn.cancel_seq = p.notify("session/cancel", params)
            else:
                turn.cancel_seq = p.mark() + 1
                _rid, pending = p.start_request(interrupt, params)
            # A probe right behind the interruption: answered before the turn ends, it shows that the agent
            # read the interruption while the turn was still running. A turn that ends first may have
            # finished before the interruption reached the agent (they crossed in the pipes): not judged.
            _pid, probe = p.start_request(PROBE, {})
            turn.probe = probe
            if pending is not None:
                answer = await self._await(interrupt, pending, self.options.timeout)
        try:
            turn.reply = await asyncio.wait_for(asyncio.shield(future), self.options.turn_timeout)
        except asyncio.TimeoutError:
            if interrupt is None:  # the turn's own end: a budget, not a rule
                self.unfinished = f"no answer to session/prompt within --turn-timeout {self.options.turn_timeout:g} s"
                raise Skip(
                    f"the prompt turn did not finish: {self.unfinished} (an agent without a working model?)"
                ) from None
            raise Fail(
                f"no answer to session/prompt (id {rid}) within {self.options.turn_timeout:g} s of the {interrupt}"
            ) from None
        except Closed as exc:
            raise Fail(f"session/prompt: {exc}") from None
        self._observe("session/prompt", turn.reply)
        self._auth_required("session/prompt", turn.reply)
        response = getattr(turn.reply.msg, "result", None)
        if self.version == "v1" and response is not None:
            self.oracle.mark(self.key(sid), turn.reply.seq, "end_turn", response)
        if self.version == "v2" and turn.reply.ok:  # a refused prompt starts no turn: nothing to wait for

            def idle() -> Event | None:
                return next(
                    (
                        e
                        for e in mine()
                        if kind(e) == "state_update"
                        and update_of(e).get("state") == "idle"
                        and (turn.cancel_seq is None or e.seq > turn.cancel_seq)
                    ),
                    None,
                )

            # the end of a v2 turn is its idle state; an agent that sends none has ended when it falls quiet
            def said() -> bool:  # the agent's own output in this turn (not the user message it echoes)
                return any(_output(e) and not kind(e).startswith("user") for e in mine())

            deadline = time.monotonic() + self.options.turn_timeout
            turn.streaming = True
            while idle() is None and p.alive and time.monotonic() < deadline:
                seen = p.mark()
                await p.wait_for(lambda: idle() is not None, min(self.options.quiet, deadline - time.monotonic()))
                if p.mark() == seen and (said() or turn.cancel_seq is not None):
                    turn.streaming = False  # it fell quiet: a turn without an idle state has ended
                    break
            turn.idle = idle()
            turn.streaming = turn.streaming and turn.idle is None
            self.mark(sid, "finish", response)
            if turn.idle is None and interrupt is None and not said() and p.alive:
                self.unfinished = (
                    f"no output and no state_update idle within --turn-timeout {self.options.turn_timeout:g} s"
                )
                raise Skip(f"the prompt turn did not finish: {self.unfinished} (an agent without a working model?)")
        await p.quiet(0.15, 1.0)
        turn.updates = mine()
        return turn, answer

    def cancelled_turn(self, turn: Turn) -> None:
        """Raise Note when nothing shows that the turn was still running when the interruption reached the agent.

        The turn counts as interrupted while running when it ends ``cancelled``, or when it still
        sent output after the agent answered the probe sent right behind the interruption: the agent
        had read the interruption by then (it reads its input in order), and the turn was running.
        Any other turn may have finished on its own while the interruption was in the pipes; judging
        its stop reason would be a false alarm.
        """
        if turn.cancel_seq is None:
            return
        ended = turn.reply.seq if self.version == "v1" and turn.reply is not None else None
        if self.version == "v2" and turn.idle is not None:
            ended = turn.idle.seq
        if ended is not None:
            if ended < turn.cancel_seq:
                raise Note("the turn ended before the cancellation was sent; give a longer --long-prompt")
            probe = turn.probe_seq
            running = probe is not None and any(probe < e.seq < ended and _output(e) for e in turn.updates)
            if not running and turn.stop_reason != "cancelled":
                raise Note(
                    "nothing shows the turn still running once the agent had read the interruption (no output"
                    " after the answer to the request sent right behind it); give a longer --long-prompt"
                )
            return
        if self.version == "v2" and turn.idle is None:
            ends = [e for e in turn.updates if kind(e) == "state_update" and update_of(e).get("state") == "idle"]
            if ends and turn.cancel_seq is not None and all(e.seq < turn.cancel_seq for e in ends):
                raise Note("the turn ended before the cancellation was sent; give a longer --long-prompt")
            if turn.streaming:
                raise Fail(f"the turn was still streaming {self.options.turn_timeout:g} s after it was interrupted")
            raise Skip("no state_update idle ends the agent's turns (see PL-07)")

    def key(self, sid: str) -> tuple[int, str]:
        return (len(self.programs) - 1, sid)

    def mark(self, sid: str, what: str, payload: Any = None) -> None:
        """A client-side point of the session for the oracle, after every line so far."""
        self.oracle.mark(self.key(sid), self.p.mark() + 0.5, what, payload)

    def state_problems(self, sid: str, rules: set[str] | None = None) -> list[Found]:
        """The session state's strict problems for this session's stream so far (of ``rules``, when given)."""
        updates = [e for e in self.p.events if e.method == "session/update" and session_of(e) == sid]
        found = self.oracle.judge(self.key(sid), updates)
        if found is None:
            raise Skip(_oracle.MISSING.format(version=self.version))
        return [f for f in found if rules is None or f.rule in rules]

    def state_rules(self, sid: str, *rules: str) -> None:
        """Fail with the session state's problems of ``rules`` for this session (the oracle's verdict)."""
        found = self.state_problems(sid, set(rules))
        if found:
            raise Fail(
                "; ".join(f"{f.rule}: {f.message}" for f in found[:3]), *(f.seq for f in found[:5] if f.seq is not None)
            )

    def needs(self, method: str) -> None:
        if not self.adv.method(method):
            raise Skip(f"the agent does not advertise {method}")

    def needs_list(self) -> None:
        self.needs("session/list")
        if self.version == "v2" and not self.adv.raw.get("capabilities", {}).get("session"):
            raise Skip("the agent does not advertise capabilities.session")

    def failed(self, condition: bool, detail: str, *seqs: int) -> None:
        if condition:
            raise Fail(detail, *seqs)

    async def list_all(
        self, params: dict[str, Any] | None = None, pages: int = 50
    ) -> tuple[list[dict[str, Any]], list[Reply]]:
        """Walk ``session/list`` through its cursors (at most ``pages`` pages)."""
        sessions: list[dict[str, Any]] = []
        replies: list[Reply] = []
        query = dict(params or {})
        for _ in range(pages):
            reply = await self.ok("session/list", query)
            replies.append(reply)
            sessions += [s for s in reply.result.get("sessions", []) if isinstance(s, dict)]
            cursor = reply.result.get("nextCursor")
            if cursor is None:
                return sessions, replies
            query["cursor"] = cursor
        raise Fail(f"session/list still gave a nextCursor after {pages} pages", replies[-1].seq)


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


def _auth_id(method: dict[str, Any]) -> str:
    return str(method.get("methodId") or method.get("id"))


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _raw_keys(value: Any) -> set[str]:
    return set(value) - {"_meta"} if isinstance(value, dict) else set()


# == core: initialize ======================================================

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


# == core: the prompt turn =================================================

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


# == core: cancellation, errors, framing, extensions ========================

CAN = "cancellation page"
EXT = "extensibility page"


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


# == seeds: archive (000) ===================================================


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


def _ids(sessions: list[dict[str, Any]]) -> set[str]:
    return {str(s.get("sessionId")) for s in sessions}


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


async def _restart(run: AgentRun) -> None:
    """End the agent's process (stdin closed, then its group) and start the same command again."""
    run._drop_spares()
    await run.p.stop()
    await run.connect()
    if run.options.auth is not None:
        run.login_error = await run.login()


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


# == seeds: v2 session setup (001) and v1 resume/close ======================


def _quiet_after(turn: Turn, answer: Reply | None, method: str) -> None:
    """The interrupted turn's output all came before the answer: the work was stopped, not left running."""
    if answer is None:
        return
    late = [e.seq for e in turn.updates if e.seq > answer.seq and _output(e)]
    if late:
        raise Fail(f"{len(late)} updates of the turn's output after the {method} answer", answer.seq, *late[:3])


def _output(event: Event) -> bool:
    """An update that is the turn's output (a message, a thought, a tool call, a plan)."""
    return kind(event) in MESSAGE_UPDATES or kind(event).startswith("tool_call") or kind(event) == "plan"


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


# == seeds: session list (002) ==============================================


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


# Checks that need a prompt turn (the "prompt" suite; the others are "setup": no model needed).
PROMPTING = {
    "INI-11", "INI-10", "PRM-03", "PRM-14", "PRM-10", "PRM-12", "PRM-04", "PL-05", "PL-02", "PL-03", "PL-04",
    "PL-07", "PL-10", "PL-12", "PL-14", "CAN-01", "ARC-13", "ARC-15", "SET-09", "SET-10", "SET-12", "SET-13",
    "SET-15", "SET-17", "SET-20", "LST-18",
}  # fmt: skip
# Of those, the ones that interrupt a running turn: they still run when no turn finishes on its own.
INTERRUPTING = {"PRM-10", "PRM-12", "PL-12", "PL-14", "ARC-13", "SET-20", "CAN-01"}
REGISTRY["agent"][:] = [dataclasses.replace(c, prompt=c.id in PROMPTING) for c in REGISTRY["agent"]]
