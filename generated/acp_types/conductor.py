"""The conductor: ``python -m acp_types.conductor -- PROXY_CMD... -- AGENT_CMD...``, one agent to its client.

It spawns the chain (each member in a process group of its own, its stderr
this process's), and routes by the proxy-chains RFD:

- The client's messages go to the first member; a member's messages to its
  predecessor (the client, or the proxy before it, wrapped in
  ``proxy/successor``); a proxy's ``proxy/successor`` to its successor,
  unwrapped. Answers go back to whoever asked, on each hop with the ids of
  that hop. The text of ``params``, ``result`` and ``error`` is never
  re-encoded: it is spliced into the next envelope as it came.
- ``initialize`` is sent as ``proxy/initialize`` to every member that has a
  successor and as ``initialize`` to the last. A proxy must not change
  ``protocolVersion``: an ``initialize`` it forwards with another version is
  refused (-32602), and an answer it gives with a version other than its
  successor's reaches the client as an error (-32603), never as a result.
- ``$/cancel_request`` is translated hop by hop to the id of that hop.

Bounds: lines longer than ``--max-line-size`` (the connection's 16 MiB) are
skipped as they stream in; at most 1024 requests are in flight on each hop
(more are answered -32603); a message is written before the next one is read
from the same member, so a member that floods is read only as fast as its
reader reads (memory stays at a line or two per member). A silent member
does not hang the client past what it asked for: an ``initialize`` not
answered within ``--init-timeout`` seconds, and a request the client
cancelled (by ``$/cancel_request``, or a prompt by ``session/cancel``) still
unanswered ``--cancel-grace`` seconds later, are answered with an error by
the conductor (a late answer is dropped); any other request waits for the
chain or for the client to leave.

Teardown: when the client closes stdin, every member's stdin is closed and
the members get a moment to exit; when any member exits (or closes its
stdout), every request the client has in flight is answered with an error
(-32603 naming the member), and the conductor stops. Either way every
member's process group gets SIGTERM, then SIGKILL, so nothing a member
started outlives the chain; SIGTERM and SIGHUP to the conductor do the same.
Exit code: 0 when the client left, 1 when a member died or could not start,
2 for a bad command line.

Hand-written: the source is runtime/conductor.py, which the generator copies
into the package unchanged.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from ._connection.process import start_process_group, stop_process_group
from .connection import DEFAULT_MAX_LINE_SIZE, Reader, stdio_streams
from .proxy import DEFAULT_MAX_PENDING, EXIT_TIMEOUT, _Pipe, _raw, _run_main, log_to_stderr
from .proxy._raw import Envelope, Oversized, RawError, id_key

__all__ = ["Conductor", "main"]

log = logging.getLogger("acp_types.conductor")
log.addHandler(logging.NullHandler())

INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
DEFAULT_INIT_TIMEOUT = 30.0
DEFAULT_CANCEL_GRACE = 10.0


class _Route:
    """A request the conductor sent on a hop: who asked (endpoint and id), and its timer."""

    __slots__ = ("origin", "rid_text", "rid_key", "method", "session", "timer", "target", "nid_key")

    def __init__(self, origin: _End, rid_text: str, rid_key: Any, method: str, target: _End, nid_key: Any) -> None:
        self.origin = origin
        self.rid_text = rid_text
        self.rid_key = rid_key
        self.method = method
        self.session: Any = None
        self.timer: asyncio.TimerHandle | None = None
        self.target = target
        self.nid_key = nid_key


class _End:
    """One endpoint: the client (index 0) or a member of the chain (1..n, the last being the agent)."""

    def __init__(self, index: int, name: str, pipe: _Pipe, is_proxy: bool) -> None:
        self.index = index
        self.name = name
        self.pipe = pipe
        self.is_proxy = is_proxy
        self.sent_version: Any = None  # protocolVersion of the (proxy/)initialize sent to it
        self.answered_version: Any = None  # protocolVersion of its answer to it
        self.process: asyncio.subprocess.Process | None = None


class Conductor:
    """A chain of members (``commands``: proxies first, the agent last) served to one client."""

    def __init__(
        self,
        commands: Sequence[Sequence[str]],
        *,
        init_timeout: float = DEFAULT_INIT_TIMEOUT,
        cancel_grace: float = DEFAULT_CANCEL_GRACE,
        max_line_size: int = DEFAULT_MAX_LINE_SIZE,
        max_pending: int = DEFAULT_MAX_PENDING,
    ) -> None:
        if not commands or any(not command for command in commands):
            raise ValueError("the conductor needs at least the agent's command, and no empty one")
        self.commands = [list(command) for command in commands]
        self.init_timeout = init_timeout
        self.cancel_grace = cancel_grace
        self.max_line_size = max_line_size
        self.max_pending = max_pending
        self.ends: list[_End] = []
        self._done: asyncio.Future[tuple[str, int]] | None = None

    async def start(self) -> bool:
        """Spawn the members (each in a new session: a process group of its own); ``False`` with a line when one cannot start."""
        if len(self.ends) > 1:
            return True
        last = len(self.commands)
        self.ends = [_End(0, "the client", _Pipe("client", _NoWriter(), keep_ids=True), False)]
        for index, command in enumerate(self.commands, 1):
            try:
                process = await start_process_group(command)
            except OSError as exc:
                print(f"conductor: cannot start member {index} ({command[0]!r}): {exc}", file=sys.stderr)
                await asyncio.gather(*(self._stop(end) for end in self.ends[1:]), return_exceptions=True)
                self.ends = []
                return False
            assert process.stdin is not None
            role = "proxy" if index < last else "agent"
            end = _End(index, f"member {index} ({role}: {command[0]})", _Pipe(role, process.stdin, True), index < last)
            end.process = process
            self.ends.append(end)
        return True

    async def serve(self, reader: Reader, writer: Any) -> int:
        """Run the chain for the client on ``reader``/``writer``; the exit code (see the module's docstring)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[tuple[str, int]] = loop.create_future()
        self._done = done
        if not await self.start():
            return 1
        client = self.ends[0]
        client.pipe.writer = writer
        tasks: list[asyncio.Task[None]] = []
        code = 0
        try:
            for end in self.ends[1:]:
                assert end.process is not None and end.process.stdout is not None
                tasks.append(asyncio.ensure_future(self._read(end.process.stdout, end)))
                tasks.append(asyncio.ensure_future(self._watch(end, end.process)))
            tasks.append(asyncio.ensure_future(self._read(reader, client)))
            why, member = await done
            if why == "client":
                for end in self.ends[1:]:
                    if end.process is not None and end.process.stdin is not None:
                        end.process.stdin.close()
                exits = [end.process.wait() for end in self.ends[1:] if end.process is not None]
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.gather(*exits), EXIT_TIMEOUT)
            else:
                code = 1
                name = self.ends[member].name
                print(f"conductor: {name} {why}; stopping the chain", file=sys.stderr)
                await self._fail_client(f"the chain stopped: {name} {why}")
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*(self._stop(end) for end in self.ends[1:]), return_exceptions=True)
            with contextlib.suppress(Exception):
                writer.close()
        return code

    async def _stop(self, end: _End) -> None:
        process = end.process
        if process is None:
            return
        await stop_process_group(process, 0.5, EXIT_TIMEOUT)

    def _end(self, why: str, index: int) -> None:
        if self._done is not None and not self._done.done():
            self._done.set_result((why, index))

    async def _watch(self, end: _End, process: asyncio.subprocess.Process) -> None:
        code = await process.wait()
        self._end(f"exited with code {code}", end.index)

    async def _fail_client(self, why: str) -> None:
        """Every request the client has in flight is answered with an error."""
        client = self.ends[0]
        for end in self.ends[1:]:
            routes = [route for route in end.pipe.pending.values() if route.origin is client]
            for route in routes:
                self._forget(route)
                with contextlib.suppress(ConnectionError, RuntimeError):
                    await client.pipe.send(_raw.error(route.rid_text, INTERNAL_ERROR, why))

    # -- reading and routing ------------------------------------------------

    async def _read(self, reader: Reader, end: _End) -> None:
        try:
            async for line in _raw.lines(reader, self.max_line_size):
                if isinstance(line, Oversized):
                    await self._oversized(end, line)
                    continue
                try:
                    env = _raw.parse(line)
                except RawError as exc:
                    log.warning("from %s: %s", end.name, exc)
                    await end.pipe.send(_raw.error(exc.rid, exc.code, str(exc)))
                    continue
                try:
                    await self._take(end, env)
                except (ConnectionError, RuntimeError) as exc:
                    if end.pipe.closed:
                        raise  # the sender is gone too
                    log.debug("from %s, not delivered: %s", end.name, exc)  # a member going: its watch stops the chain
                except Exception:  # never a dead reader for one message
                    log.exception("a message from %s could not be handled", end.name)
        except (ConnectionError, RuntimeError) as exc:
            log.debug("%s: %s", end.name, exc)
        finally:
            self._end("closed its output" if end.index else "client", end.index)

    async def _oversized(self, end: _End, line: Oversized) -> None:
        too_long = f"the line is longer than {self.max_line_size} bytes"
        if line.is_call:
            if line.rid is not None:
                await end.pipe.send(_raw.error(line.rid, -32600, too_long))
            return
        if line.rid is None:
            return
        try:
            rid = _raw.parse(b'{"id":' + line.rid.encode() + b',"result":null}').rid
        except RawError:
            return  # an id that is not JSON answers nothing of ours
        route = end.pipe.pending.get(id_key(rid))
        if route is not None:
            self._forget(route)
            await route.origin.pipe.send(
                _raw.error(route.rid_text, INTERNAL_ERROR, "the answer was dropped: " + too_long)
            )

    async def _take(self, end: _End, env: Envelope) -> None:
        if env.kind in ("result", "error"):
            route = end.pipe.pending.get(id_key(env.rid))
            if route is None:
                log.warning("an answer from %s to no request (id %s) dropped", end.name, env.rid_text)
                return
            self._forget(route)
            await self._answer(route, env)
            return
        wrapped_in = False
        if end.index and env.method == "proxy/successor":
            if not end.is_proxy:
                if env.kind == "request":
                    await end.pipe.send(_raw.error(env.rid_text, -32601, "the agent has no successor"))
                return
            try:
                env = env.unwrap()
            except RawError as exc:
                if env.kind == "request":
                    await end.pipe.send(_raw.error(env.rid_text, exc.code, str(exc)))
                return
            wrapped_in = True
        if env.method == "$/cancel_request":
            await self._cancel(end, env)
            return
        if wrapped_in:
            target, wrap = self.ends[end.index + 1], False
        elif end.index == 0:
            target, wrap = self.ends[1], False
        else:
            target, wrap = self.ends[end.index - 1], end.index > 1
        method = env.method
        downstream = target.index > end.index
        if method == "proxy/initialize" and end.index == 0:
            if env.kind == "request":
                await end.pipe.send(
                    _raw.error(env.rid_text, -32601, "this conductor is a terminal agent: send initialize")
                )
            return
        if method == "initialize" and downstream:
            version = env.value.get("protocolVersion") if isinstance(env.value, dict) else None
            if end.index and version != end.sent_version:
                if env.kind == "request":
                    message = f"a proxy must not change protocolVersion ({end.sent_version!r} -> {version!r})"
                    await end.pipe.send(_raw.error(env.rid_text, -32602, message))
                return
            target.sent_version = version
            if target.is_proxy:
                method = "proxy/initialize"
        if method == "session/cancel" and end.index == 0 and isinstance(env.value, dict):
            self._grace_session(env.value.get("sessionId"))
        raw = env.line if not wrapped_in and not wrap and method == env.method else None
        if env.kind == "notification":
            await self._send(target, None, method, env.body, raw, wrap)
            return
        assert env.rid_text is not None
        if len(target.pipe.pending) >= self.max_pending:
            await end.pipe.send(
                _raw.error(env.rid_text, INTERNAL_ERROR, f"more than {self.max_pending} requests in flight")
            )
            return
        nid, nid_text = target.pipe.new_id(env.rid, env.rid_text)
        if nid_text != env.rid_text:
            raw = None
        route = _Route(end, env.rid_text, id_key(env.rid), method, target, id_key(nid))
        if end.index == 0 and method == "session/prompt" and isinstance(env.value, dict):
            route.session = env.value.get("sessionId")
        target.pipe.pending[route.nid_key] = route
        end.pipe.forwarded[route.rid_key] = (target.pipe, nid_text)
        if method in ("initialize", "proxy/initialize") and end.index == 0:
            route.timer = asyncio.get_running_loop().call_later(
                self.init_timeout,
                self._expire,
                route,
                f"the chain did not answer initialize within {self.init_timeout:g} s",
            )
        try:
            await self._send(target, nid_text, method, env.body, raw, wrap)
        except (ConnectionError, RuntimeError):
            self._forget(route)
            await end.pipe.send(_raw.error(env.rid_text, INTERNAL_ERROR, f"{target.name} is gone"))

    async def _send(
        self, target: _End, rid_text: str | None, method: str, body: str | None, raw: bytes | None, wrap: bool
    ) -> None:
        if wrap:
            body, method, raw = _raw.wrapped(method, body), "proxy/successor", None
        if raw is not None:
            await target.pipe.send(raw)
        elif rid_text is None:
            await target.pipe.send(_raw.notification(method, body))
        else:
            await target.pipe.send(_raw.request(rid_text, method, body))

    def _forget(self, route: _Route) -> None:
        route.target.pipe.pending.pop(route.nid_key, None)
        route.origin.pipe.forwarded.pop(route.rid_key, None)
        if route.timer is not None:
            route.timer.cancel()
            route.timer = None

    async def _answer(self, route: _Route, env: Envelope) -> None:
        kind, body = env.kind, env.body or "null"
        raw = env.line if env.rid_text == route.rid_text else None
        target = route.target
        if kind == "result" and route.method in ("initialize", "proxy/initialize"):
            version = env.value.get("protocolVersion") if isinstance(env.value, dict) else None
            target.answered_version = version
            successor = self.ends[target.index + 1] if target.is_proxy else None
            if (
                successor is not None
                and successor.answered_version is not None
                and version != successor.answered_version
            ):
                kind, raw = "error", None
                message = f"{target.name} changed protocolVersion ({successor.answered_version!r} -> {version!r})"
                body = _raw.dumps({"code": INTERNAL_ERROR, "message": message})
                print(f"conductor: {message}", file=sys.stderr)
        await route.origin.pipe.send(raw if raw is not None else _raw.answer(route.rid_text, kind, body))

    async def _cancel(self, end: _End, env: Envelope) -> None:
        rid = env.value.get("requestId") if isinstance(env.value, dict) else None
        found = end.pipe.forwarded.get(id_key(rid)) if rid is not None else None
        if found is None:
            return
        pipe, nid_text = found
        await pipe.send(_raw.notification("$/cancel_request", '{"requestId":' + nid_text + "}"))
        if end.index == 0:
            for target in self.ends[1:]:
                if target.pipe is pipe:
                    route = target.pipe.pending.get(_key(nid_text))
                    if route is not None:
                        self._grace(route)

    def _grace_session(self, session: Any) -> None:
        if session is None:
            return
        for route in list(self.ends[1].pipe.pending.values()):
            if route.session == session and route.origin is self.ends[0]:
                self._grace(route)

    def _grace(self, route: _Route) -> None:
        if route.timer is None:
            why = f"cancelled, and the chain did not answer within {self.cancel_grace:g} s"
            route.timer = asyncio.get_running_loop().call_later(self.cancel_grace, self._expire, route, why)

    def _expire(self, route: _Route, why: str) -> None:
        route.timer = None
        if route.target.pipe.pending.get(route.nid_key) is not route:
            return
        self._forget(route)
        code = REQUEST_CANCELLED if why.startswith("cancelled") else INTERNAL_ERROR
        print(f"conductor: {why} (request {route.rid_text}, {route.method})", file=sys.stderr)
        task = asyncio.ensure_future(route.origin.pipe.send(_raw.error(route.rid_text, code, why)))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())


