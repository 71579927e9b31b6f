"""The kit's side of the wire: a program under test in its own process group, and its lines.

Every line the program writes is recorded in the transcript and judged by the
generated models of the settled version (``parse_message``): a line that is
not a JSON-RPC message is a framing problem, a response is matched to the
kit's request and typed by that request's method, a request or notification
from the program is parsed against its method. Everything is bounded: a line
longer than ``max_line`` bytes is skipped unread, the transcript keeps the last
lines in memory, stderr keeps its tail, and every wait has a deadline.

The process and the framing are the runtime's: the program is started and
stopped with ``_connection.process`` (``start_process_group``,
``stop_process_group``: stdin closed, a grace, TERM to the group, KILL), and
its lines are read and written with ``_connection.stdio.StdioTransport``, the
connection's own newline framing, told to hand over an oversized line as soon
as it passes the limit (``oversized_at_limit``), so a line that never ends is
in the transcript and the run goes on with the next line. Kept of the kit's
own: the stderr tail, the transcript, and judging each line. One edge moved
with the framing: an unfinished last line of only spaces, which the kit used
to drop, is now judged as the connection would judge it (an empty line).

Hand-written: the source is runtime/conformance/_driver.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from acp_types import v1, v2

from .._connection.process import start_process_group, stop_process_group
from .._connection.stdio import READ_CHUNK, StdioTransport
from .._connection.transport import Oversized

MODULES: dict[str, ModuleType] = {"v1": v1, "v2": v2}
NUMBERS = {"v1": 1, "v2": 2}
MAX_LINE = 1 << 20
KEEP_LINES = 4000
KEEP_LINE_BYTES = 16 << 20  # the transcript's lines in memory (the file, when asked for, has them all)
KEEP_EVENT_BYTES = 32 << 20  # the running program's judged messages, by the size of their lines
KEEP_STOPPED_BYTES = 2 << 20  # what is kept of a program once it is stopped
KEEP_PROBLEMS = 1000  # per program: a flood of bad lines is shown by its first and last ones
EVIDENCE_CHARS = 400


class StartError(Exception):
    """The program could not be started (exit status 2 of the command line)."""


class Closed(Exception):
    """The program's output ended (it exited, crashed or closed stdout)."""


@dataclass
class Line:
    """One line of the transcript: ``seq`` orders both directions."""

    seq: int
    at: float
    out: bool  # written by the kit
    text: str

    def show(self) -> str:
        arrow = "kit ->" if self.out else "<- program"
        text = self.text if len(self.text) <= EVIDENCE_CHARS else self.text[:EVIDENCE_CHARS] + "..."
        return f"#{self.seq} {arrow} {text}"


@dataclass
class Event:
    """A judged message from the program (a request or a notification)."""

    seq: int
    method: str
    raw: Any
    msg: Any = None  # the parsed envelope, or None when it did not validate
    error: str | None = None
    id: Any = None  # a request's id; None for a notification
    size: int = 0  # the line's length, what keeping it costs roughly


@dataclass
class Reply:
    """The program's answer to a request of the kit."""

    seq: int
    raw: dict[str, Any]
    msg: Any = None
    error: str | None = None  # the models' complaint about it

    def show(self, transcript: Transcript) -> str:
        return next((line.show() for line in transcript.lines if line.seq == self.seq), f"#{self.seq}")

    @property
    def code(self) -> int | None:
        err = self.raw.get("error")
        return err.get("code") if isinstance(err, dict) and isinstance(err.get("code"), int) else None

    @property
    def result(self) -> Any:
        return self.raw.get("result")

    @property
    def ok(self) -> bool:
        return "result" in self.raw and self.error is None


@dataclass
class Problem:
    """A line that broke the wire's rules: ``kind`` is ``framing``, ``schema`` or ``answers``."""

    seq: int
    kind: str
    detail: str


