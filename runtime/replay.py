"""A recorded exchange played back: a mock agent for a client, or a mock client for an agent.

    python -m acp_types.replay [options] FILE                      # a mock agent on stdin/stdout
    python -m acp_types.replay --client [options] FILE -- AGENT_CMD...  # a mock client against AGENT_CMD

``FILE`` is a record of :mod:`acp_types.tap` (``--out``) or a transcript of
the conformance kit (``--transcript DIR`` writes ``agent-v1.jsonl``...);
docs/tap.md describes both. The recording is played in order: a line the
played side wrote is sent when every line recorded before it has been sent
or received, and a line of the other side is awaited and compared with the
live peer's next line. The ids are mapped: the live peer's request ids, and
the values of ``sessionId``, ``messageId``, ``toolCallId`` and
``terminalId`` it gives, are bound to the recorded ones the first time they
meet (a later meeting must agree), and what is sent carries the live values
(a line nothing is mapped in is sent byte for byte as recorded).

Where the peer leaves the recorded path (another message than the recorded
one, nothing within ``--timeout`` seconds, its end of input too early, or a
message after the recording's end), stderr gets a report naming the record,
the message that was expected and the one that came, and the first place
they differ; the mock agent also answers the client with a JSON-RPC error
(code ``-32099``, ``data`` the same report; to the stray request's id, else
to ``null``). The exit code is then 1; 0 when the whole recording was
played; 2 for bad arguments, an unreadable recording or an agent that
cannot be started (one line on stderr).

Comparison is exact JSON equality (members in any order, numbers by value)
after the mapping, except for the members ``--ignore NAME`` names (anywhere
in the message); ``--loose`` compares only what the message is (request,
notification or answer; its method; a ``session/update``'s kind).
``--pace F`` keeps time as well: a line sent waits until F times its recorded
gap from the line before it has passed (by default lines go as soon as the
order allows).
A kit transcript can hold several runs of the program (the kit starts it
again for some checks): a run starts at each ``initialize`` whose id is not
above the ids the client side used before it; ``--run N`` picks one (1).

Costs: the recording is read whole into memory (a line of it at most 64 MiB),
a live line is kept up to 64 MiB (the rest is counted, not held) and every wait
for the peer is bounded by ``--timeout`` (but the wait for the client's end of
input once the recording is played).

Hand-written: the source is runtime/replay.py, which the generator copies
into the package unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import contextlib
import json
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["BOUND_KEYS", "STRAY_CODE", "Record", "RecordingError", "Replayer", "Stray", "load", "main"]

STRAY_CODE = -32099
"""The JSON-RPC error code the mock agent answers a stray client with (a server error of JSON-RPC's range)."""
BOUND_KEYS = frozenset({"sessionId", "messageId", "toolCallId", "terminalId"})
"""Members whose values are opaque ids one run makes up: mapped between the recording and the live peer."""
MAX_LINE = 64 << 20
SHOW = 300


class RecordingError(ValueError):
    """The recording cannot be read (exit 2)."""


@dataclass(frozen=True)
class Record:
    """One recorded line: who wrote it, its bytes (without the newline), where it is in the file."""

    number: int  # the line of the file
    side: str  # "client" or "agent"
    data: bytes
    truncated: bool = False
    partial: bool = False
    t: float | None = None  # seconds since the recording started, when it says

    def show(self) -> str:
        text = self.data.decode("utf-8", "replace")
        text = text if len(text) <= SHOW else text[:SHOW] + "..."
        return text + (" (truncated when recorded)" if self.truncated else "")


def _kit_side(entry: dict[str, Any], kit_is: str | None) -> str | None:
    who = entry.get("from")
    if who not in ("kit", "program") or kit_is is None:
        return None
    return kit_is if who == "kit" else ("agent" if kit_is == "client" else "client")


def _message(data: bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def load(path: str, run: int = 1) -> list[Record]:
    """The records of a tap file or of run ``run`` of a kit transcript, in order (``RecordingError`` if unreadable)."""
    records: list[Record] = []
    tap: bool | None = None
    kit_is: str | None = None  # which side the kit played
    runs = 0
    last_id = -1
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise RecordingError(f"{path}: cannot read it ({exc.strerror})") from None
    with handle:
        for number, raw in enumerate(iter(lambda: handle.readline(MAX_LINE + 1), b""), start=1):
            if len(raw) > MAX_LINE:
                raise RecordingError(f"{path}:{number}: a line longer than {MAX_LINE} bytes")
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
            except (ValueError, RecursionError):
                raise RecordingError(f"{path}:{number}: not JSON") from None
            if not isinstance(entry, dict):
                raise RecordingError(f"{path}:{number}: not a JSON object")
            if tap is None:
                tap = "acp_tap" in entry
                if tap and entry["acp_tap"] != 1:
                    raise RecordingError(f"{path}: tap format {entry['acp_tap']!r}, this replay reads 1")
                if tap:
                    continue
            if tap and "exit" in entry and "from" not in entry:
                continue
            data = _data(entry, path, number)
            if tap:
                side = entry.get("from")
                if side not in ("client", "agent"):
                    raise RecordingError(f"{path}:{number}: 'from' is neither 'client' nor 'agent'")
                truncated, partial = bool(entry.get("truncated")), bool(entry.get("partial"))
                records.append(Record(number, side, data, truncated, partial, _time(entry)))
                continue
            # a kit transcript: "from" is kit or program; the side sending initialize is the client
            if entry.get("from") not in ("kit", "program"):
                raise RecordingError(f"{path}:{number}: neither a tap record nor a kit transcript line")
            msg = _message(data)
            is_init = isinstance(msg, dict) and msg.get("method") == "initialize" and "id" in msg
            if kit_is is None and is_init:
                kit_is = "client" if entry["from"] == "kit" else "agent"
            side_of = _kit_side(entry, kit_is)
            if side_of is None:
                continue  # before the first initialize: nothing to play
            rid = msg.get("id") if isinstance(msg, dict) else None
            if side_of == "client" and isinstance(msg, dict) and "method" in msg and isinstance(rid, int):
                if is_init and rid <= last_id:
                    runs += 1  # the kit numbers each program's requests afresh: another program
                last_id = rid
            runs = max(runs, 1)
            if runs == run:
                records.append(Record(number, side_of, data, t=_time(entry)))
    if tap is None:
        raise RecordingError(f"{path}: empty")
    if not tap and kit_is is None:
        raise RecordingError(f"{path}: no initialize request in it: not a recorded exchange")
    if not records:
        raise RecordingError(f"{path}: no run {run} in it (it holds {max(runs, 1)})")
    return records


def _time(entry: dict[str, Any]) -> float | None:
    t = entry.get("t")
    return float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) and 0 <= t < float("inf") else None


def _data(entry: dict[str, Any], path: str, number: int) -> bytes:
    if isinstance(entry.get("line"), str):
        try:
            return str(entry["line"]).encode("utf-8")
        except UnicodeEncodeError:
            raise RecordingError(f"{path}:{number}: a lone surrogate in 'line'") from None
    if isinstance(entry.get("base64"), str):
        try:
            return base64.b64decode(entry["base64"], validate=True)
        except (binascii.Error, ValueError):
            raise RecordingError(f"{path}:{number}: 'base64' is not base64") from None
    raise RecordingError(f"{path}:{number}: neither 'line' nor 'base64'")


# -- comparing and mapping ---------------------------------------------------


class Stray(Exception):
    """The live peer left the recorded path."""

    def __init__(self, record: Record | None, came: str, why: str, rid: Any = None) -> None:
        super().__init__(why)
        self.record = record
        self.came = came
        self.why = why
        self.rid = rid  # the stray request's id, when it was a request

    def report(self, path: str, peer: str) -> dict[str, Any]:
        where = f"line {self.record.number} of {path}" if self.record else f"the end of {path}"
        return {
            "at": where,
            "expected": self.record.show() if self.record else "(nothing: the recording ends here)",
            "came": self.came,
            "why": self.why,
            "peer": peer,
        }


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _kind(msg: Any) -> str:
    if not isinstance(msg, dict):
        return "not a JSON-RPC message"
    method = msg.get("method")
    if isinstance(method, str):
        kind = "request" if "id" in msg else "notification"
        if method == "session/update":
            update = (msg.get("params") or {}).get("update") if isinstance(msg.get("params"), dict) else None
            if isinstance(update, dict):
                return f"{kind} {method} {update.get('sessionUpdate')}"
        return f"{kind} {method}"
    return "error answer" if "error" in msg else "answer"


class Replayer:
    """Plays one side (``me``: ``agent`` or ``client``) of ``records`` against a live peer."""

    def __init__(
        self,
        records: Sequence[Record],
        me: str,
        *,
        ignore: Sequence[str] = (),
        loose: bool = False,
        pace: float = 0.0,
    ) -> None:
        self.records = list(records)
        self.me = me
        self.peer = "client" if me == "agent" else "agent"
        self.ignore = frozenset(ignore)
        self.loose = loose
        self.pace = pace  # 0: send as soon as due in order; 1: the recorded gaps too (2: twice as long)
        self.sleep = asyncio.sleep  # replaced by a test
        # (space, json of the recorded value) -> the live value; space: "id:<side that made the request>" or a key
        self.bound: dict[tuple[str, str], Any] = {}
        self.played = 0
        self._lines: _Lines = _Lines(None)

    # ids: a request's id belongs to its sender, an answer's to the other side
    def _id_space(self, msg: dict[str, Any], sender: str) -> str:
        other = "agent" if sender == "client" else "client"
        return f"id:{sender if 'method' in msg else other}"

    def _bind(self, space: str, recorded: Any, live: Any, path: str) -> str | None:
        key = (space, _key(recorded))
        if key in self.bound:
            if not _same(self.bound[key], live):
                return (
                    f"{path}: {_key(live)} where the recording's {_key(recorded)} was bound to {_key(self.bound[key])}"
                )
            return None
        self.bound[key] = live
        return None

    def compare(self, record: Record, live: bytes, size: int) -> str | None:
        """Why ``live`` is not ``record`` (binding ids as it goes), or None when it is."""
        expected = _message(record.data)
        if expected is None or record.truncated:
            if record.truncated:
                return None if live.startswith(record.data) else "differs within the recorded part of a long line"
            return None if live == record.data else "the recorded line is not JSON and the live one differs"
        came = _message(live) if size == len(live) else None
        if came is None:
            return "not JSON" if size == len(live) else f"a line of {size} bytes, longer than the replay reads"
        if self.loose:
            a, b = _kind(expected), _kind(came)
            return None if a == b else f"{b} where the recording has {a}"
        if isinstance(expected, dict) and isinstance(came, dict) and "id" in expected and "id" in came:
            why = self._bind(self._id_space(expected, self.peer), expected["id"], came["id"], "/id")
            if why:
                return why
            expected = {k: v for k, v in expected.items() if k != "id"}
            came = {k: v for k, v in came.items() if k != "id"}
        return self._walk(expected, came, "")

    def _walk(self, expected: Any, came: Any, path: str) -> str | None:
        if isinstance(expected, dict) and isinstance(came, dict):
            keys_e = {k for k in expected if k not in self.ignore}
            keys_c = {k for k in came if k not in self.ignore}
            if keys_e != keys_c:
                missing = sorted(keys_e - keys_c)
                extra = sorted(keys_c - keys_e)
                parts = ([f"missing {missing}"] if missing else []) + ([f"unexpected {extra}"] if extra else [])
                return f"{path or '/'}: {', '.join(parts)}"
            for k in sorted(keys_e):
                sub = f"{path}/{k}"
                if k in BOUND_KEYS and isinstance(expected[k], str) and isinstance(came[k], str):
                    why = self._bind(k, expected[k], came[k], sub)
                else:
                    why = self._walk(expected[k], came[k], sub)
                if why:
                    return why
            return None
        if isinstance(expected, list) and isinstance(came, list):
            if len(expected) != len(came):
                return f"{path or '/'}: {len(came)} items where the recording has {len(expected)}"
            for i, (a, b) in enumerate(zip(expected, came, strict=True)):
                why = self._walk(a, b, f"{path}/{i}")
                if why:
                    return why
            return None
        if _same(expected, came):
            return None
        return f"{path or '/'}: {_short(came)} where the recording has {_short(expected)}"

    def outgoing(self, record: Record) -> bytes:
        """The bytes to send for one of our records: the recorded line with the live ids in it."""
        msg = _message(record.data)
        if msg is None:
            return record.data
        changed = [False]

        def swap(space: str, value: Any) -> Any:
            key = (space, _key(value))
            if key not in self.bound:
                self.bound[key] = value  # ours: the peer must use it as it is
                return value
            live = self.bound[key]
            if not _same(live, value):
                changed[0] = True
            return live

        def walk(value: Any) -> Any:
            if isinstance(value, dict):
                return {
                    k: (swap(k, v) if k in BOUND_KEYS and isinstance(v, str) else walk(v)) for k, v in value.items()
                }
            if isinstance(value, list):
                return [walk(v) for v in value]
            return value

        if not isinstance(msg, dict):
            return record.data
        out = walk(msg)
        if "id" in msg:
            out["id"] = swap(self._id_space(msg, self.me), msg["id"])
        if not changed[0]:
            return record.data
        return json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    async def play(self, reader: Any, writer: Any, timeout: float | None) -> None:
        """Play the whole recording; raise :class:`Stray` where the peer leaves it.

        ``reader`` has ``read(n)``, ``writer`` has ``write`` and ``drain``.
        """
        lines = self._lines = _Lines(reader)
        loop = asyncio.get_running_loop()
        last: tuple[float, float] | None = None  # (recorded time, loop time) of the line last sent or received
        for record in self.records:
            if record.side == self.me:
                if self.pace > 0 and last is not None and record.t is not None:
                    delay = last[1] + (record.t - last[0]) * self.pace - loop.time()
                    if delay > 0:
                        await self.sleep(delay)
                if record.truncated:
                    raise Stray(
                        record,
                        "(nothing: the replay stops here)",
                        "this line was truncated when recorded: it cannot be sent",
                    )
                writer.write(self.outgoing(record) + (b"" if record.partial else b"\n"))
                await writer.drain()
            else:
                got = await lines.next(timeout)
                if got is None:
                    raise Stray(record, "(nothing: the peer's output ended)", f"the {self.peer} stopped early")
                if got is _Lines.TIMEOUT:
                    raise Stray(record, "(nothing)", f"nothing came within {timeout} s")
                assert isinstance(got, tuple)
                data, size = got
                why = self.compare(record, data, size)
                if why is not None:
                    came = _message(data)
                    rid = came.get("id") if isinstance(came, dict) and "method" in came else None
                    raise Stray(record, _show(data, size), why, rid)
            self.played += 1
            if record.t is not None:
                last = (record.t, loop.time())

    async def rest(self, timeout: float | None) -> None:
        """After the recording: the peer's end of input is awaited; anything else it sends is a stray."""
        got = await self._lines.next(timeout)
        if isinstance(got, tuple):
            data, size = got
            came = _message(data)
            rid = came.get("id") if isinstance(came, dict) and "method" in came else None
            raise Stray(None, _show(data, size), "the recording ends here", rid)


def _short(value: Any, width: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 3] + "..."


def _show(data: bytes, size: int) -> str:
    text = data[:SHOW].decode("utf-8", "replace")
    return text + ("..." if size > SHOW else "")


class _Lines:
    """The peer's lines from any ``read(n)`` reader, each kept up to ``MAX_LINE`` bytes (the rest counted)."""

    TIMEOUT = object()

    def __init__(self, reader: Any) -> None:
        self._reader = reader
        self._buffer = b""
        self._eof = False

    async def next(self, timeout: float | None) -> tuple[bytes, int] | object | None:
        """The next line (its kept bytes, its length), None at the end of input, or ``TIMEOUT``."""
        try:
            return await asyncio.wait_for(self._next(), timeout)
        except asyncio.TimeoutError:
            return self.TIMEOUT

    async def _next(self) -> tuple[bytes, int] | None:
        head = bytearray()
        size = 0
        while True:
            if not self._buffer:
                if self._eof:
                    return (bytes(head), size) if size else None  # a last line without its newline
                chunk = await self._reader.read(1 << 16)
                if not chunk:
                    self._eof = True
                    continue
                self._buffer = chunk
            end = self._buffer.find(b"\n")
            body = self._buffer if end < 0 else self._buffer[:end]
            self._buffer = b"" if end < 0 else self._buffer[end + 1 :]
            size += len(body)
            room = MAX_LINE - len(head)
            if room > 0:
                head += body[:room]
            if end >= 0:
                return bytes(head), size


# -- the two modes -----------------------------------------------------------


def _say(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


def _report(stray: Stray, path: str, peer: str) -> dict[str, Any]:
    report = stray.report(path, peer)
    _say(f"replay: the {peer} left the recorded path at {report['at']}: {report['why']}")
    _say(f"  expected: {report['expected']}")
    _say(f"  came:     {report['came']}")
    return report


async def mock_agent(records: Sequence[Record], path: str, options: argparse.Namespace) -> int:
    """Play the agent's side on this process's stdin/stdout."""
    replayer = Replayer(records, "agent", ignore=options.ignore, loose=options.loose, pace=options.pace)
    from .connection import stdio_streams

    reader, writer = await stdio_streams()
    timeout = options.timeout or None
    try:
        await replayer.play(reader, writer, timeout)
        await replayer.rest(None)
    except Stray as stray:
        report = _report(stray, path, "client")
        answer = {
            "jsonrpc": "2.0",
            "id": stray.rid,
            "error": {"code": STRAY_CODE, "message": f"replay: not the recorded exchange: {stray.why}", "data": report},
        }
        with contextlib.suppress(ConnectionError, OSError):
            writer.write(json.dumps(answer, ensure_ascii=False).encode("utf-8") + b"\n")
            await writer.drain()
        return 1
    except (ConnectionError, BrokenPipeError):
        _say("replay: the client closed its input before the recording's end")
        return 1
    finally:
        with contextlib.suppress(Exception):
            writer.close()
    return 0


async def mock_client(records: Sequence[Record], path: str, options: argparse.Namespace, command: list[str]) -> int:
    """Start ``command`` in its own process group and play the client's side against it."""
    from ._connection.process import start_process_group, stop_process_group

    replayer = Replayer(records, "client", ignore=options.ignore, loose=options.loose, pace=options.pace)
    process = await start_process_group(command)
    assert process.stdin is not None and process.stdout is not None
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    received: list[int] = []

    def on_signal(sig: int) -> None:
        received.append(sig)
        if task is not None:
            task.cancel()

    installed = []
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, on_signal, sig)
            installed.append(sig)
    timeout = options.timeout or None
    code = 0
    try:
        await replayer.play(process.stdout, process.stdin, timeout)
        _say(f"replay: the agent followed the recording ({replayer.played} lines)")
    except Stray as stray:
        _report(stray, path, "agent")
        code = 1
    except (ConnectionError, BrokenPipeError):
        _say("replay: the agent closed its input before the recording's end")
        code = 1
    except asyncio.CancelledError:
        if not received:
            raise
    finally:
        await stop_process_group(process, 1.0, 1.0)
        for sig in installed:
            loop.remove_signal_handler(sig)
    return 128 + received[0] if received else code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m acp_types.replay",
        description="Play a recorded ACP exchange: a mock agent on stdio, or (--client) a mock client.",
        epilog="Exit code: 0 the recording was played, 1 the peer left it, 2 bad arguments or recording.",
    )
    parser.add_argument("file", metavar="FILE", help="a tap record (--out) or a conformance kit transcript")
    parser.add_argument("--client", action="store_true", help="play the client against AGENT_CMD (after --)")
    parser.add_argument("--run", type=int, default=1, metavar="N", help="the run of a kit transcript to play (1)")
    parser.add_argument(
        "--ignore", action="append", default=[], metavar="NAME", help="a member not compared, anywhere (repeatable)"
    )
    parser.add_argument("--loose", action="store_true", help="compare only each message's kind and method")
    parser.add_argument(
        "--pace",
        type=float,
        default=0.0,
        metavar="F",
        help="wait the recorded gap times F before each line sent (0: no wait, the default; 1: as recorded)",
    )
    parser.add_argument(
        "--timeout", type=float, default=60.0, metavar="S", help="wait at most S s for each peer line (0: no bound)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in args_in:
        cut = args_in.index("--")
        args_in, command = args_in[:cut], args_in[cut + 1 :]
    args = _parser().parse_args(args_in)
    try:
        if args.client and not command:
            raise RecordingError("--client needs the agent: python -m acp_types.replay --client FILE -- AGENT_CMD...")
        if command and not args.client:
            raise RecordingError("an agent command is for --client only (the mock agent runs on stdin/stdout)")
        if args.run < 1:
            raise RecordingError(f"--run {args.run}: runs count from 1")
        if not 0 <= args.pace < float("inf"):
            raise RecordingError(f"--pace {args.pace}: must be 0 or more")
        if not args.timeout >= 0:
            raise RecordingError(f"--timeout {args.timeout}: must be 0 or more")
        records = load(args.file, args.run)
        if args.client:
            try:
                return asyncio.run(mock_client(records, args.file, args, command))
            except OSError as exc:
                raise RecordingError(f"cannot start {command[0]!r}: {exc.strerror or exc}") from None
        return asyncio.run(mock_agent(records, args.file, args))
    except RecordingError as exc:
        _say(f"replay: {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
