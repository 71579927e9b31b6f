"""An agent in a child process: :func:`spawn_agent`, its process group, and stopping it on a signal.

The tools that talk to a child over its raw stdio instead of a connection
(proxy, conductor, bridge, replay, the conformance kit) start it with
:func:`start_process_group` and stop it with :func:`stop_process_group`.

Hand-written: the source is runtime/_connection/process.py, which the
generator copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .core import Handler
from .pipes import PipeReader, PipeWriter
from .sides import ClientConnection

__all__ = ["AgentProcess", "spawn_agent", "start_process_group", "stop_process_group"]


class AgentProcess:
    """The agent's process as :func:`spawn_agent` started it, the leader of a process group of its own."""

    def __init__(self, transport: asyncio.SubprocessTransport, exited: asyncio.Future[None]) -> None:
        self._transport = transport
        self._exited = exited
        self.pid: int = transport.get_pid()

    @property
    def returncode(self) -> int | None:
        return self._transport.get_returncode()

    async def wait(self) -> int | None:
        """Wait for the agent's process (not its children) to exit, and return its exit code."""
        await asyncio.shield(self._exited)
        return self.returncode

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the agent's whole process group (the agent alone where there are none)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if hasattr(os, "killpg"):
                os.killpg(self.pid, sig)
            else:  # pragma: no cover - no process groups
                self._transport.send_signal(sig)

    def terminate(self) -> None:
        self.signal_group(signal.SIGTERM)

    def kill(self) -> None:
        self.signal_group(getattr(signal, "SIGKILL", signal.SIGTERM))


class _AgentProtocol(asyncio.SubprocessProtocol):
    """The agent's pipes: its stdout to a :class:`PipeReader`, its stdin from a :class:`PipeWriter`."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.reader = PipeReader()
        self.writer = PipeWriter()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.stdout_closed: asyncio.Future[None] = loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        stdin, stdout = transport.get_pipe_transport(0), transport.get_pipe_transport(1)
        if stdin is not None:
            self.writer.connection_made(stdin)
        if stdout is not None:
            self.reader.connection_made(stdout)

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd == 1:
            self.reader.data_received(data if isinstance(data, bytes) else data.encode())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 0:
            self.writer.connection_lost(exc)
        elif fd == 1:
            self.reader.connection_lost(exc)
            if not self.stdout_closed.done():
                self.stdout_closed.set_result(None)

    def pause_writing(self) -> None:
        self.writer.pause_writing()

    def resume_writing(self) -> None:
        self.writer.resume_writing()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


@contextlib.asynccontextmanager
async def _spawn_agent(
    command: Sequence[str],
    handler: Handler = None,
    *,
    versions: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stderr: int | None = None,
    exit_timeout: float = 1.0,
    **options: Any,
) -> AsyncIterator[ClientConnection[Any, Any, Any]]:
    """Start the agent ``command`` and yield a :class:`ClientConnection` to it over its stdin/stdout.

    The agent runs in a new session (a process group of its own, so a
    Ctrl-C in the terminal reaches only this process, which stops the agent
    on its way out); the process is ``conn.process``. ``options`` are the connection's
    (``strict_capabilities``, the limits). On leaving the block the
    connection is closed and the agent's stdin with it; once the agent has
    exited, or ``exit_timeout`` seconds later, its whole process group gets
    SIGTERM, and SIGKILL if anything is left ``exit_timeout`` seconds after
    that, so processes it started do not outlive it. ``stderr`` is passed to
    the process as is (``None``: this process's stderr; do not pass ``PIPE``,
    nothing would read it). A SIGTERM or SIGHUP to this process while the
    block runs (left at their default) stops the agent the same way, then
    raises ``SystemExit(128 + signal)`` (see :class:`_StopOnSignal`).
    """
    if not command:
        raise ValueError("spawn_agent needs a command")
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.subprocess_exec(
        lambda: _AgentProtocol(loop),
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=True,
    )
    process = AgentProcess(transport, protocol.exited)
    task = asyncio.current_task()
    _SIGNALS.enter(loop, task)
    try:
        conn = ClientConnection(protocol.reader, protocol.writer, handler, versions=versions, **options)
        conn.process = process
        async with conn:
            yield conn
    finally:
        try:
            await _stop(process, protocol, exit_timeout)
        finally:
            transport.close()  # else asyncio complains when it collects the transport
            received = _SIGNALS.leave(loop, task)
        if received is not None:
            raise SystemExit(128 + received)  # as a shell reports a process that SIGTERM / SIGHUP ended


class _StopOnSignal:
    """SIGTERM and SIGHUP, while a :func:`spawn_agent` block runs, leave the block as a normal exit does.

    Python's default for both ends the process at once, leaving the agent's
    process group running (``timeout``, a parent or a closed terminal stop
    a client that way). While at least one block is open, and only where the
    signal still has its default disposition (a handler of the program's own,
    or ``nohup``'s ignore, is left alone), the signal cancels the tasks in the
    blocks; each block then stops its agent as on leaving it and raises
    ``SystemExit(128 + signal)``, so the process exits with the code a shell
    gives one that the signal ended, once its own ``finally`` blocks ran.
    """

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._installed: list[int] = []
        self.received: int | None = None

    def enter(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any] | None) -> None:
        if task is None or threading.current_thread() is not threading.main_thread():
            return  # signal handlers belong to the main thread's loop
        if not self._tasks:
            self.received = None
            for sig in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)):
                if sig is None or signal.getsignal(sig) is not signal.SIG_DFL:
                    continue
                try:
                    loop.add_signal_handler(sig, self._on_signal, sig)
                except (NotImplementedError, RuntimeError, ValueError):  # pragma: no cover - Windows, no loop
                    continue
                self._installed.append(sig)
        self._tasks.add(task)

    def _on_signal(self, sig: int) -> None:
        if self.received is None:
            self.received = sig
            for task in self._tasks:
                task.cancel()

    def leave(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any] | None) -> int | None:
        if task is None or task not in self._tasks:
            return None
        self._tasks.discard(task)
        received = self.received
        if not self._tasks:
            for sig in self._installed:
                loop.remove_signal_handler(sig)  # back to the default disposition
            self._installed.clear()
        return received


_SIGNALS = _StopOnSignal()


if TYPE_CHECKING:  # one overload per version in schema/, generated: acp_types/_connection/_typed.pyi
    from acp_types._connection._typed import spawn_agent as spawn_agent
else:
    spawn_agent = _spawn_agent
    spawn_agent.__name__ = spawn_agent.__qualname__ = "spawn_agent"


async def _stop(process: AgentProcess, protocol: _AgentProtocol, timeout: float) -> None:
    """Close the agent's stdin, give it ``timeout`` to exit, then stop its process group: TERM, then KILL."""
    protocol.writer.close()
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(protocol.exited), timeout)
    process.terminate()  # what it started and left running goes too
    gone = asyncio.gather(protocol.exited, protocol.stdout_closed)
    try:
        await asyncio.wait_for(asyncio.shield(gone), timeout)
    except asyncio.TimeoutError:
        process.kill()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(gone), timeout)


