"""The agent's process: spawned in a process group of its own, stopped with the group when either side leaves.

Hand-written: the source is runtime/bridge/_process.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Sequence

from .. import connection
from .._connection.process import start_process_group, stop_process_group
from ._router import Router


async def run(
    command: Sequence[str],
    reader: connection.Reader | None = None,
    writer: connection.Writer | None = None,
    *,
    max_line_size: int = connection.DEFAULT_MAX_LINE_SIZE,
    exit_timeout: float = 1.0,
    stderr: int | None = None,
) -> int:
    """Bridge a client on ``reader``/``writer`` (default: this process's stdio) to the agent ``command``.

    Returns when the client leaves (the agent's stdin is closed, its process
    group stopped after ``exit_timeout``): 0; or when the agent exits first
    (what was in flight answered with an error): its exit code (128 + the
    signal that ended it).
    """
    if reader is None or writer is None:
        reader, writer = await connection.stdio_streams()
    process = await start_process_group(command, stderr=stderr)
    assert process.stdin is not None and process.stdout is not None
    router = Router(reader, writer, process.stdout, process.stdin, max_line_size=max_line_size)

    client_task = asyncio.ensure_future(router.pump(reader, router.client_line, router.client_big, router.to_agent))
    agent_task = asyncio.ensure_future(
        router.pump(process.stdout, router.agent_line, router.agent_big, router.to_client)
    )
    client_left = False
    try:
        done, _ = await asyncio.wait({client_task, agent_task}, return_when=asyncio.FIRST_COMPLETED)
        if client_task in done:
            client_left = True  # the client left: the agent's stdin closes; it gets time to finish
            with contextlib.suppress(Exception):
                process.stdin.close()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(agent_task), exit_timeout)
        else:
            await router.agent_gone()
        for task in (client_task, agent_task):
            if task.done() and not task.cancelled() and task.exception() is not None:
                print(f"acp-bridge: {task.exception()!r}", file=sys.stderr)
    finally:
        for task in (client_task, agent_task):
            task.cancel()
        await _stop(process, exit_timeout)
    code = process.returncode
    if client_left or code is None:
        return 0
    return 128 - code if code < 0 else code


async def _stop(process: asyncio.subprocess.Process, timeout: float) -> None:
    await stop_process_group(process, timeout, timeout)  # what the agent started goes too
