"""Type-check every ```python block of README.md with mypy --strict and pyright (run by `make lint`).

    python tests/readme_snippets.py [README.md]

Each block is checked as a module of its own, against the package in
generated/; an error is reported at its README line. Exit 0 when every block
passes both checkers, 1 otherwise (one line per error), 2 when the README
cannot be read or a checker cannot run. The helpers ``mypy`` and ``pyright``
are shared with the typing tests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "generated"
_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def snippets(text: str) -> list[tuple[int, str]]:
    """The ```python blocks of a Markdown text: (the line of the block's first code line, its code)."""
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


def _env() -> dict[str, str]:
    return {**os.environ, "MYPYPATH": str(GENERATED)}


def mypy(paths: list[Path], *args: str) -> subprocess.CompletedProcess[str]:
    """mypy --strict over ``paths`` (acp_types from generated/)."""
    command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--show-error-codes", *args]
    return subprocess.run(
        [*command, *map(str, paths)], capture_output=True, text=True, cwd=ROOT, timeout=600, env=_env()
    )


def pyright(paths: list[Path], *args: str, strict: bool = True) -> subprocess.CompletedProcess[str]:
    """pyright over ``paths`` (acp_types from generated/, Python 3.10 rules), in strict mode unless told."""
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "pyrightconfig.json"
        settings = {
            "extraPaths": [str(GENERATED)],
            "pythonVersion": "3.10",
            "typeCheckingMode": "strict" if strict else "standard",
        }
        config.write_text(json.dumps(settings), "utf-8")
        command = [sys.executable, "-m", "pyright", "-p", str(config), "--pythonpath", sys.executable, *args]
        return subprocess.run(
            [*command, *map(str, paths)], capture_output=True, text=True, cwd=ROOT, timeout=600, env=_env()
        )


def check(readme: Path) -> list[str]:
    """Every error of either checker in the README's python blocks, as ``README:LINE: checker: message``."""
    blocks = snippets(readme.read_text("utf-8"))
    errors: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        files: dict[str, int] = {}
        for first, code in blocks:
            path = Path(folder) / f"readme_line_{first}.py"
            path.write_text(code, "utf-8")
            files[path.name] = first
        paths = sorted(Path(folder) / name for name in files)
        if not paths:
            return []
        out = mypy(paths)
        for m in re.finditer(r"^(?:.*[/\\])?(readme_line_\d+\.py):(\d+): error: (.*)$", out.stdout, re.M):
            errors.append(f"{readme.name}:{files[m.group(1)] + int(m.group(2)) - 1}: mypy: {m.group(3)}")
        if out.returncode not in (0, 1) or (out.returncode == 1 and not errors):
            raise RuntimeError(f"mypy did not run: {(out.stderr or out.stdout).strip()[:500]}")
        out = pyright(paths, "--outputjson", strict=False)
        try:
            report = json.loads(out.stdout)
        except ValueError:
            raise RuntimeError(f"pyright did not run: {(out.stderr or out.stdout).strip()[:500]}") from None
        for d in report.get("generalDiagnostics", []):
            if d.get("severity") == "error":
                line = files[Path(d["file"]).name] + d["range"]["start"]["line"]
                message = " ".join(str(d.get("message", "")).split())
                errors.append(f"{readme.name}:{line}: pyright: {message}")
    return errors


def main(argv: list[str]) -> int:
    readme = Path(argv[0]) if argv else ROOT / "README.md"
    try:
        errors = check(readme)
    except (OSError, UnicodeDecodeError, RuntimeError, subprocess.TimeoutExpired) as exc:
        print(f"readme_snippets: {exc}", file=sys.stderr)
        return 2
    for error in errors:
        print(error)
    if errors:
        return 1
    print(f"{readme.name}: every python block passes mypy --strict and pyright")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
