"""The kit as a client of the agent under test: :class:`AgentRun`, :class:`Turn`, :class:`Options`.

Every agent check is a coroutine of an :class:`AgentRun`: it holds the agent's
process of one version (a fresh one after a crash or a restart), what the
initialize answer advertised, and the calls the checks make through it
(``call``/``ok`` with the auth and ``implemented`` bookkeeping, sessions made
ahead for a slow agent, a prompt ``turn`` that ends on the answer or the idle
state, a cancelled turn, ``session/list`` by pages, the session state's rules).
Below the class are the small helpers that checks of more than one suite share.
The checks themselves are in ``_checks_*.py``, one file per part of the spec,
and ``_agent.py`` runs them.

Hand-written: the source is runtime/conformance/_agent_run.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _oracle
from ._checks import Fail, Note, Result, Skip
from ._driver import NUMBERS, Advertised, Closed, Event, Program, Refuse, Reply, Transcript
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


def _auth_id(method: dict[str, Any]) -> str:
    return str(method.get("methodId") or method.get("id"))


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _raw_keys(value: Any) -> set[str]:
    return set(value) - {"_meta"} if isinstance(value, dict) else set()


def _ids(sessions: list[dict[str, Any]]) -> set[str]:
    return {str(s.get("sessionId")) for s in sessions}


async def _restart(run: AgentRun) -> None:
    """End the agent's process (stdin closed, then its group) and start the same command again."""
    run._drop_spares()
    await run.p.stop()
    await run.connect()
    if run.options.auth is not None:
        run.login_error = await run.login()


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
