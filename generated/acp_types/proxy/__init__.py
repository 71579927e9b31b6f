"""Writing an ACP proxy: hooks on the messages going each way; everything else forwarded unchanged.

A proxy sits between a client and an agent (the proxy-chains RFD, "Agent
Extensions via ACP Proxies"). Register a hook on the methods you want to see
or change; every other message passes through as the text it arrived in::

    from acp_types import proxy, v1, v2

    chain = proxy.Proxy("context")

    @chain.on("session/prompt")
    async def add_context(params: v1.PromptRequest | v2.PromptRequest, ctx: proxy.Context) -> object:
        if isinstance(params, v1.PromptRequest):
            params.prompt.insert(0, v1.TextContent(text="Project: x"))
        else:
            params.prompt.insert(0, v2.TextContent(text="Project: x"))
        return params

    chain.main()  # python my_proxy.py: behind a conductor; python my_proxy.py -- AGENT_CMD...: in front of it

How messages go:

- ``Proxy.on(method)``: the request or notification ``method`` on its way
  (``session/prompt`` toward the agent, ``session/update`` and
  ``session/request_permission`` toward the client, ``initialize``...). The
  hook gets the params as the settled version's model (``v1.PromptRequest``
  or ``v2.PromptRequest``; an extension method's as decoded JSON) and a
  :class:`Context`, and returns ``None`` (forward the message unchanged, byte
  for byte), a model or a ``dict`` (forward that instead), :data:`DROP` (a
  notification is not forwarded) or :class:`Reply` (a request is answered
  with its result, not forwarded). Raising :class:`RequestError` answers a
  request with that error instead of forwarding it.
- ``Proxy.on_result(method)``: the success answer to a request ``method`` on
  its way back, as the version's result model; same return values. The answer
  to ``initialize`` keeps its ``protocolVersion``: a hook that changes it gets
  the request answered with an error (the RFD forbids a proxy to change it).
- Hooks of one direction run one at a time, in arrival order, and a message
  that comes after a hooked one waits for it, so order is kept each way. A
  message with no hook, when nothing waits before it, is written at once,
  without being parsed beyond its envelope.
- :meth:`Context.request` and :meth:`Context.notify` send messages of the
  proxy's own to either side (ids of its own; answers come back to it alone).

Where it runs:

- Behind a conductor (``python -m acp_types.conductor -- PROXY -- AGENT``):
  the conductor sends ``proxy/initialize``; the proxy forwards ``initialize``
  to its successor inside ``proxy/successor`` and answers with the
  successor's answer. Messages to and from the successor travel wrapped in
  ``proxy/successor``; the wrapped ``params``/``result`` text is spliced in
  and out unchanged.
- On its own, in front of an agent command (``-- AGENT_CMD...``): the proxy
  spawns the agent in a process group of its own and forwards lines as they
  are (ids kept, unless one of its own requests uses that id); when the client
  or the agent goes, the other is told (every request in flight answered with
  an error) and the agent's group is stopped.

Limits: lines longer than ``max_line_size`` (the connection's 16 MiB) are
skipped as they stream in (a request among them is answered -32600); at most
``max_pending`` requests are in flight each way (more are answered -32603);
a direction holds at most :data:`acp_types.connection.HOLD_LIMIT` bytes of
messages waiting behind a hook before reading that side pauses; writing
waits for the reader on the other side. Batches are refused (-32600).

Hand-written: the source is runtime/proxy/__init__.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import signal
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from acp_types.connection import (
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_MAX_LINE_SIZE,
    HOLD_LIMIT,
    Reader,
    RequestError,
    Writer,
    stdio_streams,
)

from .._connection.process import start_process_group, stop_process_group
from .._wire import decode
from . import _raw
from ._raw import Envelope, Oversized, RawError, id_key

__all__ = ["DROP", "Context", "Proxy", "Reply", "RequestError", "Side"]

log = logging.getLogger("acp_types.proxy")
log.addHandler(logging.NullHandler())

Side = Literal["agent", "client"]
"""Where a message goes: toward the agent (the successor) or toward the client (the predecessor)."""

DEFAULT_MAX_PENDING = 1024
INTERNAL_ERROR = -32603
EXIT_TIMEOUT = 2.0


class _Drop:
    def __repr__(self) -> str:
        return "DROP"


DROP: Any = _Drop()
"""Returned by a hook: the notification is not forwarded."""


class Reply:
    """Returned by a request's hook: answer the request with ``result`` (a model or JSON value); nothing is forwarded.

    With :meth:`Context.request` this lets a hook stand in for the other side,
    or translate a call (send another method, answer with what it returned).
    """

    __slots__ = ("result",)

    def __init__(self, result: Any) -> None:
        self.result = result


_T = TypeVar("_T")
Hook = Callable[[Any, "Context"], Awaitable[Any]]
_F = TypeVar("_F", bound=Callable[..., Awaitable[Any]])


def _version_of(protocol_version: Any) -> str:
    from acp_types import VERSIONS

    if isinstance(protocol_version, int) and not isinstance(protocol_version, bool):
        name = f"v{protocol_version}"
        if name in VERSIONS:
            return name
        if protocol_version > len(VERSIONS):
            return VERSIONS[-1]
    return VERSIONS[0]


def _module(version: str) -> Any:
    return importlib.import_module(f"acp_types.{version}")


def _text(value: Any) -> str:
    """The wire text of what a hook returned (a model by its writer, anything else as JSON)."""
    if isinstance(value, BaseModel):
        from acp_types._runtime import wire_json

        return wire_json(value).decode()
    return _raw.dumps(value)


class Context:
    """What a hook knows and can do: the settled version, the method, and messages of the proxy's own."""

    def __init__(self, proxy: _Engine, method: str, toward: Side) -> None:
        self._engine = proxy
        self.method = method
        """The method of the message the hook sees."""
        self.toward: Side = toward
        """Where the message is going: ``"agent"`` or ``"client"``."""

    @property
    def version(self) -> str:
        """``"v1"`` or ``"v2"``: the version ``initialize`` settled (the requested one until then)."""
        return self._engine.version

    async def request(self, to: Side, method: str, params: Any) -> Any:
        """Send a request of the proxy's own to ``to`` and return its result, as the version's model.

        Raises :class:`RequestError` when it is answered with an error, and
        ``ConnectionError`` when that side goes away first.
        """
        return await self._engine.own_request(to, method, params)

    async def notify(self, to: Side, method: str, params: Any) -> None:
        """Send a notification of the proxy's own to ``to``."""
        await self._engine.side(to).send_call(None, method, _text(params), None)


