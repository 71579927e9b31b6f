"""The manifest in generated/: which inputs produced the tree, and the hash of every file.

``make check`` reads it to confirm an unchanged tree without regenerating:
if the hash of every input (schemas, templates, generator source, pinned tool
versions) and of every output file still matches, the tree is up to date.
Anything else falls back to the full comparison. This module imports only the
standard library, so the fast path costs milliseconds.
"""

from __future__ import annotations

import hashlib
import json
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = "manifest.json"
# The tools whose version can change the generated text.
TOOLS = ("datamodel-code-generator", "black", "isort", "jinja2", "jsonschema", "pydantic", "pydantic-core")
_SKIP_PARTS = {"__pycache__"}


def _files(folder: Path, pattern: str = "*") -> list[Path]:
    return sorted(
        p for p in folder.rglob(pattern)
        if p.is_file() and not _SKIP_PARTS.intersection(p.relative_to(folder).parts) and p.suffix != ".pyc"
    )


def input_digest(schema_root: Path | None = None) -> str:
    """One hash over everything that shapes the output."""
    schema_root = schema_root or ROOT / "schema"
    h = hashlib.sha256()
    groups = (
        ("schema", schema_root, "*.json"),
        ("templates", ROOT / "templates", "*"),
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


def render(mapping: dict[str, str], digest: str) -> str:
    """The manifest text for a rendered tree (the manifest itself is not listed)."""
    files = {path: hashlib.sha256(text.encode("utf-8")).hexdigest() for path, text in sorted(mapping.items())}
    doc = {
        "description": "Written by `make generate`; `make check` uses it to confirm an unchanged tree quickly. Do not edit.",
        "inputs": digest,
        "files": files,
    }
    return json.dumps(doc, indent=2) + "\n"


def up_to_date(out_dir: Path, schema_root: Path | None = None) -> bool:
    """True only if the manifest proves the tree is exactly what the current inputs produce."""
    try:
        doc = json.loads((out_dir / MANIFEST).read_text("utf-8"))
        listed = doc["files"]
        if doc["inputs"] != input_digest(schema_root):
            return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    from generator.writer import existing_files

    have = existing_files(out_dir)
    have.pop(MANIFEST, None)
    if set(have) != set(listed):
        return False
    return all(hashlib.sha256(data).hexdigest() == listed[path] for path, data in have.items())
