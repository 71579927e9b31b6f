"""The check cache: which inputs produced an output tree, and the hash of every file.

``make check`` reads it to confirm an unchanged tree without regenerating:
if the hash of every input (schemas, templates, runtime and generator source,
pinned tool versions) and of every output file still matches, the tree is up
to date. Anything else falls back to the full comparison. This module imports
only the standard library, so the fast path costs milliseconds.

The cache is a local file under ``.cache/`` (ignored by git), never part of
the committed tree: a refactor of the generator changes the input digest but
no committed file. ``generate`` and a full ``check`` that finds the tree up to
date write it; a fresh clone has none, so its first ``check`` compares in full.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE_DIR = ROOT / ".cache" / "check"
# The tools whose version can change the generated text.
TOOLS = ("datamodel-code-generator", "black", "isort", "jinja2", "jsonschema", "pydantic", "pydantic-core")
_SKIP_PARTS = {"__pycache__"}


def _files(folder: Path, pattern: str = "*") -> list[Path]:
    return sorted(
        p
        for p in folder.rglob(pattern)
        if p.is_file() and not _SKIP_PARTS.intersection(p.relative_to(folder).parts) and p.suffix != ".pyc"
    )


def input_digest(schema_root: Path | None = None) -> str:
    """One hash over everything that shapes the output."""
    schema_root = schema_root or ROOT / "schema"
    h = hashlib.sha256()
    groups = (
        ("schema", schema_root, "*.json"),
        ("templates", ROOT / "templates", "*"),
        ("runtime", ROOT / "runtime", "*.py"),
        ("generator", ROOT / "generator", "*.py"),
        ("generator", ROOT / "generator", "*.json"),
    )
    for label, folder, pattern in groups:
        for path in _files(folder, pattern):
            h.update(f"{label}/{path.relative_to(folder).as_posix()}\0".encode())
            h.update(path.read_bytes() + b"\0")
    h.update((ROOT / "requirements.txt").read_bytes())
    for tool in TOOLS:
        try:
            version = metadata.version(tool)
        except metadata.PackageNotFoundError:
            version = "absent"
        h.update(f"{tool}=={version}\0".encode())
    h.update(f"python{sys.version_info[0]}.{sys.version_info[1]}".encode())
    return h.hexdigest()


def cache_path(out_dir: Path) -> Path:
    """The cache file of one output folder (keyed by its resolved path)."""
    key = hashlib.sha256(str(out_dir.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return CACHE_DIR / f"{key}.json"


def render(mapping: dict[str, str], digest: str) -> str:
    """The cache text for a rendered tree."""
    files = {path: hashlib.sha256(text.encode("utf-8")).hexdigest() for path, text in sorted(mapping.items())}
    doc = {
        "description": "Written by `make generate`; `make check` uses it to confirm an unchanged tree quickly.",
        "inputs": digest,
        "files": files,
    }
    return json.dumps(doc, indent=2) + "\n"


def record(out_dir: Path, mapping: dict[str, str], schema_root: Path | None = None) -> None:
    """Remember that ``out_dir`` holds exactly ``mapping`` for the current inputs (best effort)."""
    path = cache_path(out_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(render(mapping, input_digest(schema_root)), "utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # a cache that cannot be written only costs the next check its fast path


def up_to_date(out_dir: Path, schema_root: Path | None = None) -> bool:
    """True only if the cache proves the tree is exactly what the current inputs produce."""
    try:
        doc = json.loads(cache_path(out_dir).read_text("utf-8"))
        listed = doc["files"]
        if doc["inputs"] != input_digest(schema_root):
            return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    from generator.writer import existing_files

    have = existing_files(out_dir)
    if set(have) != set(listed):
        return False
    return all(hashlib.sha256(data).hexdigest() == listed[path] for path, data in have.items())
