"""The conformance kit's program under test, on the runtime's process and framing helpers.

``_driver.Program`` starts the program with ``_connection.process.start_process_group``
(its own process group), stops it with ``stop_process_group``, and reads its
stdout with the runtime's ``StdioTransport``: a line of exactly ``max_line``
bytes is judged, one byte more is a framing problem and skipped, the next line
is read as usual, and every line is in the transcript.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_types._connection.process import start_process_group, stop_process_group
from acp_types.conformance import _driver

pytestmark = pytest.mark.slow

LIMIT = 2000


def _program(script: str) -> list[str]:
    return [sys.executable, "-c", script]


async def _answer(method: str, params: Any) -> Any:
    return {}


def _notification(size: int) -> bytes:
    """A session/update notification whose line is exactly ``size`` bytes."""
    content = {"type": "text", "text": ""}
    update = {"sessionUpdate": "agent_message_chunk", "content": content}
    base = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}}
    content["text"] = "p" * (size - len(json.dumps(base, separators=(",", ":"))))
    line = json.dumps(base, separators=(",", ":")).encode()
    assert len(line) == size
    return line


def test_a_line_of_exactly_max_line_is_judged_one_byte_more_is_a_framing_problem_and_reading_goes_on() -> None:
    lines = [_notification(LIMIT), _notification(LIMIT + 1), _notification(300)]
    out = b"".join(line + b"\n" for line in lines)
    script = f"import sys\nsys.stdout.buffer.write({out!r})\nsys.stdout.flush()\nsys.stdin.read()\n"

    async def go() -> _driver.Program:
        program = _driver.Program(_program(script), _driver.Transcript(), _answer, version="v1", max_line=LIMIT)
        await program.start()
        try:
            assert await program.wait_for(lambda: len(program.events) == 2, 20)
        finally:
            await program.stop()
        return program

    program = asyncio.run(go())
    assert [e.size for e in program.events] == [LIMIT, 300]
    assert [(p.kind, p.detail) for p in program.problems] == [("framing", f"a line longer than {LIMIT} bytes")]
    texts = [line.text for line in program.transcript.lines]
    assert len(texts) == 3 and texts[1].endswith("...") and len(texts[1]) == 203  # its first 200 bytes
    assert program.problems[0].seq == program.transcript.lines[1].seq


def test_a_line_that_never_ends_is_in_the_transcript_while_the_program_runs() -> None:
    script = "import sys, time\nsys.stdout.write('x' * 50000)\nsys.stdout.flush()\ntime.sleep(60)\n"

    async def go() -> tuple[bool, list[str], bool]:
        program = _driver.Program(_program(script), _driver.Transcript(), _answer, version="v1", max_line=LIMIT)
        await program.start()
        try:
            seen = await program.wait_for(lambda: bool(program.problems), 20)
            running = program.alive and program.process is not None and program.process.returncode is None
            return seen, [line.text for line in program.transcript.lines], running
        finally:
            await program.stop(grace=0.2)

    seen, texts, running = asyncio.run(go())
    assert seen and running
    assert texts == ["x" * 200 + "..."]


def test_what_the_kit_writes_reaches_the_program_one_line_each() -> None:
    script = "import sys\nfor line in sys.stdin: sys.stdout.write(line)\n"  # echoes: each line comes back

    async def go() -> list[Any]:
        program = _driver.Program(_program(script), _driver.Transcript(), _answer, version="v2")
        await program.start()
        try:
            program.notify("a/b", {"n": 1})
            program.send_raw(b'{"jsonrpc":"2.0","method":"c/d"}')
            assert await program.wait_for(lambda: len(program.events) == 2, 20)
            return [e.raw for e in program.events]
        finally:
            await program.stop()

    assert asyncio.run(go()) == [
        {"jsonrpc": "2.0", "method": "a/b", "params": {"n": 1}},
        {"jsonrpc": "2.0", "method": "c/d"},
    ]


def test_start_process_group_gives_a_group_of_its_own_with_env_and_cwd(tmp_path: Path) -> None:
    script = (
        "import os, sys\n"
        "print(os.getpgid(0), os.getpid(), os.getcwd(), os.environ.get('KIT_TEST'), flush=True)\n"
        "sys.stdin.read()\n"
    )

    async def go() -> list[str]:
        process = await start_process_group(_program(script), env={**os.environ, "KIT_TEST": "yes"}, cwd=str(tmp_path))
        assert process.stdout is not None
        try:
            return (await asyncio.wait_for(process.stdout.readline(), 20)).decode().split()
        finally:
            await stop_process_group(process, 1.0, 1.0)
            assert process.returncode is not None

    pgid, pid, cwd, env = asyncio.run(go())
    assert pgid == pid and int(pgid) != os.getpgid(0)
    assert Path(cwd).resolve() == tmp_path.resolve() and env == "yes"


def test_start_process_group_refuses_an_empty_command() -> None:
    with pytest.raises(ValueError, match="no command"):
        asyncio.run(start_process_group([]))


def test_stopping_the_program_ends_what_it_started(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import signal, time;"
        " signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)'])\n"
        f"open({str(marker)!r}, 'w').write(str(child.pid))\n"
        "print('{}', flush=True)\n"
        "time.sleep(60)\n"
    )

    async def go() -> bool:
        program = _driver.Program(_program(script), _driver.Transcript(), _answer, version="v1")
        await program.start()
        assert await program.wait_for(lambda: program.transcript.seq >= 1, 20)
        child = int(marker.read_text())
        assert not _gone(child)
        await program.stop(grace=0.3)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while not _gone(child) and loop.time() < deadline:
            await asyncio.sleep(0.02)  # no event says when a process that is not ours is gone
        return _gone(child)

    assert asyncio.run(go())  # it ignored TERM: the group's KILL ended it


def _gone(pid: int) -> bool:
    """No such process, or a zombie (its parent was killed and nothing in the container reaps it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"