class _NoWriter:
    """The client's writer until :meth:`Conductor.serve` has one."""

    def write(self, data: bytes) -> None:
        raise ConnectionResetError("no client yet")

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None


def _key(rid_text: str) -> Any:
    return id_key(_raw.parse(b'{"id":' + rid_text.encode() + b',"result":null}').rid)


def _commands(args: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    """The options before the first ``--``, and the commands between the ``--`` that follow.

    A member given as one word with a space in it is split as a shell would
    (``shlex``), so a member's own command line may hold ``--``:
    ``-- "python proxy.py -- python agent.py"``.
    """
    if "--" not in args:
        return list(args), []
    at = list(args).index("--")
    options, rest = list(args[:at]), list(args[at + 1 :])
    commands: list[list[str]] = [[]]
    for arg in rest:
        if arg == "--":
            commands.append([])
        else:
            commands[-1].append(arg)
    for i, command in enumerate(commands):
        if len(command) == 1 and any(c.isspace() for c in command[0]):
            try:
                commands[i] = shlex.split(command[0])
            except ValueError as exc:  # an unclosed quote
                raise _Usage(f"member {i + 1}: {exc}") from None
    return options, commands


class _Usage(ValueError):
    """A command line that cannot be read."""


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m acp_types.conductor [OPTIONS] -- PROXY_CMD... [-- PROXY_CMD...] -- AGENT_CMD...``."""
    args = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="python -m acp_types.conductor",
        usage="%(prog)s [OPTIONS] -- PROXY_CMD... [-- PROXY_CMD...] -- AGENT_CMD...  (or each member as one quoted word)",
        description="Serve a chain of ACP proxies in front of an agent as one agent on stdin/stdout.",
    )
    parser.add_argument(
        "--init-timeout",
        type=float,
        default=DEFAULT_INIT_TIMEOUT,
        metavar="S",
        help="answer initialize with an error when the chain has not within S seconds (default %(default)s)",
    )
    parser.add_argument(
        "--cancel-grace",
        type=float,
        default=DEFAULT_CANCEL_GRACE,
        metavar="S",
        help="answer a cancelled request with an error when the chain has not within S seconds (default %(default)s)",
    )
    parser.add_argument(
        "--max-line-size",
        type=int,
        default=DEFAULT_MAX_LINE_SIZE,
        metavar="BYTES",
        help="skip longer lines (default %(default)s)",
    )
    try:
        options, commands = _commands(args)
    except _Usage as exc:
        print(f"conductor: {exc}", file=sys.stderr)
        return 2
    parsed = parser.parse_args(options)
    if not commands or any(not command for command in commands):
        parser.print_usage(sys.stderr)
        print(
            "conductor: give at least the agent's command after --, and no empty command between two --",
            file=sys.stderr,
        )
        return 2
    if parsed.init_timeout <= 0 or parsed.cancel_grace <= 0 or parsed.max_line_size < 1024:
        print("conductor: timeouts must be positive and --max-line-size at least 1024", file=sys.stderr)
        return 2
    log_to_stderr(log, "conductor")
    conductor = Conductor(
        commands, init_timeout=parsed.init_timeout, cancel_grace=parsed.cancel_grace, max_line_size=parsed.max_line_size
    )

    async def run() -> int:
        if not await conductor.start():
            return 1
        reader, writer = await stdio_streams()
        return await conductor.serve(reader, writer)

    return _run_main(run())


if __name__ == "__main__":
    sys.stdout.flush()
    raise SystemExit(main())