class Transcript:
    """Both directions in order; the last lines in memory, everything in ``path`` when given."""

    def __init__(self, path: Path | None = None, limit: int = 64 << 20) -> None:
        self.lines: deque[Line] = deque(maxlen=KEEP_LINES)
        self._line_bytes = 0
        self.seq = 0
        self.start = time.monotonic()
        self._file = path.open("w", encoding="utf-8") if path is not None else None
        self._left = limit

    def add(self, out: bool, text: str) -> int:
        self.seq += 1
        line = Line(self.seq, time.monotonic() - self.start, out, text)
        if len(self.lines) == KEEP_LINES:
            self._line_bytes -= len(self.lines[0].text)
        self.lines.append(line)
        self._line_bytes += len(text)
        while self._line_bytes > KEEP_LINE_BYTES and len(self.lines) > 1:
            self._line_bytes -= len(self.lines.popleft().text)
        if self._file is not None and self._left > 0:
            entry = json.dumps(
                {"seq": line.seq, "t": round(line.at, 4), "from": "kit" if out else "program", "line": text}
            )
            self._left -= len(entry)
            self._file.write(entry + "\n")
        return self.seq

    def between(self, first: int, last: int | None = None) -> list[Line]:
        return [line for line in self.lines if line.seq >= first and (last is None or line.seq <= last)]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


Answer = Callable[[str, Any], Awaitable[Any]]
"""How the kit answers the program's requests: ``(method, params) -> result``; raise :class:`Refuse`."""


