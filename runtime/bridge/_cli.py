"""The command line: ``python -m acp_types.bridge -- AGENT_CMD...`` (or ``--agent``, ``--table``).

Hand-written: the source is runtime/bridge/_cli.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import asyncio
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import connection
from ._process import run
from ._rules import render_table

USAGE = """usage: python -m acp_types.bridge [--max-line-size BYTES] -- AGENT_CMD...
       python -m acp_types.bridge [--max-line-size BYTES] --agent 'AGENT_CMD...'
       python -m acp_types.bridge --table CROSSVERSION_JSON

Serves one ACP client (v1 or v2) on stdin/stdout and speaks to the agent
AGENT_CMD in the version it supports, translating between v1 and v2.
--agent takes the command as one shell-quoted word, for a command line that
has its own -- (the last member of a conductor's chain:
python -m acp_types.conductor -- PROXY... -- python -m acp_types.bridge --agent 'AGENT...')."""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return 0
    if args[:1] == ["--table"]:
        if len(args) != 2:
            print("acp-bridge: --table takes the path of crossversion.json", file=sys.stderr)
            return 2
        try:
            sys.stdout.write(render_table(Path(args[1])))
        except (OSError, ValueError) as exc:
            print(f"acp-bridge: cannot read {args[1]}: {exc}", file=sys.stderr)
            return 2
        return 0
    max_line = connection.DEFAULT_MAX_LINE_SIZE
    if args[:1] == ["--max-line-size"]:
        try:
            max_line = int(args[1])
            assert max_line > 0
        except (IndexError, ValueError, AssertionError):
            print("acp-bridge: --max-line-size takes a positive number of bytes", file=sys.stderr)
            return 2
        args = args[2:]
    if args[:1] == ["--agent"] and len(args) == 2:  # one word for the command: a member of a conductor's chain
        try:
            args = ["--", *shlex.split(args[1])]
        except ValueError as exc:
            print(f"acp-bridge: --agent: {exc}", file=sys.stderr)
            return 2
    if args[:1] != ["--"] or len(args) < 2:
        print(USAGE, file=sys.stderr)
        return 2

    async def go() -> int:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        got: list[int] = []

        def stop(sig: int) -> None:
            got.append(sig)
            if task is not None:
                task.cancel()

        for sig in (signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, stop, sig)
        try:
            return await run(args[1:], max_line_size=max_line)
        except asyncio.CancelledError:
            if got:
                return 128 + got[0]
            raise

    try:
        return asyncio.run(go())
    except (FileNotFoundError, PermissionError) as exc:
        print(f"acp-bridge: cannot start the agent: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