class Proxy:
    """A proxy: hooks by method, run behind a conductor or in front of an agent command."""

    def __init__(
        self, name: str = "proxy", *, max_line_size: int = DEFAULT_MAX_LINE_SIZE, max_pending: int = DEFAULT_MAX_PENDING
    ) -> None:
        self.name = name
        self.max_line_size = max_line_size
        self.max_pending = max_pending
        self.calls: dict[str, Hook] = {}
        self.results: dict[str, Hook] = {}

    def on(self, method: str) -> Callable[[_F], _F]:
        """Register the decorated ``async def hook(params, ctx)`` for requests and notifications of ``method``."""

        def register(hook: _F) -> _F:
            self.calls[method] = hook
            return hook

        return register

    def on_result(self, method: str) -> Callable[[_F], _F]:
        """Register the decorated ``async def hook(result, ctx)`` for the success answers to ``method``."""

        def register(hook: _F) -> _F:
            self.results[method] = hook
            return hook

        return register

    async def serve(self, reader: Reader, writer: Writer, agent: Sequence[str] | None = None) -> int:
        """Proxy the client on ``reader``/``writer``: to the agent command ``agent``, or, without one, behind a conductor.

        Returns when the client goes away or the agent exits: 0, or 1 when the
        agent could not be started or died while the client was still there.
        """
        engine = _Engine(self, reader, writer)
        return await engine.run(agent)

    async def serve_stdio(self, agent: Sequence[str] | None = None) -> int:
        """:meth:`serve` on this process's stdin and stdout."""
        reader, writer = await stdio_streams()
        return await self.serve(reader, writer, agent)

    def main(self, argv: Sequence[str] | None = None) -> None:
        """The command line: ``PROG`` (behind a conductor) or ``PROG -- AGENT_CMD...`` (on its own); exits."""
        args = list(sys.argv[1:] if argv is None else argv)
        agent: list[str] | None = None
        if "--" in args:
            at = args.index("--")
            args, agent = args[:at], args[at + 1 :]
            if not agent:
                print(f"{self.name}: '--' must be followed by the agent's command", file=sys.stderr)
                raise SystemExit(2)
        usage = f"usage: {sys.argv[0]} [-- AGENT_CMD...]  (a proxy: behind a conductor, or in front of AGENT_CMD)"
        if args in (["-h"], ["--help"]):
            print(usage)
            raise SystemExit(0)
        if args:
            print(f"{usage}\n{self.name}: unexpected: {' '.join(args)}", file=sys.stderr)
            raise SystemExit(2)
        log_to_stderr(log, self.name)
        sys.stdout.flush()
        raise SystemExit(_run_main(self.serve_stdio(agent)))