class Refuse(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Program:
    """A spawned program talking JSON-RPC on stdio, in its own process group."""

    def __init__(
        self,
        command: Sequence[str],
        transcript: Transcript,
        answer: Answer,
        *,
        version: str,
        cwd: str | None = None,
        max_line: int = MAX_LINE,
        relay: str | None = None,
        stdin_text: bytes = b"",
    ) -> None:
        self.command = list(command)
        self.transcript = transcript
        self.answer = answer
        self.version = version  # judged by this version's models until initialize settles it
        self.cwd = cwd
        self.max_line = max_line
        # Bounded (a flooding program costs the kit a fixed amount): the latest events up to
        # KEEP_EVENT_BYTES of lines, the latest KEEP_PROBLEMS problems; ``dropped`` counts the events let go.
        self.events: deque[Event] = deque()
        self.problems: deque[Problem] = deque(maxlen=KEEP_PROBLEMS)
        self.dropped = 0
        self._event_bytes = 0
        self._event_budget = KEEP_EVENT_BYTES
        self.pending: dict[int, tuple[str, asyncio.Future[Reply]]] = {}
        self.answered: set[int] = set()
        self.ids = 0
        self.process: asyncio.subprocess.Process | None = None
        self.stderr: deque[bytes] = deque(maxlen=64)
        self.exit: str | None = None  # why the output ended
        self._changed = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._serving: set[asyncio.Task[None]] = set()  # answers to the program's requests, dropped when done
        self.stdin_text = stdin_text
        self.relay = relay  # a Unix socket the program's agent connects to (see _relay), instead of its stdio
        self._server: asyncio.AbstractServer | None = None
        self._connected = asyncio.Event()
        self._writer: asyncio.StreamWriter | None = None  # the program's stdin, or its relayed agent's socket
        self._wire: StdioTransport | None = None  # newline framing on the program's stdout (or the socket)
        self.stdout: deque[bytes] = deque(maxlen=64)

    @property
    def models(self) -> ModuleType:
        return MODULES[self.version]

    async def start(self) -> None:
        if self.relay is not None:
            self._server = await asyncio.start_unix_server(self._accept, self.relay, limit=1 << 16)
        try:
            # its own process group: every child is ended with it
            self.process = await start_process_group(self.command, stderr=asyncio.subprocess.PIPE, cwd=self.cwd)
        except (OSError, ValueError) as exc:
            raise StartError(f"cannot start {self.command[0]!r}: {exc}") from None
        assert self.process.stdout is not None and self.process.stderr is not None
        self._tasks = [asyncio.create_task(self._drain(self.process.stderr, self.stderr))]
        if self.relay is None:
            assert self.process.stdin is not None
            self._attach(self.process.stdout, self.process.stdin)
        else:
            self._tasks.append(asyncio.create_task(self._drain(self.process.stdout, self.stdout)))
            self._tasks.append(asyncio.create_task(self._watch()))
            if self.stdin_text and self.process.stdin is not None:  # what a user would type into the client
                self.process.stdin.write(self.stdin_text)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._connected.is_set():  # one agent per run: a second one is refused
            writer.close()
            return
        self._attach(reader, writer)

    def _attach(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Talk to the program (or its relayed agent) on ``reader`` and ``writer``, one message a line."""
        self._writer = writer
        self._wire = StdioTransport(reader, writer, self.max_line, oversized_at_limit=True)
        self._connected.set()
        self._tasks.append(asyncio.create_task(self._read()))

    async def _watch(self) -> None:
        """Relayed: the exchange ends when the program exits without having started its agent."""
        assert self.process is not None
        await self.process.wait()
        if not self._connected.is_set():
            self._end(await self._exit_reason())

    async def connected(self, timeout: float) -> bool:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._connected.wait(), timeout)
        return self._connected.is_set()

    @property
    def alive(self) -> bool:
        return self.exit is None

    async def stop(self, grace: float = 1.0) -> None:
        """Close its stdin, then end its whole process group (TERM, then KILL)."""
        proc = self.process
        if proc is None:
            return
        if self._writer is not None:  # the program's stdin, or a relayed agent's connection
            with contextlib.suppress(Exception):
                self._writer.close()
        await stop_process_group(proc, grace, grace)
        tasks = [*self._tasks, *self._serving]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        self._event_budget = KEEP_STOPPED_BYTES  # later checks look back at it: its latest events stay
        self._trim()
        if self._server is not None:
            self._server.close()
        self._end("stopped by the kit")

    # -- writing -----------------------------------------------------------

    def send_raw(self, data: bytes) -> int:
        """Write ``data`` (a line, without its newline) as is; returns its transcript number."""
        seq = self.transcript.add(True, data.decode("utf-8", "replace"))
        wire = self._wire
        if wire is None or self._writer is None or self._writer.is_closing():
            return seq
        with contextlib.suppress(Exception):
            wire.send(data)
        return seq

    def send(self, message: dict[str, Any]) -> int:
        return self.send_raw(json.dumps(message, ensure_ascii=False).encode())

    def notify(self, method: str, params: Any) -> int:
        return self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def start_request(self, method: str, params: Any) -> tuple[int, asyncio.Future[Reply]]:
        self.ids += 1
        rid = self.ids
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self.pending[rid] = (method, future)
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        if not self.alive:
            future.set_exception(Closed(self.exit or "the program is not running"))
            future.exception()
        return rid, future

    async def request(self, method: str, params: Any, timeout: float) -> Reply:
        """Send a request and wait for its answer; ``TimeoutError`` or :class:`Closed` otherwise."""
        rid, future = self.start_request(method, params)
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"no answer to {method} (id {rid}) within {timeout:g} s") from None

    # -- waiting -----------------------------------------------------------

    def mark(self) -> int:
        """The transcript position now: events after it are ``since(mark)``."""
        return self.transcript.seq

    def since(self, mark: int, method: str | None = None) -> list[Event]:
        return [e for e in self.events if e.seq > mark and (method is None or e.method == method)]

    async def wait_for(self, found: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``found()`` holds (True) or ``timeout`` passes or the output ends (False)."""
        deadline = time.monotonic() + timeout
        while not found():
            left = deadline - time.monotonic()
            if left <= 0 or not self.alive:
                return found()
            self._changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)
        return True

    async def quiet(self, period: float, limit: float) -> None:
        """Wait until nothing arrived for ``period`` seconds (at most ``limit``)."""
        deadline = time.monotonic() + limit
        while self.alive and time.monotonic() < deadline:
            seen = self.transcript.seq
            await asyncio.sleep(period)
            if self.transcript.seq == seen:
                return

    # -- reading -----------------------------------------------------------

    async def _drain(self, stream: asyncio.StreamReader, tail: deque[bytes]) -> None:
        while chunk := await stream.read(4096):
            tail.append(chunk)

    async def _read(self) -> None:
        wire = self._wire
        assert wire is not None
        unyielded = 0
        try:
            while (line := await wire.receive()) is not None:
                if isinstance(line, Oversized):  # skipped as it came in: a framing problem, and on with the next
                    seq = self.transcript.add(False, line.head[:200].decode("utf-8", "replace") + "...")
                    self.problems.append(Problem(seq, "framing", f"a line longer than {self.max_line} bytes"))
                    self._changed.set()
                    unyielded += READ_CHUNK
                else:
                    self._line(line)
                    unyielded += len(line) + 1
                if unyielded >= READ_CHUNK:  # a flooding program does not starve the checks
                    unyielded = 0
                    await asyncio.sleep(0)
        finally:
            self._end(await self._exit_reason())

    async def _exit_reason(self) -> str:
        proc = self.process
        if proc is None:
            return "not started"
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(proc.wait(), 0.5)
        if proc.returncode is None:
            return (
                "the program closed its stdout" if self.relay is None else "the program's agent closed the connection"
            )
        tail = b"".join(self.stderr).decode("utf-8", "replace").strip().splitlines()[-3:]
        return f"the program exited with status {proc.returncode}" + (f" (stderr: {' | '.join(tail)})" if tail else "")

    def _end(self, reason: str) -> None:
        if self.exit is None:
            self.exit = reason
        for _method, future in self.pending.values():
            if not future.done():
                future.set_exception(Closed(self.exit))
                future.exception()  # a check that stopped waiting for it need not see it
        self.pending.clear()
        self._changed.set()

    def _line(self, data: bytes) -> None:
        text = data.decode("utf-8", "replace")
        seq = self.transcript.add(False, text)
        self._changed.set()
        if not data.strip():
            self.problems.append(Problem(seq, "framing", "an empty line"))
            return
        try:
            value = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            self.problems.append(Problem(seq, "framing", f"not a JSON-RPC message: {type(exc).__name__}: {exc}"[:300]))
            return
        if not isinstance(value, dict):
            self.problems.append(Problem(seq, "framing", "not a JSON object (one message per line; no batches here)"))
            return
        if "method" not in value and "id" in value:
            self._response(seq, data, value)
        elif isinstance(value.get("method"), str):
            self._call(seq, data, value)
        else:
            self.problems.append(Problem(seq, "framing", "neither a request, a notification nor a response"))

    def _response(self, seq: int, data: bytes, value: dict[str, Any]) -> None:
        rid = value.get("id")
        entry = self.pending.pop(rid, None) if isinstance(rid, int) and not isinstance(rid, bool) else None
        if entry is None:
            again = rid in self.answered
            self.problems.append(
                Problem(
                    seq,
                    "answers",
                    f"a second answer to request {rid!r}"
                    if again
                    else f"an answer to request {rid!r}, which the kit never sent",
                )
            )
            return
        self.answered.add(rid)  # type: ignore[arg-type]
        method, future = entry
        reply = Reply(seq, value)
        models = self.models
        if method == "initialize" and isinstance(value.get("result"), dict):
            chosen = value["result"].get("protocolVersion")
            models = v2 if chosen == 2 else v1 if chosen == 1 else models
        try:
            reply.msg = models.parse_message(data, method=method)
        except models.MessageError as exc:
            reply.error = str(exc)[:600]
        if not future.done():
            future.set_result(reply)

    def _call(self, seq: int, data: bytes, value: dict[str, Any]) -> None:
        event = Event(seq, value["method"], value, id=value.get("id"))
        models = self.models
        params = value.get("params")
        if value["method"] == "initialize" and isinstance(params, dict):  # judged by the version it asks for
            asked = params.get("protocolVersion")
            models = v2 if asked == 2 else v1 if asked == 1 else models
        try:
            event.msg = models.parse_message(data)
        except models.MessageError as exc:
            event.error = str(exc)[:600]
            self.problems.append(Problem(seq, "schema", f"{event.method}: {event.error}"))
        event.size = len(data)
        self.events.append(event)
        self._event_bytes += event.size
        self._trim()
        if "id" in value:
            task = asyncio.create_task(self._serve(event))
            self._serving.add(task)
            task.add_done_callback(self._serving.discard)

    def _trim(self) -> None:
        while self._event_bytes > self._event_budget and len(self.events) > 1:
            self._event_bytes -= self.events.popleft().size
            self.dropped += 1

    async def _serve(self, event: Event) -> None:
        if event.error is not None:
            self.send({"jsonrpc": "2.0", "id": event.id, "error": {"code": -32602, "message": event.error[:200]}})
            return
        params = event.raw.get("params")
        try:
            result = await self.answer(event.method, params)
        except Refuse as exc:
            self.send({"jsonrpc": "2.0", "id": event.id, "error": {"code": exc.code, "message": exc.message}})
            return
        except Exception as exc:  # the kit's own answer failed: say so on the wire, keep going
            self.send(
                {"jsonrpc": "2.0", "id": event.id, "error": {"code": -32603, "message": f"conformance kit: {exc}"}}
            )
            return
        self.send({"jsonrpc": "2.0", "id": event.id, "result": result})


@dataclass
class Advertised:
    """What an initialize answer says the program supports."""

    version: str
    raw: dict[str, Any] = field(default_factory=dict)

    def method(self, method: str) -> bool:
        """Whether ``method`` may be called; one this version does not have is not advertised."""
        models = MODULES[self.version]
        try:
            return bool(models.method_allowed(method, self.raw))
        except models.UnknownMethodError:
            return False

    def feature(self, feature: str) -> bool:
        try:
            return bool(MODULES[self.version].feature_supported(feature, self.raw))
        except KeyError:
            return False
