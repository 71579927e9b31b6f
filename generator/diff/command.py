"""The ``diff`` subcommand: load both sides, find the cross-version map, print, pick the exit code."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import TextIO

from generator.crossversion import CrossMap, crossmap_from_doc, entry_problems
from generator.diff import report
from generator.diff.compare import Change, compare
from generator.diff.rules import BREAKING, POSSIBLY
from generator.errors import SchemaError, UsageError
from generator.loader import load_version, meta_problems, parse_json
from generator.model import Protocol, build_protocol
from generator.sources import DirSource, GitSource, open_source, read_bounded

MAP_FILE = "crossversion.json"
FAIL_LEVELS = {"breaking": {BREAKING}, "possibly-breaking": {BREAKING, POSSIBLY}, "any": None}


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)
    except FileNotFoundError as exc:
        raise UsageError("git is not installed, so REV:FOLDER cannot be read") from exc


def _check_revision(source: GitSource) -> None:
    """Say clearly what is wrong before git's own terse errors would."""
    if _git(source.repo, "rev-parse", "--git-dir").returncode != 0:
        raise UsageError(f"{source.label}: the current folder is not inside a git repository")
    if _git(source.repo, "rev-parse", "--verify", "--quiet", f"{source.rev}^{{commit}}").returncode != 0:
        raise UsageError(f"{source.label}: unknown revision {source.rev!r} (git cannot resolve it to a commit)")
    if _git(source.repo, "cat-file", "-e", f"{source.rev}:{source.folder}").returncode != 0:
        raise UsageError(f"{source.label}: there is no folder {source.folder!r} at revision {source.rev!r}")


def load_side(spec: str, root: Path) -> tuple[Protocol, DirSource | GitSource]:
    source = open_source(spec, root)
    if isinstance(source, GitSource):
        _check_revision(source)
    return build_protocol(load_version(source)), source


def _parse_map(data: bytes, label: str, old: str, new: str) -> CrossMap:
    doc = parse_json(data, label)
    problems = meta_problems(doc, "crossversion", label) or entry_problems(doc, label)
    if problems:
        raise SchemaError(problems)
    return crossmap_from_doc(doc, old, new)


def _find_map(sources: list[DirSource | GitSource], old: str, new: str) -> CrossMap | None:
    """The crossversion.json beside the new side's folder, else beside the old side's, else none."""
    for source in sources:
        if isinstance(source, DirSource):
            path = source.path.parent / MAP_FILE
            if path.is_file():
                label = str(Path(source.label).parent / MAP_FILE)
                return _parse_map(read_bounded(path, label), label, old, new)
        else:
            parent = str(Path(source.folder).parent)
            # the map's folder at that revision, read as the schema files are (size checked first)
            beside = GitSource(source.repo, source.rev, "" if parent == "." else parent)
            inner = f"{beside.folder}/{MAP_FILE}" if beside.folder else MAP_FILE
            if _git(source.repo, "cat-file", "-e", f"{source.rev}:{inner}").returncode == 0:
                return _parse_map(beside.read(MAP_FILE), f"{source.rev}:{inner}", old, new)
    return None


def failed(changes: list[Change], fail_on: str | None, ignore_unstable: bool = False) -> bool:
    """Whether a change reaches the --fail-on level; with ``ignore_unstable`` changes to the unstable surface only never count."""
    if fail_on is None:
        return False
    levels = FAIL_LEVELS[fail_on]
    return any(levels is None or c.level in levels for c in changes if not (ignore_unstable and c.unstable))


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Exit code 0, or 1 when a change at the --fail-on level is found; errors raise (exit 2)."""
    out = out or sys.stdout
    root = Path.cwd()
    old, old_src = load_side(args.old, root)
    new, new_src = load_side(args.new, root)
    crossmap: CrossMap | None = None
    if old.version != new.version and not args.no_map:
        if args.map is not None:
            if not args.map.is_file():
                raise UsageError(f"{args.map}: no such cross-version map")
            crossmap = _parse_map(args.map.read_bytes(), str(args.map), old.version, new.version)
        else:
            crossmap = _find_map([new_src, old_src], old.version, new.version)
    changes = compare(old, new, crossmap)
    if args.format == "json":
        text = report.json_report(old, new, changes, crossmap)
    elif args.format == "markdown":
        text = report.markdown_changes(old, new, changes, crossmap)
    else:
        colour = out.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        text = report.text_report(old, new, changes, crossmap, colour=colour)
    out.write(text)
    return 1 if failed(changes, args.fail_on, getattr(args, "ignore_unstable", False)) else 0