def log_to_stderr(logger: logging.Logger, name: str) -> None:
    """A command line's warnings (lines it dropped, hooks that failed) as ``name: message`` lines on stderr."""
    if not any(isinstance(h, logging.StreamHandler) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(f"{name}: %(message)s"))
        logger.addHandler(handler)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


def _run_main(main: Awaitable[int]) -> int:
    """Run ``main``, a SIGTERM or SIGHUP cancelling it (its ``finally`` blocks stop the children); its exit code."""

    async def runner() -> int:
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(main)
        received: list[int] = []

        def stop(sig: int) -> None:
            received.append(sig)
            task.cancel()

        for sig in (signal.SIGTERM, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, stop, sig)
        try:
            return await task
        except asyncio.CancelledError:
            if received:
                return 128 + received[0]
            raise

    try:
        return asyncio.run(runner())
    except KeyboardInterrupt:
        return 130


class _Route:
    """A request sent on a pipe and waiting for its answer: whom to answer, or the future of one of our own."""

    __slots__ = ("origin", "rid_text", "rid_key", "method", "back", "future")

    def __init__(
        self,
        origin: _Pipe | None,
        rid_text: str,
        method: str,
        back: _Side | None,
        future: asyncio.Future[Envelope] | None = None,
        rid_key: tuple[bool, Any] = (False, None),
    ) -> None:
        self.origin = origin
        self.rid_text = rid_text
        self.rid_key = rid_key
        self.method = method
        self.back = back
        self.future = future


class _Pipe:
    """One physical connection: its writer, the ids of the requests sent on it and what waits for their answers."""

    def __init__(self, name: str, writer: Writer, keep_ids: bool) -> None:
        self.name = name
        self.writer = writer
        self.keep_ids = keep_ids
        self.pending: dict[tuple[bool, Any], Any] = {}  # a request sent here, by its id -> its route
        self.forwarded: dict[tuple[bool, Any], tuple[_Pipe, str]] = {}  # a request received here -> where it went
        self._next = 0
        self._drain = asyncio.Lock()
        self.closed = False

    def new_id(self, wanted: Any = None, wanted_text: str | None = None) -> tuple[Any, str]:
        if self.keep_ids and wanted_text is not None and id_key(wanted) not in self.pending:
            return wanted, wanted_text
        while True:
            self._next += 1
            if id_key(self._next) not in self.pending:
                return self._next, str(self._next)

    async def send(self, data: bytes) -> None:
        if self.closed:
            raise ConnectionResetError(f"the {self.name} is gone")
        try:
            self.writer.write(data + b"\n")
            async with self._drain:
                await self.writer.drain()
        except (ConnectionError, RuntimeError):
            self.closed = True  # the reader of this pipe is gone: later sends fail at once
            raise


