"""The session state's public attributes are typed per version: mypy --strict and pyright over tests/typing/state_*.py.

The typed program passes both checkers; each line of state_mistakes.py marked
``# E:`` (a typo on the state, a wrong type) is an error in both, and nothing else is.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TYPING = ROOT / "tests" / "typing"
sys.path.insert(0, str(ROOT / "tests"))

from readme_snippets import mypy, pyright  # noqa: E402


def _marked(path: Path) -> dict[int, str]:
    lines = path.read_text("utf-8").splitlines()
    return {i + 1: m.group(1) for i, line in enumerate(lines) if (m := re.search(r"# E: ([\w-]+)", line))}


def test_the_typed_state_program_passes_both_checkers() -> None:
    out = mypy([TYPING / "state_api.py"])
    assert out.returncode == 0, out.stdout
    out = pyright([TYPING / "state_api.py"])
    assert out.returncode == 0, out.stdout


def test_each_marked_mistake_on_the_state_is_an_error_of_both_checkers() -> None:
    path = TYPING / "state_mistakes.py"
    want = _marked(path)
    out = mypy([path])
    got = {int(m.group(1)): m.group(2) for m in re.finditer(r":(\d+): error: .*\[([\w-]+)\]", out.stdout)}
    assert got == want, out.stdout
    report = json.loads(pyright([path], "--outputjson").stdout)
    lines = {d["range"]["start"]["line"] + 1 for d in report["generalDiagnostics"] if d["severity"] == "error"}
    assert lines == set(want), report["generalDiagnostics"]
