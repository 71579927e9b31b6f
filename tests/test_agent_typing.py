"""mypy --strict over small programs on acp_types.agent: the typed one passes, each marked mistake is caught."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TYPING = ROOT / "tests" / "typing"


def _mypy(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--show-error-codes", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env={"MYPYPATH": str(ROOT / "generated"), "PATH": "/usr/bin:/bin"},
    )


def test_the_typed_agent_passes_mypy_strict() -> None:
    out = _mypy(TYPING / "agent_api.py")
    assert out.returncode == 0, out.stdout


def test_each_marked_mistake_is_a_mypy_error() -> None:
    source = (TYPING / "agent_mistakes.py").read_text().splitlines()
    want = {i + 1: m.group(1) for i, line in enumerate(source) if (m := re.search(r"# E: ([\w-]+)", line))}
    out = _mypy(TYPING / "agent_mistakes.py")
    got = {int(m.group(1)): m.group(2) for m in re.finditer(r":(\d+): error: .*\[([\w-]+)\]", out.stdout)}
    assert got == want, out.stdout
