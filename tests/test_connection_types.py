"""A connection is typed for its version: mypy --strict over tests/typing/connection_types.py.

Its ``peer``, the ``initialize()`` result, ``peer_initialize`` and ``handler``
have the settled version's types when the connection speaks one version,
and unions to narrow (``isinstance`` or ``as_version``) when it speaks both;
a misspelled peer method or the other version's model is an error.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import pytest

from acp_types import connection, v1, v2

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "typing" / "connection_types.py"


def test_mypy_strict_sees_the_settled_version_s_types_and_catches_each_marked_mistake(tmp_path: Path) -> None:
    source = PROGRAM.read_text().splitlines()
    want_errors = {i + 1: {m.group(1)} for i, line in enumerate(source) if (m := re.search(r"# E: ([\w-]+)", line))}
    want_notes = {i + 1: m.group(1) for i, line in enumerate(source) if (m := re.search(r"# N: (\S+)", line))}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--show-error-codes",
            "--cache-dir",
            str(tmp_path),
            str(PROGRAM),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env={"MYPYPATH": str(ROOT / "generated"), "PATH": "/usr/bin:/bin"},
    )
    errors: dict[int, set[str]] = {}
    for m in re.finditer(r":(\d+): error: .*\[([\w-]+)\]", out.stdout):
        errors.setdefault(int(m.group(1)), set()).add(m.group(2))
    notes = {int(m.group(1)): m.group(2) for m in re.finditer(r':(\d+): note: Revealed type is "([^"]+)"', out.stdout)}
    assert errors == want_errors, out.stdout
    assert notes == want_notes, out.stdout


def test_as_version_is_the_connection_when_that_version_is_settled_and_refuses_otherwise() -> None:
    async def main() -> None:
        reader, writer = asyncio.StreamReader(), _NullWriter()
        both = connection.ClientConnection(reader, writer)
        assert both.as_version("v2") is both  # before initialize: the first version listed
        with pytest.raises(ValueError, match="speaks ACP v2, not v1"):
            both.as_version("v1")
        only = connection.ClientConnection(reader, writer, versions=("v1",))
        with pytest.raises(ValueError, match="does not speak ACP v2"):
            only.as_version("v2")
        assert isinstance(both.peer, v2.AgentPeer) and isinstance(only.peer, v1.AgentPeer)

    asyncio.run(main())


def test_spawn_agent_keeps_its_name_for_help() -> None:
    assert connection.spawn_agent.__name__ == "spawn_agent"
    assert "Start the agent" in (connection.spawn_agent.__doc__ or "")


class _NullWriter:
    def write(self, data: bytes) -> None:
        pass

    async def drain(self) -> None:
        pass

    def close(self) -> None:
        pass