class _Side:
    """A logical side (client or agent): the pipe it is reached through, and whether messages go wrapped."""

    def __init__(self, name: Side, pipe: _Pipe, wrapped: bool, lane: _Lane) -> None:
        self.name: Side = name
        self.pipe = pipe
        self.wrapped = wrapped
        self.lane = lane

    async def send_call(self, rid_text: str | None, method: str, body: str | None, raw: bytes | None) -> None:
        if self.wrapped:
            body, method, raw = _raw.wrapped(method, body), "proxy/successor", None
        if raw is not None:
            await self.pipe.send(raw)
        elif rid_text is None:
            await self.pipe.send(_raw.notification(method, body))
        else:
            await self.pipe.send(_raw.request(rid_text, method, body))


class _Lane:
    """One direction's messages, handled one at a time in arrival order; at most ``limit`` bytes wait."""

    def __init__(self, limit: int = HOLD_LIMIT) -> None:
        self.items: deque[tuple[Callable[[], Awaitable[None]], int]] = deque()
        self.size = 0
        self.limit = limit
        self.turn = asyncio.Lock()
        self.room = asyncio.Event()
        self.worker: asyncio.Task[None] | None = None

    async def put(self, step: Callable[[], Awaitable[None]], size: int, inline: bool) -> None:
        """Run ``step`` now when ``inline`` and nothing waits before it, else queue it (waiting for room)."""
        if inline and not self.items and not self.turn.locked():
            async with self.turn:
                await step()
            return
        while self.items and self.size + size > self.limit:
            self.room.clear()
            await self.room.wait()
        self.items.append((step, size))
        self.size += size
        if self.worker is None:
            self.worker = asyncio.ensure_future(self._work())

    async def _work(self) -> None:
        try:
            while self.items:
                step, size = self.items[0]
                try:
                    async with self.turn:
                        await step()
                except (ConnectionError, RuntimeError) as exc:
                    log.debug("a message was not delivered: %s", exc)
                except Exception:  # never a stalled direction for one message
                    log.exception("a message could not be handled")
                finally:
                    self.items.popleft()
                    self.size -= size
                    self.room.set()
        finally:
            self.worker = None

    def cancel(self) -> None:
        if self.worker is not None:
            self.worker.cancel()


