"""black over rendered Python, with black's output kept in a local cache.

black is most of a generator run (about 85% of it with one job), and it is a
pure function of the text it is given, its own version and the interpreter
it runs on, all under one fixed mode. :func:`format_python` keeps what black
wrote under ``.cache/format/`` (ignored by git), keyed by a hash of all of
those, so a run after a schema edit formats only the files whose rendered
text changed, and a run over unchanged inputs formats nothing. A file the
renderer writes differently (another hash seed, another job count, another
interpreter) has another key, so the cache never stands in for a render.

The cache is a convenience: an entry that cannot be written is skipped, one
that does not hold what its own checksum says is ignored and written again,
and removing the folder (``make clean``) costs one slower run.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from importlib import metadata
from pathlib import Path

import black

CACHE_DIR = Path(__file__).resolve().parents[2] / ".cache" / "format"
KEEP = 256
"""The most entries kept; past it the ones least recently used are removed (a whole tree is about 20)."""


class RenderBug(Exception):
    """A renderer produced something that is not valid Python: a bug in the generator."""


_MODE = black.Mode(target_versions={black.mode.TargetVersion.PY310})
_KEY_PREFIX = f"black {metadata.version('black')}, py310 target, python {sys.version_info[0]}.{sys.version_info[1]}\0"


def format_python(path: str, text: str) -> str:
    """``text`` as black writes it; RenderBug (naming ``path``) if it is not valid Python."""
    key = hashlib.sha256((_KEY_PREFIX + text).encode("utf-8", "surrogatepass")).hexdigest()
    entry = CACHE_DIR / key[:2] / key
    found = _read(entry)
    if found is not None:
        return found
    try:
        formatted = black.format_str(text, mode=_MODE)
    except Exception as exc:  # black raises several types for invalid input
        raise RenderBug(f"{path}: rendered text is not valid Python ({type(exc).__name__}: {str(exc)[:300]})") from exc
    _write(entry, formatted)
    return formatted


def _read(entry: Path) -> str | None:
    """The text kept in ``entry`` when its checksum line matches it, else None."""
    try:
        data = entry.read_bytes()
        os.utime(entry)  # recently used: the last to be removed
    except OSError:
        return None
    digest, _, body = data.partition(b"\n")
    if hashlib.sha256(body).hexdigest().encode() != digest:
        return None
    return body.decode("utf-8", "surrogatepass")


def _write(entry: Path, text: str) -> None:
    """Keep ``text`` in ``entry`` (whole or not at all: written beside it, then renamed)."""
    body = text.encode("utf-8", "surrogatepass")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
            os.replace(tmp, entry)
        except BaseException:
            os.unlink(tmp)
            raise
        _prune()
    except OSError:
        pass  # a read-only checkout, a full disk: the next run formats again


def _prune() -> None:
    entries = [p for p in CACHE_DIR.glob("*/*") if not p.name.startswith(".tmp-")]
    if len(entries) <= KEEP:
        return
    by_use = sorted(entries, key=lambda p: p.stat().st_mtime)
    for old in by_use[: len(entries) - KEEP]:
        old.unlink(missing_ok=True)
