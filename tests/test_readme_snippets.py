"""tests/readme_snippets.py (run by `make lint`): every python block of README.md type-checks, and a bad one is caught."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from readme_snippets import check, main, snippets  # noqa: E402


def test_every_readme_python_block_passes_mypy_strict_and_pyright() -> None:
    assert check(ROOT / "README.md") == []


def test_a_block_that_does_not_type_check_is_reported_at_its_readme_line(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        "# demo\n\n```python\nfrom acp_types import v2\n\n"
        'v2.InitializeRequest(protocol_version=2, info={"name": "x", "version": "1"})\n```\n\n'
        "```sh\nnot python\n```\n",
        "utf-8",
    )
    assert [line for line, _ in snippets(readme.read_text("utf-8"))] == [4]
    errors = check(readme)
    assert {e.split(": ")[0] + ": " + e.split(": ")[1] for e in errors} == {"README.md:6: mypy", "README.md:6: pyright"}
    assert main([str(readme)]) == 1
    assert main([str(tmp_path / "missing.md")]) == 2