class _Engine:
    """One proxied connection: the client's pipe, the agent's (its own, or the client's behind a conductor)."""

    def __init__(self, proxy: Proxy, reader: Reader, writer: Writer) -> None:
        self.proxy = proxy
        self.reader = reader
        self.up = _Pipe("client", writer, keep_ids=True)
        self.version = _version_of(None)
        self.settled = False
        self.client = _Side("client", self.up, False, _Lane())
        self.agent: _Side | None = None
        self.conducted = False
        self.done: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def side(self, name: Side) -> _Side:
        if name == "client":
            return self.client
        if self.agent is None:
            raise ConnectionError("the proxy has no successor yet (before initialize)")
        return self.agent

    # -- running ------------------------------------------------------------

    async def run(self, command: Sequence[str] | None) -> int:
        process: asyncio.subprocess.Process | None = None
        tasks: list[asyncio.Task[None]] = []
        code = 0
        try:
            if command:
                try:
                    process = await start_process_group(command)
                except OSError as exc:
                    print(f"{self.proxy.name}: cannot start the agent {command[0]!r}: {exc}", file=sys.stderr)
                    return 1
                assert process.stdin is not None and process.stdout is not None
                down = _Pipe("agent", process.stdin, keep_ids=True)
                self.agent = _Side("agent", down, False, _Lane())
                tasks.append(asyncio.ensure_future(self._read(process.stdout, down, "agent")))
            else:
                self.conducted = True
            tasks.append(asyncio.ensure_future(self._read(self.reader, self.up, "client")))
            ended = await self.done
            if ended == "client" and process is not None and process.stdin is not None:
                process.stdin.close()  # the agent sees the end of input and may still answer what it has
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(tasks[0]), DEFAULT_CLOSE_TIMEOUT)
            elif ended == "agent":
                code = 1
                print(f"{self.proxy.name}: the agent exited", file=sys.stderr)
            await self._fail_all(f"the {'agent' if ended == 'agent' else 'client'} went away")
        finally:
            for task in tasks:
                task.cancel()
            for lane in (self.client.lane, self.agent.lane if self.agent else None):
                if lane is not None:
                    lane.cancel()
            if process is not None:
                await _stop(process)
            with contextlib.suppress(Exception):
                self.up.writer.close()
        return code

    async def _fail_all(self, why: str) -> None:
        """Every request in flight is answered with an error (requests of our own fail), before closing."""
        pipes = [self.up] + ([self.agent.pipe] if self.agent is not None and self.agent.pipe is not self.up else [])
        for pipe in pipes:
            routes = list(pipe.pending.values())
            pipe.pending.clear()
            for route in routes:
                if route.future is not None:
                    if not route.future.done():
                        route.future.set_exception(ConnectionResetError(why))
                elif route.origin is not None and not route.origin.closed:
                    with contextlib.suppress(ConnectionError, RuntimeError):
                        await route.origin.send(_raw.error(route.rid_text, INTERNAL_ERROR, why))

    async def _read(self, reader: Reader, pipe: _Pipe, name: Side) -> None:
        try:
            async for line in _raw.lines(reader, self.proxy.max_line_size):
                if isinstance(line, Oversized):
                    await self._oversized(pipe, line)
                    continue
                try:
                    env = _raw.parse(line)
                except RawError as exc:
                    log.warning("from the %s: %s", name, exc)
                    await pipe.send(_raw.error(exc.rid, exc.code, str(exc)))
                    continue
                try:
                    await self._take(pipe, name, env)
                except (ConnectionError, RuntimeError) as exc:
                    if pipe.closed:
                        raise  # the side this line came from is gone too
                    log.debug("from the %s, not delivered: %s", name, exc)  # the other side is going: its reader ends
                except Exception:  # never a dead reader for one message
                    log.exception("a message from the %s could not be handled", name)
        except (ConnectionError, RuntimeError) as exc:
            log.debug("the %s's pipe failed: %s", name, exc)
        finally:
            if not self.done.done():
                self.done.set_result(name)

    async def _oversized(self, pipe: _Pipe, line: Oversized) -> None:
        if line.is_call:
            if line.rid is not None:
                await pipe.send(
                    _raw.error(line.rid, -32600, f"the line is longer than {self.proxy.max_line_size} bytes")
                )
            return
        if line.rid is not None:
            with contextlib.suppress(ValueError, RecursionError):
                rid = _raw.parse(b'{"id":' + line.rid.encode() + b',"result":null}').rid
                route = pipe.pending.pop(id_key(rid), None)
                if route is not None:
                    why = f"the answer is longer than {self.proxy.max_line_size} bytes"
                    if route.future is not None:
                        route.future.set_exception(RequestError(INTERNAL_ERROR, why))
                    elif route.origin is not None:
                        await route.origin.send(_raw.error(route.rid_text, INTERNAL_ERROR, why))

    # -- routing ------------------------------------------------------------

    async def _take(self, pipe: _Pipe, name: Side, env: Envelope) -> None:
        if env.kind in ("result", "error"):
            route = pipe.pending.pop(id_key(env.rid), None)
            if route is None:
                log.warning("an answer from the %s to no request of ours (id %s) dropped", name, env.rid_text)
                return
            if route.future is not None:
                if not route.future.done():
                    route.future.set_result(env)
                return
            assert route.back is not None
            hooked = env.kind == "result" and (route.method in self.proxy.results or route.method == "initialize")
            await route.back.lane.put(lambda: self._answer(route, env), len(env.line), not hooked)
            return
        source = self.client if name == "client" else self.agent
        if self.conducted and name == "client" and env.method == "proxy/successor":
            try:
                env = env.unwrap()
            except RawError as exc:
                if env.kind == "request":
                    await pipe.send(_raw.error(env.rid_text, exc.code, str(exc)))
                return
            if self.agent is None:
                if env.kind == "request":
                    await pipe.send(_raw.error(env.rid_text, INTERNAL_ERROR, "no proxy/initialize yet"))
                return
            source = self.agent
        method = env.method
        if method == "proxy/initialize" or (method == "initialize" and source is self.client):
            if self.conducted and method == "initialize":
                await pipe.send(
                    _raw.error(
                        env.rid_text,
                        INTERNAL_ERROR,
                        f"{self.proxy.name} is a proxy: run it "
                        "under a conductor (proxy/initialize), or give it the agent's command after --",
                    )
                )
                return
            if self.conducted and self.agent is None:
                self.agent = _Side("agent", self.up, True, _Lane())
            method = "initialize"
            if isinstance(env.value, dict):
                self.version = _version_of(env.value.get("protocolVersion"))
        assert source is not None
        target = self.agent if source is self.client else self.client
        if target is None:
            if env.kind == "request":
                await pipe.send(_raw.error(env.rid_text, INTERNAL_ERROR, "no successor before initialize"))
            return
        hooked = method in self.proxy.calls
        if method == "$/cancel_request":
            await target.lane.put(lambda: self._cancel(pipe, env), len(env.line), True)
            return
        await target.lane.put(lambda: self._forward(pipe, source, target, env, method), len(env.line), not hooked)

    async def _forward(self, pipe: _Pipe, source: _Side, target: _Side, env: Envelope, method: str) -> None:
        body = env.body
        raw = env.line if method == env.method and not source.wrapped and pipe is source.pipe else None
        hook = self.proxy.calls.get(method)
        if hook is not None:
            try:
                out = await self._run_hook(
                    hook, method, env.body, target.name, params=True, request=env.kind == "request"
                )
            except RequestError as exc:
                if env.kind == "request":
                    await pipe.send(_raw.answer(env.rid_text or "null", "error", _raw.dumps(exc.to_error())))
                return
            if isinstance(out, Reply):
                if env.kind == "request":
                    await pipe.send(_raw.answer(env.rid_text or "null", "result", _text(out.result)))
                return
            if out is DROP:
                if env.kind == "request":
                    await pipe.send(_raw.error(env.rid_text, INTERNAL_ERROR, f"{self.proxy.name} dropped the request"))
                return
            if out is not None:
                body, raw = _text(out), None
        if env.kind == "notification":
            await target.send_call(None, method, body, raw)
            return
        assert env.rid_text is not None
        out_pipe = target.pipe
        if len(out_pipe.pending) >= self.proxy.max_pending:
            await pipe.send(
                _raw.error(env.rid_text, INTERNAL_ERROR, f"more than {self.proxy.max_pending} requests in flight")
            )
            return
        rid, rid_text = out_pipe.new_id(env.rid, env.rid_text) if not target.wrapped else out_pipe.new_id()
        if rid_text != env.rid_text:
            raw = None
        route = _Route(pipe, env.rid_text, method, source, None, id_key(env.rid))
        out_pipe.pending[id_key(rid)] = route
        pipe.forwarded[id_key(env.rid)] = (out_pipe, rid_text)
        try:
            await target.send_call(rid_text, method, body, raw)
        except (ConnectionError, RuntimeError):
            out_pipe.pending.pop(id_key(rid), None)
            pipe.forwarded.pop(id_key(env.rid), None)
            await pipe.send(_raw.error(env.rid_text, INTERNAL_ERROR, f"the {target.name} is gone"))

    async def _cancel(self, pipe: _Pipe, env: Envelope) -> None:
        rid = env.value.get("requestId") if isinstance(env.value, dict) else None
        found = pipe.forwarded.get(id_key(rid)) if rid is not None else None
        if found is None:
            return  # answered already, or never forwarded
        out_pipe, rid_text = found
        await out_pipe.send(_raw.notification("$/cancel_request", '{"requestId":' + rid_text + "}"))

    async def _answer(self, route: _Route, env: Envelope) -> None:
        origin = route.origin
        assert origin is not None
        origin.forwarded.pop(route.rid_key, None)
        body = env.body or "null"
        raw = env.line if env.rid_text == route.rid_text else None
        kind = env.kind
        if kind == "result" and route.method == "initialize" and isinstance(env.value, dict):
            self.version = _version_of(env.value.get("protocolVersion"))
            self.settled = True
        hook = self.proxy.results.get(route.method) if kind == "result" else None
        if hook is not None:
            try:
                out = await self._run_hook(
                    hook, route.method, env.body, route.back.name if route.back else "client", params=False
                )
            except RequestError as exc:
                out, kind, body, raw = None, "error", _raw.dumps(exc.to_error()), None
            if isinstance(out, Reply):
                out = out.result
            if out is not None and out is not DROP:
                body, raw = _text(out), None
                if route.method == "initialize":
                    before = env.value.get("protocolVersion") if isinstance(env.value, dict) else None
                    after = _raw.parse(b'{"id":0,"result":' + body.encode() + b"}").value
                    if not isinstance(after, dict) or after.get("protocolVersion") != before:
                        kind, raw = "error", None
                        body = _raw.dumps(
                            {"code": INTERNAL_ERROR, "message": "a proxy must not change protocolVersion"}
                        )
        await origin.send(raw if raw is not None else _raw.answer(route.rid_text, kind, body))

    async def _run_hook(
        self, hook: Hook, method: str, text: str | None, toward: Side, *, params: bool, request: bool = False
    ) -> Any:
        module = _module(self.version)
        try:
            value = None if text is None else decode(text)  # the parser's limits: repeated keys, NaN, depth...
            typed = module.parse_params(method, value) if params else module.parse_result(method, value)
        except Exception as exc:  # not this version's shape: the hook does not see it, the peer judges it
            log.warning(
                "%s of %s does not validate as %s (%s): forwarded unchanged",
                "params" if params else "result",
                method,
                self.version,
                str(exc).splitlines()[0],
            )
            return None
        try:
            return await hook(typed, Context(self, method, toward))
        except (RequestError, asyncio.CancelledError):
            raise
        except Exception:  # a hook's bug: logged; a request is answered -32603, anything else goes on unchanged
            log.exception("the hook on %s of %s failed", "params" if params else "result", method)
            if request:
                raise RequestError(INTERNAL_ERROR, f"the proxy {self.proxy.name} failed on {method}") from None
            return None

    async def own_request(self, to: Side, method: str, params: Any) -> Any:
        side = self.side(to)
        pipe = side.pipe
        rid, rid_text = pipe.new_id()
        future: asyncio.Future[Envelope] = asyncio.get_running_loop().create_future()
        pipe.pending[id_key(rid)] = _Route(None, rid_text, method, None, future)
        try:
            await side.send_call(rid_text, method, _text(params), None)
            env = await future
        finally:
            pipe.pending.pop(id_key(rid), None)
        if env.kind == "error":
            err = env.value if isinstance(env.value, dict) else {}
            code = err.get("code")
            code = code if isinstance(code, int) else INTERNAL_ERROR
            raise RequestError(code, str(err.get("message", "")), err.get("data"))
        try:
            return _module(self.version).parse_result(method, env.value)
        except Exception:
            return env.value


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Close the agent's stdin, give it a moment, then stop its whole process group (TERM, then KILL)."""
    await stop_process_group(process, EXIT_TIMEOUT, EXIT_TIMEOUT)
