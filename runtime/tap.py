"""A tap between an editor and an agent: every byte forwarded unchanged, both directions recorded.

    python -m acp_types.tap [--out FILE] [--show] [--cap BYTES] -- AGENT_CMD...

Configure the editor to run this command instead of the agent's. The tap
starts ``AGENT_CMD`` in a process group of its own, copies the editor's bytes
to the agent's stdin and the agent's stdout to the editor as they come (no
parsing on the way: malformed lines, partial lines and huge lines pass as
they are; the agent's stderr is the tap's), and exits with the agent's exit
code. Its own errors (bad arguments, an agent that cannot be started, a
record file that cannot be written) are one line on stderr and exit 2.

``--out FILE`` records the exchange as JSON Lines (docs/tap.md): a header
``{"acp_tap": 1, "command": [...], "cap": N, "started": "<UTC time>"}``, then
one record per line each side wrote::

    {"t": 0.0123, "from": "client", "line": "{\\"jsonrpc\\":\\"2.0\\",...}"}

``t`` is the seconds since the tap started (a monotonic clock) when the
line's newline went through; ``from`` is ``client`` (the editor) or
``agent``; ``line`` is the line without its newline when it is UTF-8, else
``base64`` holds its bytes. A line longer than the cap (``--cap``, 1 MiB by
default) is recorded by its first ``cap`` bytes with ``"truncated": true``
and ``"size"`` its whole length; ``"partial": true`` marks a last line that
ended without a newline. The last record is ``{"t": ..., "exit": CODE}``.
A record is written before its line is forwarded, so an answer is never
recorded before the request it answers.

``--show`` prints one line per message to stderr as it passes (time,
direction, id, method, a short summary) and, under it, each problem the
session state's strict mode finds (``acp_types.<version>.SessionState(strict=True)``,
the rules of ``acp_types.session_state.RULES``, the same oracle as the
conformance kit's).

Bounded: each direction holds at most ``cap`` bytes of the line in progress
(what is forwarded is never held whole), and the pipes apply backpressure;
``--show`` remembers at most 4,096 unanswered requests and follows at most
64 sessions (the oldest let go), each state as large as its session.
A SIGTERM, SIGHUP or SIGINT to the tap stops the agent's process group (its
stdin closed, then TERM, then KILL) and exits ``128 + signal``; when the
editor closes the tap's stdin the agent gets ``--grace`` seconds to exit
before its group is stopped the same way.

Hand-written: the source is runtime/tap.py, which the generator copies into
the package unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import IO, Any

from ._connection.process import start_process_group
from .connection import stdio_streams

__all__ = ["DEFAULT_CAP", "FORMAT", "Recorder", "Shower", "Splitter", "main", "run"]

FORMAT = 1
"""The version of the record format (the header's ``acp_tap``)."""
DEFAULT_CAP = 1 << 20
"""The bytes of one line a record keeps by default: 1 MiB."""
CHUNK = 1 << 16
KEEP_PENDING = 4096  # --show: requests waiting for their answer, remembered to name the answer's method
KEEP_SESSIONS = 64  # --show: sessions whose state is followed at once


class Splitter:
    """Cuts one direction's bytes into lines, keeping at most ``cap`` bytes of the line in progress."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._head = bytearray()
        self._size = 0  # the whole length of the line in progress

    def feed(self, chunk: bytes) -> list[tuple[bytes, int]]:
        """The lines ``chunk`` completes: (their first ``cap`` bytes without the newline, their whole length)."""
        done: list[tuple[bytes, int]] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            room = self.cap - len(self._head)
            if room > 0:
                self._head += piece[:room]
            self._size += len(piece)
            if end < 0:
                return done
            done.append((bytes(self._head), self._size))
            self._head.clear()
            self._size = 0
            start = end + 1

    def end(self) -> tuple[bytes, int] | None:
        """What is left when the stream ends: a last line without its newline, if any."""
        if self._size == 0:
            return None
        left = (bytes(self._head), self._size)
        self._head.clear()
        self._size = 0
        return left


class Recorder:
    """Writes the record file: one JSON object a line (the format in this module's docstring)."""

    def __init__(self, out: IO[str] | None, start: float, warn: Callable[[str], None]) -> None:
        self._out = out
        self._start = start
        self._warn = warn

    def now(self) -> float:
        return round(time.monotonic() - self._start, 6)

    def _write(self, entry: dict[str, Any]) -> None:
        if self._out is None:
            return
        try:
            self._out.write(json.dumps(entry, ensure_ascii=False) + "\n")
        except (OSError, ValueError) as exc:  # a full disk stops the record, never the forwarding
            self._warn(f"tap: recording stopped: {exc}")
            with contextlib.suppress(OSError, ValueError):
                self._out.close()
            self._out = None

    def flush(self) -> None:
        """Write out what the records hold (after each chunk read: a crash loses at most one chunk's lines)."""
        if self._out is None:
            return
        try:
            self._out.flush()
        except (OSError, ValueError) as exc:
            self._warn(f"tap: recording stopped: {exc}")
            with contextlib.suppress(OSError, ValueError):
                self._out.close()
            self._out = None

    def header(self, command: Sequence[str], cap: int) -> None:
        started = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
        self._write({"acp_tap": FORMAT, "command": list(command), "cap": cap, "started": started})
        self.flush()

    def line(self, side: str, data: bytes, size: int, *, partial: bool = False) -> None:
        entry: dict[str, Any] = {"t": self.now(), "from": side}
        try:
            entry["line"] = data.decode("utf-8")
        except UnicodeDecodeError:
            entry["base64"] = base64.b64encode(data).decode("ascii")
        if size > len(data):
            entry["truncated"] = True
            entry["size"] = size
        if partial:
            entry["partial"] = True
        self._write(entry)

    def end(self, code: int | None) -> None:
        self._write({"t": self.now(), "exit": code})
        if self._out is not None:
            with contextlib.suppress(OSError, ValueError):
                self._out.close()
            self._out = None


def _short(value: Any, width: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text[: width + 1])
    return text if len(text) <= width else text[: width - 3] + "..."


class Shower:
    """``--show``: one line per message, and the session state's strict problems as they happen."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self._emit = emit
        self.version: str | None = None
        self._pending: dict[tuple[str, str], tuple[str, Any]] = {}  # (requester, id) -> (method, params)
        self._states: dict[str, Any] = {}
        self._finish: dict[str, Any] = {}  # v2: a prompt's answer, kept until its turn is idle

    def message(self, at: float, side: str, data: bytes, size: int) -> None:
        """Show one line; whatever goes wrong in showing it is shown too, never raised (forwarding goes on)."""
        try:
            self._message(at, side, data, size)
        except Exception as exc:  # --show must never stop the bytes
            self._emit(f"          !! --show could not follow this line: {type(exc).__name__}: {_short(str(exc), 100)}")

    def _message(self, at: float, side: str, data: bytes, size: int) -> None:
        arrow = "client -> agent" if side == "client" else "agent -> client"
        head = f"{at:9.3f} {arrow}"
        if size > len(data):
            self._emit(f"{head} (a line of {size} bytes, recorded in part, not shown)")
            return
        try:
            msg = json.loads(data)
        except (ValueError, RecursionError):
            self._emit(f"{head} not JSON: {_short(data.decode('utf-8', 'replace'), 80)}")
            return
        if not isinstance(msg, dict):
            self._emit(f"{head} not a JSON-RPC message: {_short(msg, 80)}")
            return
        rid = msg.get("id")
        tag = f" #{_short(rid, 20)}" if "id" in msg else ""
        method = msg.get("method")
        if isinstance(method, str):
            params = msg.get("params")
            self._emit(f"{head}{tag} {method} {self._summary(method, params)}".rstrip())
            if "id" in msg:
                if len(self._pending) >= KEEP_PENDING:  # requests never answered: the oldest are forgotten
                    del self._pending[next(iter(self._pending))]
                self._pending[(side, json.dumps(rid))] = (method, params)
            self._request(side, method, params)
            return
        other = "agent" if side == "client" else "client"
        asked = self._pending.pop((other, json.dumps(rid)), None)
        name = asked[0] if asked else "(no such request)"
        if "error" in msg:
            err = msg.get("error")
            code = err.get("code") if isinstance(err, dict) else None
            text = err.get("message") if isinstance(err, dict) else err
            self._emit(f"{head}{tag} error to {name}: {code} {_short(text, 80)}")
        else:
            self._emit(f"{head}{tag} answer to {name}: {_short(msg.get('result'), 80)}")
        if asked is not None:
            self._answer(asked[0], asked[1], msg)

    @staticmethod
    def _summary(method: str, params: Any) -> str:
        if method == "session/update" and isinstance(params, dict):
            update = params.get("update")
            if isinstance(update, dict):
                kind = update.get("sessionUpdate")
                content = update.get("content")
                if isinstance(content, dict) and isinstance(content.get("text"), str):
                    return f"{kind} {_short(content['text'], 70)}"
                rest = {k: v for k, v in update.items() if k != "sessionUpdate"}
                return f"{kind} {_short(rest, 70)}"
        return _short(params, 90) if params is not None else ""

    # -- the session state ------------------------------------------------

    def _state(self, params: Any) -> Any:
        sid = params.get("sessionId") if isinstance(params, dict) else None
        if self.version is None or not isinstance(sid, str):
            return None
        state = self._states.get(sid)
        if state is None:
            from acp_types import v1, v2

            module = v1 if self.version == "v1" else v2
            if len(self._states) >= KEEP_SESSIONS:  # the session followed longest ago is let go
                oldest = next(iter(self._states))
                del self._states[oldest]
                self._finish.pop(oldest, None)
            state = self._states[sid] = module.SessionState(sid, strict=True)
        return state

    def _ended(self, state: Any) -> None:
        self._emit(f"          (session {state.session_id}: turn {state.turn} ended: {state.stop_reason})")

    def _report(self, problems: Sequence[Any]) -> None:
        for p in problems:
            self._emit(f"          !! {p.rule} ({p.level}): {p.message}")

    def _guard(self, what: str, step: Callable[[], Any]) -> None:
        try:
            found = step()
        except (ValueError, TypeError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self._emit(f"          !! {what} does not validate: {_short(first, 120)}")
            return
        if isinstance(found, list):
            self._report(found)

    def _request(self, side: str, method: str, params: Any) -> None:
        if side != "client" and method == "session/update":
            state = self._state(params)
            if state is None:
                return
            running = state.in_turn
            self._guard("session/update", lambda: state.apply(params))
            sid = params["sessionId"]
            if running and not state.in_turn:
                self._ended(state)
            if sid in self._finish and not state.in_turn:
                response = self._finish.pop(sid)
                self._guard("the prompt's answer", lambda: state.finish(response))
            return
        if side != "client":
            return
        if method == "initialize" and isinstance(params, dict):  # the version asked for, until the answer settles it
            self.version = {1: "v1", 2: "v2"}.get(params.get("protocolVersion"), self.version)  # type: ignore[arg-type]
        state = self._state(params)
        if state is None:
            return
        if method == "session/prompt":
            state.begin_turn()
        elif method == "session/cancel":
            state.note_cancel()
        elif method == "session/load" or (
            method == "session/resume" and isinstance(params, dict) and "replayFrom" in params
        ):
            state.begin_replay()

    def _answer(self, method: str, params: Any, msg: dict[str, Any]) -> None:
        if method == "initialize":
            result = msg.get("result")
            number = result.get("protocolVersion") if isinstance(result, dict) else None
            version = {1: "v1", 2: "v2"}.get(number) if isinstance(number, int) else None
            if version != self.version:
                self._states.clear()  # followed under the version asked for: started again
                self._finish.clear()
            self.version = version
            if self.version is not None:
                self._emit(f"          (protocol {self.version}: the session state follows each session)")
            return
        state = self._state(params)
        if state is None:
            if method == "session/new" and isinstance(msg.get("result"), dict):
                self._state(msg["result"])  # the session starts here
                self._setup("session/new", msg["result"], msg)
            return
        if method in ("session/load", "session/resume") and state.replaying:
            state.end_replay()
        if "result" not in msg:
            if method == "session/prompt" and state.in_turn and self.version == "v1":
                state.in_turn = False  # a refused prompt: no turn ran
            return
        if method == "session/prompt":
            response = self._parse_result(method, msg["result"])
            if response is None:
                return
            if self.version == "v1":
                self._guard("the prompt's answer", lambda: state.end_turn(response))
                self._ended(state)
            elif state.in_turn:
                self._finish[params["sessionId"]] = response
            else:
                self._guard("the prompt's answer", lambda: state.finish(response))
        elif method in ("session/load", "session/resume", "session/set_config_option"):
            self._setup(method, params, msg)

    def _setup(self, method: str, params: Any, msg: dict[str, Any]) -> None:
        state = self._state(params if method != "session/new" else msg["result"])
        response = self._parse_result(method, msg["result"])
        if state is not None and response is not None:
            state.apply_setup(response)

    def _parse_result(self, method: str, result: Any) -> Any:
        from acp_types import v1, v2

        module: Any = v1 if self.version == "v1" else v2
        try:
            return module.parse_result(method, result)
        except (ValueError, TypeError, KeyError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            self._emit(f"          !! the answer to {method} does not validate: {_short(first, 120)}")
            return None

    def close(self) -> None:
        """The exchange ended: a v2 turn still waiting for ``idle`` is finished (``turn.idle``)."""
        finish = self._finish
        self._finish = {}
        for sid, response in finish.items():
            self._report(self._states[sid].finish(response))


# -- running --------------------------------------------------------------


class _Usage(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m acp_types.tap",
        description="Run an ACP agent, forwarding its stdio unchanged, recording and showing the exchange.",
        epilog="Exit code: the agent's; 2 for the tap's own errors (one line on stderr).",
    )
    parser.add_argument("--out", metavar="FILE", help="record both directions here (JSON Lines, see docs/tap.md)")
    parser.add_argument("--show", action="store_true", help="print each message and the strict problems to stderr")
    parser.add_argument(
        "--cap", type=int, default=DEFAULT_CAP, metavar="BYTES", help="bytes of one line recorded (default: 1 MiB)"
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=5.0,
        metavar="S",
        help="seconds the agent gets to exit once the editor closes stdin (default: 5)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- AGENT_CMD...")
    return parser


async def _stop_group(process: asyncio.subprocess.Process, output: asyncio.Future[None], grace: float) -> None:
    """Give the agent ``grace`` seconds to exit, then TERM its process group, then KILL what is left.

    As :func:`acp_types.connection.spawn_agent` does: the group is stopped even
    when the agent exited by itself, so what it started does not outlive it;
    KILL follows when the agent or a child still holds its stdout a second later.
    """
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(process.wait(), grace)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    gone = asyncio.gather(process.wait(), asyncio.shield(output))
    try:
        await asyncio.wait_for(gone, 1.0)
    except asyncio.TimeoutError:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(process.wait(), 1.0)


async def run(
    command: Sequence[str],
    out: IO[str] | None = None,
    *,
    show: bool = False,
    cap: int = DEFAULT_CAP,
    grace: float = 5.0,
    emit: Callable[[str], None] | None = None,
) -> int:
    """Tap this process's stdin/stdout into ``command``; return the exit code (the agent's, ``128+sig`` if stopped).

    Raises ``OSError`` when the agent cannot be started.
    """

    def write_err(text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    say = emit or write_err
    recorder = Recorder(out, time.monotonic(), write_err)
    shower = Shower(say) if show else None
    process = await start_process_group(command, limit=CHUNK)  # its own process group, stopped as a whole
    try:
        editor_in, editor_out = await stdio_streams(CHUNK)
    except BaseException:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
        raise
    recorder.header(command, cap)
    assert process.stdin is not None and process.stdout is not None
    agent_in, agent_out = process.stdin, process.stdout
    loop = asyncio.get_running_loop()
    stopped: asyncio.Future[int] = loop.create_future()

    def on_signal(sig: int) -> None:
        if not stopped.done():
            stopped.set_result(sig)

    installed = []
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal, sig)
            installed.append(sig)

    def take(side: str, splitter: Splitter, chunk: bytes) -> None:
        for data, size in splitter.feed(chunk):
            recorder.line(side, data, size)
            if shower is not None:
                shower.message(recorder.now(), side, data, size)
        recorder.flush()

    def ended(side: str, splitter: Splitter) -> None:
        left = splitter.end()
        if left is not None:
            recorder.line(side, left[0], left[1], partial=True)
            recorder.flush()
            if shower is not None:
                shower.message(recorder.now(), side, *left)

    async def client_to_agent() -> None:
        splitter = Splitter(cap)
        agent_gone = False
        while True:
            chunk = await editor_in.read(CHUNK)
            if not chunk:
                break
            take("client", splitter, chunk)
            if agent_gone:
                continue  # the agent is gone: what the editor writes is recorded, nowhere to go
            try:
                agent_in.write(chunk)
                await agent_in.drain()
            except (ConnectionError, OSError):
                agent_gone = True
        ended("client", splitter)
        with contextlib.suppress(OSError, RuntimeError):
            agent_in.close()

    async def agent_to_client() -> None:
        splitter = Splitter(cap)
        editor_gone = False
        while True:
            chunk = await agent_out.read(CHUNK)
            if not chunk:
                break
            take("agent", splitter, chunk)
            if editor_gone:
                continue
            try:
                editor_out.write(chunk)
                await editor_out.drain()
            except (ConnectionError, OSError):
                editor_gone = True
        ended("agent", splitter)

    upstream = asyncio.ensure_future(client_to_agent())
    downstream = asyncio.ensure_future(agent_to_client())
    exited = asyncio.ensure_future(process.wait())
    received: int | None = None
    try:
        first: set[asyncio.Future[Any]] = {upstream, exited, stopped}
        await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
        if not exited.done() and not stopped.done():  # the editor closed stdin (and so the agent's): its grace
            then: set[asyncio.Future[Any]] = {exited, stopped}
            await asyncio.wait(then, timeout=grace, return_when=asyncio.FIRST_COMPLETED)
        if stopped.done():
            received = stopped.result()
        with contextlib.suppress(OSError, RuntimeError):
            agent_in.close()
        await _stop_group(process, downstream, 1.0 if received is not None else 0.0)
        if received is None:
            await downstream  # the agent's last lines reach the editor (its group is gone: stdout is at its end)
        else:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(downstream), 1.0)
    finally:
        for task in (upstream, downstream, exited):
            if not task.done():
                task.cancel()
        for task in (upstream, downstream, exited):
            with contextlib.suppress(BaseException):
                await task
        for sig in installed:
            loop.remove_signal_handler(sig)
        code = process.returncode
        if shower is not None:
            shower.close()
        recorder.end(code)
        with contextlib.suppress(Exception):
            editor_out.close()
            closing = getattr(editor_out, "wait_closed", None)
            if closing is not None:  # what the transport still holds reaches the editor
                await asyncio.wait_for(closing(), None if received is None else 1.0)
    if received is not None:
        return 128 + received
    if code is None:
        return 1
    return code if code >= 0 else 128 - code


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    try:
        if not command:
            raise _Usage("no agent command: python -m acp_types.tap [--out FILE] [--show] -- AGENT_CMD...")
        if args.cap < 1:
            raise _Usage(f"--cap {args.cap}: must be at least 1")
        if not args.grace >= 0:
            raise _Usage(f"--grace {args.grace}: must be 0 or more")
        out: IO[str] | None = None
        if args.out is not None:
            if os.path.isdir(args.out):
                raise _Usage(f"--out {args.out}: is a folder")
            try:
                out = open(args.out, "w", encoding="utf-8")
            except OSError as exc:
                raise _Usage(f"--out {args.out}: cannot write it ({exc.strerror})") from None
        try:
            return asyncio.run(run(command, out, show=args.show, cap=args.cap, grace=args.grace))
        except OSError as exc:  # the agent could not be started
            if out is not None:
                out.close()
            raise _Usage(f"cannot start {command[0]!r}: {exc.strerror or exc}") from None
    except _Usage as exc:
        sys.stderr.write(f"tap: {exc}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
