"""The output-folder contract: the generator writes only into a folder it owns, one run at a time.

Owned means absent, empty, holding the marker every run writes, or holding
only files the generator writes. Anything else is refused (UsageError, exit 2)
with every file left as it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

from generator import writer
from generator.errors import UsageError

ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
TREE = {f"pkg/m{i}.py": f"# generated {i}\n" * 50 for i in range(30)} | {"docs/a.md": "doc\n"}
OTHER = {f"pkg/m{i}.py": f"# other {i}\n" * 80 for i in range(30)} | {"docs/b.md": "b\n"}
WRITE = """
import json, sys
from pathlib import Path
from generator import writer
writer.write_tree(Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text()))
"""


def _all_bytes(folder: Path) -> dict[str, bytes | str]:
    """Every entry under folder, symlinks as their target text: what 'touches nothing' compares."""
    out: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            out[rel] = path.read_bytes()
        else:
            out[rel] = "dir"
    return out


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "generator", "--schema", str(ROOT / "schema"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**ENV, **(env or {})},
    )


def _foreign(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    (notes / ".git").mkdir(parents=True)
    (notes / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (notes / "todo.txt").write_bytes(b"buy milk \x00\xff")
    (notes / "pkg").mkdir()
    (notes / "pkg" / "m0.py").write_text("# mine, at a generated path\n")
    return notes


def test_a_folder_of_other_files_is_refused_and_left_alone(tmp_path: Path) -> None:
    notes = _foreign(tmp_path)
    before = _all_bytes(tmp_path)
    with pytest.raises(UsageError, match="not a folder the generator wrote"):
        writer.write_tree(notes, TREE)
    assert _all_bytes(tmp_path) == before


def test_the_command_line_refuses_a_foreign_folder_with_exit_2(tmp_path: Path) -> None:
    _foreign(tmp_path)
    before = _all_bytes(tmp_path)
    done = _cli("generate", "--out", "notes", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "not a folder the generator wrote" in done.stderr and "nothing was written" in done.stderr
    assert _all_bytes(tmp_path) == before
    # the working folder itself (it holds notes/) is just as foreign
    dot = _cli("check", "--out", ".", cwd=tmp_path)
    assert dot.returncode == 2, dot.stderr
    assert _all_bytes(tmp_path) == before


def test_new_empty_marked_and_unmarked_generated_trees_are_written(tmp_path: Path) -> None:
    new = tmp_path / "a" / "b"
    writer.write_tree(new, TREE)
    assert writer.existing_files(new) == {k: v.encode() for k, v in TREE.items()}
    assert writer.has_marker(new)
    empty = tmp_path / "empty"
    empty.mkdir()
    writer.write_tree(empty, TREE)
    assert writer.has_marker(empty)
    writer.write_tree(new, OTHER)  # marked: replaced entirely
    assert writer.existing_files(new) == {k: v.encode() for k, v in OTHER.items()}
    # a tree from before the marker, holding only generated paths, is adopted and marked
    (empty / writer.MARKER).unlink()
    assert writer.write_tree(empty, TREE) == ([], [])
    assert writer.has_marker(empty)
    writer.write_tree(empty, TREE | OTHER)  # marked now: its files may change and go
    assert writer.existing_files(empty) == {k: v.encode() for k, v in (TREE | OTHER).items()}
    # unmarked, a file the run would not write makes the folder foreign (it might be someone's)
    (empty / writer.MARKER).unlink()
    before = _all_bytes(empty)
    with pytest.raises(UsageError, match="'docs/b.md' is not part of the generated tree"):
        writer.write_tree(empty, TREE)
    assert _all_bytes(empty) == before


def test_a_marked_tree_keeps_ownership_but_a_fake_marker_does_not_count(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("x\n")
    (out / writer.MARKER).symlink_to("/etc/hostname")  # not a regular file: not our marker
    before = _all_bytes(tmp_path)
    with pytest.raises(UsageError):
        writer.write_tree(out, TREE)
    assert _all_bytes(tmp_path) == before


def test_siblings_the_generator_did_not_make_are_not_deleted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    writer.write_tree(out, TREE)
    stranger = tmp_path / "out.new-tree"
    stranger.mkdir()
    (stranger / "thesis.tex").write_text("years of work\n")
    before = _all_bytes(tmp_path)
    with pytest.raises(UsageError, match="not made by the generator"):
        writer.write_tree(out, OTHER)
    assert _all_bytes(tmp_path) == before


def test_out_as_a_symlink_to_a_folder_writes_the_folder_and_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to("real")
    for mapping in (TREE, OTHER, OTHER):
        writer.write_tree(link, mapping)
        assert link.is_symlink() and os.readlink(link) == "real"
        assert writer.existing_files(real) == {k: v.encode() for k, v in mapping.items()}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]


def test_symlinks_inside_the_tree_are_replaced_not_followed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    writer.write_tree(out, TREE)
    victim = tmp_path / "victim.txt"
    victim.write_text("outside\n")
    (out / "pkg" / "m0.py").unlink()
    (out / "pkg" / "m0.py").symlink_to(victim)
    writer.write_tree(out, TREE)
    assert not (out / "pkg" / "m0.py").is_symlink()
    assert victim.read_text() == "outside\n"
    assert writer.existing_files(out) == {k: v.encode() for k, v in TREE.items()}


@pytest.mark.parametrize("kind", ["file", "dangling-symlink", "under-a-file", "root", "empty", "proc", "sys"])
def test_impossible_out_paths_are_usage_errors(kind: str, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x\n")
    (tmp_path / "dangling").symlink_to("nowhere")
    out = {
        "file": "afile",
        "dangling-symlink": "dangling",
        "under-a-file": "afile/sub",
        "root": "/",
        "empty": "",
        "proc": "/proc/acp-types-out",
        "sys": "/sys/acp-types-out",
    }[kind]
    before = _all_bytes(tmp_path)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        with pytest.raises(UsageError):
            writer.write_tree(Path(out) if out else out, TREE)  # type: ignore[arg-type]
    finally:
        os.chdir(old)
    assert _all_bytes(tmp_path) == before


@pytest.mark.parametrize("out", ["afile", "dangling", "afile/sub", "/", ""])
def test_impossible_out_paths_exit_2_on_the_command_line(out: str, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x\n")
    (tmp_path / "dangling").symlink_to("nowhere")
    before = _all_bytes(tmp_path)
    for command in ("generate", "check"):
        done = _cli(command, "--out", out, cwd=tmp_path)
        assert done.returncode == 2, (command, done.stderr)
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert _all_bytes(tmp_path) == before


@pytest.mark.parametrize("jobs", ["abc", "1.5", "-1", "٣"])
def test_a_non_numeric_job_count_is_a_usage_error(jobs: str, tmp_path: Path) -> None:
    done = _cli("generate", "--out", "out", cwd=tmp_path, env={"ACP_TYPES_JOBS": jobs})
    assert done.returncode == 2, done.stderr
    assert "ACP_TYPES_JOBS" in done.stderr and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_check_of_a_foreign_folder_is_refused_without_reading_it(tmp_path: Path) -> None:
    done = _cli("check", "--out", "/", cwd=tmp_path)
    assert done.returncode == 2, done.stderr


def test_stale_files_does_not_read_a_file_whose_size_differs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    writer.write_tree(out, TREE)
    with open(out / "pkg" / "m1.py", "r+b") as fh:
        fh.truncate(64 << 30)  # a sparse 64 GiB file: reading it would exhaust memory
    assert writer.stale_files(out, TREE) == [("pkg/m1.py", "differs")]


def test_concurrent_runs_are_serialized_and_each_leaves_a_whole_tree(tmp_path: Path) -> None:
    out = tmp_path / "out"
    specs = []
    for i, mapping in enumerate((TREE, OTHER)):
        spec = tmp_path / f"spec{i}.json"
        spec.write_text(json.dumps(mapping))
        specs.append(spec)
    trees = [{k: v.encode() for k, v in m.items()} for m in (TREE, OTHER)]
    for _ in range(6):
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", WRITE, str(out), str(spec)], cwd=ROOT, env=ENV, stderr=subprocess.PIPE, text=True
            )
            for spec in specs * 2
        ]
        for proc in procs:
            _, err = proc.communicate()
            assert proc.returncode == 0, err
            assert "Traceback" not in err
        assert writer.existing_files(out) in trees
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "spec0.json", "spec1.json"]


def test_a_second_run_waits_for_the_lock(tmp_path: Path) -> None:
    out = tmp_path / "out"
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(TREE))
    with writer._locked(tmp_path):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITE, str(out), str(spec)], cwd=ROOT, env=ENV, stderr=subprocess.PIPE, text=True
        )
        time.sleep(1.5)
        assert proc.poll() is None, "the second run did not wait for the lock"
        assert not out.exists()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "waiting for another generator run" in err
    assert writer.existing_files(out) == {k: v.encode() for k, v in TREE.items()}