async def start_process_group(
    command: Sequence[str],
    *,
    stderr: int | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    limit: int = 1 << 16,
) -> asyncio.subprocess.Process:
    """Start ``command`` with pipes to its stdin and stdout, the leader of a process group of its own.

    A new session, so that :func:`stop_process_group` reaches whatever it
    starts, and a Ctrl-C in the terminal reaches only this process. ``stderr``
    is passed as is (``None``: this process's stderr; ``PIPE``: the caller
    must read it), ``env`` replaces the environment when given, ``limit`` is
    the stdout reader's buffer limit. Raises ``OSError`` (the command cannot
    be run) or ``ValueError`` (an empty command, a NUL in an argument).
    """
    if not command:
        raise ValueError("no command to start")
    return await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=True,
        limit=limit,
    )


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def stop_process_group(process: asyncio.subprocess.Process, grace: float, timeout: float) -> None:
    """Close the process's stdin, give it ``grace`` seconds to exit, then stop its whole process group.

    For a child started with ``start_new_session=True`` (the leader of its group): SIGTERM to the
    group, whether the leader exited or not, so what it started does not outlive it; SIGKILL to what
    is left of the group ``timeout`` seconds later. The tools that run an agent (proxy, conductor,
    bridge, replay) stop it this way.
    """
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            process.stdin.close()
    if process.returncode is None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(process.wait(), grace)
    pgid = process.pid
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while _group_alive(pgid) and loop.time() < deadline:
        await asyncio.sleep(0.02)  # polling a process group: no event tells when its last member is gone
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(process.wait(), timeout)
