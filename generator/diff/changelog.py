"""What changed in each version since its previous release: our own diff between two states of ``schema/``.

``schema/releases.json`` names, per version, the previous release (``2026-08``), the git revision it was
cut from, and a snapshot of that release's version folder committed under ``schema/releases/<name>/<v>/``
with the sha256 of its files. ``make generate`` diffs the snapshot against the working folder into
``generated/docs/changelog-<v>.md``.

Why a committed snapshot and not ``REV:schema/v1`` read with git at generation time: a shallow clone (the
default of most CI checkouts) and a source archive have no history, and generation must give the same
files in every checkout. The snapshot is our own schema, taken from the revision with git
(``python -m generator snapshot-release``), so it is exactly what was released; the revision says where it
came from, and the digest refuses a snapshot edited by hand.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from generator.diff.compare import compare
from generator.diff.report import markdown_changes
from generator.errors import Problem, SchemaError, UsageError, pointer
from generator.loader import load_version, meta_problems, parse_json
from generator.model import Protocol, build_protocol
from generator.sources import DirSource, GitSource

RELEASES_FILE = "releases.json"
SNAPSHOTS = "releases"
RELEASE_NAME = re.compile(r"[0-9]{4}-[0-9]{2}")
_VERSION = re.compile(r"v[1-9][0-9]{0,5}")


@dataclass(frozen=True)
class Baseline:
    """One entry of schema/releases.json: the previous release of one version."""

    version: str
    release: str
    revision: str
    snapshot: str  # relative to the schema folder
    sha256: str


def _label(schema_root: Path) -> str:
    """How the schema folder is named in messages and in generated files: relative when inside the cwd."""
    rel = os.path.relpath(schema_root)
    return schema_root.as_posix() if rel.startswith("..") else Path(rel).as_posix()


def load_baselines(schema_root: Path, label: str | None = None) -> list[Baseline]:
    """The baselines of schema/releases.json, checked against its meta-schema; no file means none."""
    path = schema_root / RELEASES_FILE
    if not path.is_file():
        return []
    file = f"{label or _label(schema_root)}/{RELEASES_FILE}"
    doc = parse_json(path.read_bytes(), file)
    problems = meta_problems(doc, "releases", file)
    if problems:
        raise SchemaError(problems)
    out = []
    for version, entry in sorted(doc["baselines"].items()):
        if entry["snapshot"] != f"{SNAPSHOTS}/{entry['release']}/{version}":
            raise SchemaError(
                [
                    Problem(
                        file,
                        pointer("baselines", version, "snapshot"),
                        f"the snapshot of {version}'s {entry['release']} release lives in "
                        f"{SNAPSHOTS}/{entry['release']}/{version}",
                        "rewrite the file with `python -m generator snapshot-release`",
                    )
                ]
            )
        out.append(Baseline(version, entry["release"], entry["revision"], entry["snapshot"], entry["sha256"]))
    return out


def previous_release(schema_root: Path, baseline: Baseline, label: str | None = None) -> Protocol:
    """The snapshot of a baseline, loaded and built, after checking it is the one releases.json recorded."""
    prefix = label or _label(schema_root)
    file = f"{prefix}/{RELEASES_FILE}"
    folder = schema_root / baseline.snapshot
    if not folder.is_dir():
        raise SchemaError(
            [
                Problem(
                    file,
                    pointer("baselines", baseline.version, "snapshot"),
                    f"{prefix}/{baseline.snapshot}/ is missing",
                    "restore it from git, or rerun `python -m generator snapshot-release`",
                )
            ]
        )
    proto = build_protocol(load_version(DirSource(folder, f"{prefix}/{baseline.snapshot}")))
    if proto.digest != baseline.sha256:
        raise SchemaError(
            [
                Problem(
                    file,
                    pointer("baselines", baseline.version, "sha256"),
                    f"{prefix}/{baseline.snapshot}/ is not the snapshot recorded here (its files "
                    f"hash to {proto.digest[:16]}..., not {baseline.sha256[:16]}...)",
                    "a release snapshot is never edited: restore it from git, or take it again "
                    "with `python -m generator snapshot-release`",
                )
            ]
        )
    return proto


def changelogs(protocols: dict[str, Protocol], schema_root: Path, label: str | None = None) -> dict[str, str]:
    """``docs/changelog-<v>.md`` for every version releases.json names a previous release for."""
    out: dict[str, str] = {}
    prefix = label or _label(schema_root)
    for b in load_baselines(schema_root, prefix):
        if b.version not in protocols:
            raise SchemaError(
                [
                    Problem(
                        f"{prefix}/{RELEASES_FILE}",
                        pointer("baselines", b.version),
                        f"names a previous release of {b.version}, which {prefix}/ does not have",
                        "drop the entry, or rerun `python -m generator snapshot-release`",
                    )
                ]
            )
        old, new = previous_release(schema_root, b, prefix), protocols[b.version]
        title = f"# Changes to {b.version} since the {b.release} release"
        note = (
            f"The previous release is the {b.release} state of `{prefix}/{b.version}`, cut from git revision "
            f"`{b.revision[:12]}` and kept as `{prefix}/{b.snapshot}`; each change reads as going from it to "
            f"the working `{prefix}/{b.version}` (`python -m generator diff {prefix}/{b.snapshot} "
            f"{prefix}/{b.version}` lists the same changes)."
        )
        out[f"docs/changelog-{b.version}.md"] = markdown_changes(
            old, new, compare(old, new), None, generated_doc=True, title=title, note=note
        )
    return out


# ---------------------------------------------------------------- taking a snapshot


def _git_location(schema_root: Path, rev: str) -> tuple[Path, str, str]:
    """(the repository's top folder, the full commit of ``rev``, the schema folder's path inside it)."""
    probe = GitSource(schema_root, rev, ".")
    top = Path(probe._git("rev-parse", "--show-toplevel").decode().strip())
    commit = probe._git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").decode().strip()
    prefix = probe._git("rev-parse", "--show-prefix").decode().strip().rstrip("/")
    return top, commit, prefix


def _check_writable(schema_root: Path, releases: Path, snapshots: list[Path]) -> None:
    """Refuse, before the first write, what snapshot-release could not replace or remove as it promises: a
    symbolic link anywhere under ``releases/`` (removing it, or writing through it, would touch what the
    link names), a ``releases.json`` (or its temporary file) that is not a plain file, or something other
    than a folder where a snapshot folder goes (``snapshots``, with the release's folder first)."""
    for path in snapshots:
        if path.exists() and not path.is_dir():
            raise UsageError(f"{_label(path)} is not a folder; move it away and run snapshot-release again")
    for path in (schema_root / RELEASES_FILE, schema_root / (RELEASES_FILE + ".tmp")):
        if path.is_symlink() or (path.exists() and not path.is_file()):
            raise UsageError(f"{_label(path)} is not a plain file; move it away and run snapshot-release again")
    if not releases.exists() and not releases.is_symlink():
        return
    if releases.is_symlink() or not releases.is_dir():
        raise UsageError(f"{_label(releases)} is not a plain folder; move it away and run snapshot-release again")
    for folder, dirs, files in os.walk(releases):
        for entry in sorted(dirs + files):
            path = Path(folder) / entry
            if path.is_symlink():
                raise UsageError(
                    f"{_label(path)} is a symbolic link: snapshot-release only replaces and removes the folders "
                    "it wrote; remove the link and run it again (nothing was written)"
                )


def snapshot_release(schema_root: Path, name: str, rev: str = "HEAD") -> list[str]:
    """Freeze every version folder of ``schema_root`` as it was at git revision ``rev`` as release ``name``.

    Writes ``<schema_root>/releases/<name>/<v>/`` and ``releases.json``, and removes the snapshots no baseline
    names any more (git history keeps them). Everything is read and checked before the first write, so bad
    input leaves the folder as it was. Returns a line per version for the user.
    """
    if not RELEASE_NAME.fullmatch(name):
        raise UsageError(f"{name!r}: a release is named by its year and month, such as 2026-11")
    top, commit, prefix = _git_location(schema_root, rev)
    listing = GitSource(top, commit, prefix or ".")._git("ls-tree", f"{commit}:{prefix}")
    folders = [line.split("\t", 1)[1] for line in listing.decode().splitlines() if line.split(" ", 2)[1:2] == ["tree"]]
    versions = sorted((v for v in folders if _VERSION.fullmatch(v)), key=lambda v: int(v[1:]))
    if not versions:
        raise UsageError(f"{commit[:12]}:{prefix or '.'} holds no version folder (v1/, v2/, ...)")
    taken: dict[str, tuple[dict[str, bytes], str]] = {}
    for v in versions:
        source = GitSource(top, commit, f"{prefix}/{v}" if prefix else v)
        loaded = load_version(source)
        build_protocol(loaded)  # a release that does not build is no baseline
        taken[v] = (loaded.files, loaded.digest)
    releases = schema_root / SNAPSHOTS
    _check_writable(schema_root, releases, [releases / name, *(releases / name / v for v in taken)])
    doc = {
        "description": "The previous release of each version, diffed into generated/docs/changelog-<v>.md. "
        "Written by `python -m generator snapshot-release`; never edited by hand.",
        "baselines": {
            v: {"release": name, "revision": commit, "snapshot": f"{SNAPSHOTS}/{name}/{v}", "sha256": digest}
            for v, (_, digest) in taken.items()
        },
    }
    try:
        for v, (files, _) in taken.items():
            folder = releases / name / v
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            for file, data in sorted(files.items()):
                (folder / file).write_bytes(data)
        tmp = schema_root / (RELEASES_FILE + ".tmp")
        tmp.write_text(json.dumps(doc, indent=2) + "\n", "utf-8")
        os.replace(tmp, schema_root / RELEASES_FILE)
        for old in sorted(releases.iterdir()):
            if old.is_dir() and old.name != name:
                shutil.rmtree(old)
    except OSError as exc:  # a full disk, a folder we may not write: say what state it is left in
        where = _label(Path(exc.filename)) if exc.filename else _label(schema_root)
        raise UsageError(
            f"{where}: cannot be written ({exc.strerror or exc}); {_label(releases)}/ and {RELEASES_FILE} may be "
            "partly written: fix the cause and run snapshot-release again (`git status` shows what changed)"
        ) from None
    return [
        f"{_label(releases / name / v)}/: {len(files)} files of {commit[:12]}:{prefix}/{v}"
        for v, (files, _) in taken.items()
    ]
