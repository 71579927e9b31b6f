"""The "at least 2x today's" line target of issue 11: this checkout's lines against the tree the issue was filed on.

``make bench`` (group ``lines``) calls :func:`run`. The earlier package is
taken from git (``git archive FILED_ON generated``) into a temporary folder,
and both packages are measured by ``benchmarks.lines_compare.measure``, each
in its own processes, turn about (two packages named ``acp_types`` cannot
share a process). Times are the best CPU time of the repeats.
"""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from benchmarks import lines_compare

ROOT = Path(__file__).resolve().parents[1]

FILED_ON = "82f06eb"
"""main when issue 11 was filed (the tree of stop 7), whose lines the target calls "today's"."""


def _package_at(rev: str, into: Path) -> Path | str:
    """The ``generated/`` folder of ``rev`` extracted into ``into``, or why it cannot be had."""
    proc = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "generated"], capture_output=True, check=False)
    if proc.returncode:
        return f"git archive {rev} failed: {proc.stderr.decode(errors='replace').strip()[:200]}"
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tar:
        tar.extractall(into, filter="data") if sys.version_info >= (3, 12) else tar.extractall(into)
    return into / "generated"


def run(rounds: int) -> list[tuple[str, float, float]] | str:
    """``[(line, seconds before, seconds after)]``, or the reason the earlier tree is not at hand."""
    with tempfile.TemporaryDirectory(prefix="acp-lines-") as tmp:
        before = _package_at(FILED_ON, Path(tmp))
        if isinstance(before, str):
            return before
        try:
            found = lines_compare.measure(str(before), str(ROOT / "generated"), rounds)
        except RuntimeError as exc:
            return str(exc)
    return [(name, b, a) for name, (b, a, _sdk_b, _sdk_a) in found.items()]
