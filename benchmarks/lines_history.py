"""The "at least 2x today's" line target of issue 11: this checkout's lines against the tree the issue was filed on.

``make bench`` (group ``lines``) calls :func:`run`. The earlier package is
taken from git (``git archive FILED_ON generated``) into a temporary folder,
and both packages are measured by ``benchmarks.lines_compare``'s child, each
in its own processes, turn about (two packages named ``acp_types`` cannot
share a process). Times are the best CPU time of the repeats.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FILED_ON = "82f06eb"
"""main when issue 11 was filed (the tree of stop 7), whose lines the target calls "today's"."""


def _package_at(rev: str, into: Path) -> Path | str:
    """The ``generated/`` folder of ``rev`` extracted into ``into``, or why it cannot be had."""
    proc = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "generated"], capture_output=True, check=False)
    if proc.returncode:
        return f"git archive {rev} failed: {proc.stderr.decode(errors='replace').strip()[:200]}"
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(into, filter="data") if sys.version_info >= (3, 12) else tar.extractall(into)  # noqa: S202
    return into / "generated"


def run(rounds: int) -> list[tuple[str, float, float]] | str:
    """``[(line, seconds before, seconds after)]``, or the reason the earlier tree is not at hand."""
    with tempfile.TemporaryDirectory(prefix="acp-lines-") as tmp:
        before = _package_at(FILED_ON, Path(tmp))
        if isinstance(before, str):
            return before
        packages = {"before": str(before), "after": str(ROOT / "generated")}
        runs: dict[str, list[dict[str, list[float]]]] = {"before": [], "after": []}
        for _ in range(rounds):
            for label, package in packages.items():
                proc = subprocess.run(
                    [sys.executable, "-m", "benchmarks.lines_compare", "--child", package],
                    capture_output=True, text=True, cwd=ROOT, check=False,
                )
                if proc.returncode:
                    return f"the {label} package failed: {proc.stderr.strip()[-300:]}"
                runs[label].append(json.loads(proc.stdout))
    names = list(runs["after"][0])
    return [
        (name, min(r[name][0] for r in runs["before"]), min(r[name][0] for r in runs["after"]))
        for name in names
    ]
