"""Where a version's schema files come from: a folder, or a folder at a git revision."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from generator.errors import UsageError


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
        return (self.path / name).read_bytes()


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
            done = subprocess.run(
                ["git", "-C", str(self.repo), *args], capture_output=True, check=False
            )
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
        return self._git("show", f"{self.rev}:{self.folder}/{name}")


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
