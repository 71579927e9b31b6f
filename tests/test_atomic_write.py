"""write_tree is atomic at the tree level: killed at any point, the folder is entirely old or entirely new."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

from generator import writer

OLD = {f"pkg/m{i}.py": f"old {i}\n" for i in range(40)} | {"pkg/same.py": "same\n", "gone.txt": "orphan\n"}
NEW = {f"pkg/m{i}.py": f"new {i}\n" * 200 for i in range(40)} | {"pkg/same.py": "same\n", "pkg/sub/added.py": "x\n"}

SCRIPT = """
import json, sys
from pathlib import Path
from generator import writer
writer.write_tree(Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text()))
"""


def _snapshot(out: Path) -> dict[str, bytes]:
    return writer.existing_files(out)


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    import json

    out = tmp_path / "generated"
    writer.write_tree(out, OLD)
    (out / "pkg" / "__pycache__").mkdir()
    (out / "pkg" / "__pycache__" / "m0.cpython.pyc").write_bytes(b"cache")
    spec = tmp_path / "new.json"
    spec.write_text(json.dumps(NEW))
    return out, spec


def _state(out: Path) -> str:
    writer.recover(out)  # what the next run does first
    have = _snapshot(out)
    if have == {k: v.encode() for k, v in OLD.items()}:
        return "old"
    if have == {k: v.encode() for k, v in NEW.items()}:
        return "new"
    return f"mixed: {sorted(have)[:5]}"


@pytest.mark.parametrize("after", [0, 1, 5, 20, 41, 42, 43, 44, 1000])
def test_injected_failure_leaves_old_or_new(after: int, tmp_path: Path) -> None:
    out, spec = _setup(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(out), str(spec)],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", writer.FAIL_ENV: str(after)},
        capture_output=True,
        text=True,
    )
    assert "Traceback" not in done.stderr, done.stderr
    state = _state(out)
    assert state in ("old", "new"), state
    if done.returncode == 0:
        assert state == "new"
        # caches are carried over on success (a kill right after the swap may lose them: they are disposable)
        assert (out / "pkg" / "__pycache__" / "m0.cpython.pyc").read_bytes() == b"cache"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["generated", "new.json"]
    writer.write_tree(out, NEW)  # and the next run finishes the job
    assert _state(out) == "new"


def test_sigkill_at_random_moments_leaves_old_or_new(tmp_path: Path) -> None:
    rng = random.Random(1234)
    seen = set()
    for _ in range(12):
        out, spec = _setup(tmp_path)
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT, str(out), str(spec)],
            cwd=ROOT,
            env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        )
        time.sleep(rng.uniform(0.0, 0.25))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        state = _state(out)
        assert state in ("old", "new"), state
        seen.add(state)
        import shutil

        shutil.rmtree(out)
    assert seen  # at least one outcome observed


def test_unchanged_files_keep_their_inode_and_mtime(tmp_path: Path) -> None:
    out = tmp_path / "generated"
    writer.write_tree(out, OLD)
    before = (out / "pkg" / "same.py").stat()
    written, removed = writer.write_tree(out, NEW)
    after = (out / "pkg" / "same.py").stat()
    assert after.st_mtime_ns == before.st_mtime_ns and after.st_ino == before.st_ino
    assert "pkg/same.py" not in written and removed == ["gone.txt"]
    assert writer.write_tree(out, NEW) == ([], [])


def test_fallback_without_renameat2_recovers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "generated"
    writer.write_tree(out, OLD)
    monkeypatch.setattr(writer, "_exchange", lambda a, b: False)
    writer.write_tree(out, NEW)
    assert _state(out) == "new"
    # a run killed between the two renames: the old tree is aside, out is missing
    out.rename(tmp_path / "generated.old-tree")
    writer.recover(out)
    assert _state(out) == "new"
