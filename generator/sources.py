"""Where a version's schema files come from: a folder, or a folder at a git revision.

Every input file (schema, cross-version map, reference schema) is read through
:func:`read_bounded` or :meth:`GitSource.read`, which refuse a file larger than
MAX_INPUT_BYTES before reading it.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from generator.errors import Problem, SchemaError, UsageError

# The largest input file read, in bytes. The biggest canonical file is about
# 34 KB and the published reference schemas about 0.5 MB; a file beyond this is
# not a schema, and reading it whole (a 4 GiB sparse file) would only exhaust memory.
MAX_INPUT_BYTES = 16 * 1024 * 1024


def _too_big(label: str, size: int) -> SchemaError:
    return SchemaError(
        [
            Problem(
                label,
                "",
                f"{size} bytes, more than the {MAX_INPUT_BYTES // (1024 * 1024)} MiB "
                "an input file may hold; it was not read",
                "a schema file is far smaller: check that this is the file you meant",
            )
        ]
    )


def read_bounded(path: Path, label: str | None = None) -> bytes:
    """The bytes of one input file; SchemaError if it holds more than MAX_INPUT_BYTES, found before reading it.

    The size is taken from the open file (so a sparse file is refused without
    a read) and the read stops one byte past the limit (so a file that grows,
    or a pipe, is refused too). OSError is the caller's to report.
    """
    label = label or str(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_INPUT_BYTES:
            raise _too_big(label, size)
        data = f.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise _too_big(label, len(data))
    return data


@dataclass(frozen=True)
class DirSource:
    """A folder of schema files on disk."""

    path: Path
    label: str

    def files(self) -> list[str]:
        if not self.path.is_dir():
            raise UsageError(f"{self.label}: no such schema folder")
        return sorted(p.name for p in self.path.iterdir() if p.suffix == ".json" and p.is_file())

    def read(self, name: str) -> bytes:
        try:
            return read_bounded(self.path / name, f"{self.label.rstrip('/')}/{name}")
        except OSError as exc:
            raise UsageError(f"{self.label.rstrip('/')}/{name}: cannot be read ({exc.strerror})") from None


@dataclass(frozen=True)
class GitSource:
    """A folder of schema files as it was at a git revision (read with git, no checkout)."""

    repo: Path
    rev: str
    folder: str

    @property
    def label(self) -> str:
        return f"{self.rev}:{self.folder}"

    def _git(self, *args: str) -> bytes:
        try:
            done = subprocess.run(["git", "-C", str(self.repo), *args], capture_output=True, check=False)
        except FileNotFoundError as exc:
            raise UsageError("git is not installed") from exc
        if done.returncode != 0:
            err = done.stderr.decode("utf-8", "replace").strip().splitlines()
            raise UsageError(f"{self.label}: {err[-1] if err else 'git failed'}")
        return done.stdout

    def files(self) -> list[str]:
        self._git("rev-parse", "--verify", "--quiet", f"{self.rev}^{{commit}}")
        out = self._git("ls-tree", "--name-only", f"{self.rev}:{self.folder}")
        names = [n for n in out.decode("utf-8").splitlines() if n.endswith(".json")]
        if not names:
            raise UsageError(f"{self.label}: no schema files at that revision")
        return sorted(names)

    def read(self, name: str) -> bytes:
        spec = f"{self.rev}:{self.folder}/{name}" if self.folder else f"{self.rev}:{name}"
        size = int(self._git("cat-file", "-s", spec))
        if size > MAX_INPUT_BYTES:
            raise _too_big(spec, size)
        return self._git("show", spec)


def open_source(spec: str, root: Path) -> DirSource | GitSource:
    """Turn ``schema/v1`` or ``REV:schema/v1`` into a source."""
    if ":" in spec and not Path(spec).exists():
        rev, folder = spec.split(":", 1)
        if not rev or not folder:
            raise UsageError(f"{spec}: expected FOLDER or REV:FOLDER")
        return GitSource(root, rev, folder.strip("/"))
    path = Path(spec)
    if not path.is_absolute():
        path = root / path
    label = spec
    return DirSource(path, label)
