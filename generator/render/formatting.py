"""black over rendered Python, one top-level definition at a time, with black's output kept in a local cache.

black is most of a generator run (about 85% of it with one job), and a
schema edit changes a few definitions of a models module of 5,000 lines.
:func:`format_python` cuts the rendered text before each top-level class or
function (with its decorators) and has black format each piece on its own:
black puts exactly two blank lines before a top-level definition, so the
pieces joined by two blank lines are the text black writes for the whole
file (``tests/test_formatting.py`` holds this against black on every
generated module). A definition right after a comment stays with what comes
before it, since black keeps a comment attached to what follows it.

What black wrote for each piece is kept under ``.cache/format/`` (ignored by
git): one file per generated path, under a hash of black's version, the
interpreter's and the path, holding each piece of the last render by the
hash of its text. A run formats only the pieces whose rendered text changed,
and the cache never holds more than the latest render of each path. The
cache is a convenience: a file that cannot be written is skipped, one that
does not hold what its checksum says is ignored, and removing the folder
(``make clean``) costs one slower run.

The cache is not trusted: its checksum only catches damage, since anyone who
can write the file can write a matching checksum. A kept piece is used only if
it is the rendered piece's code (black's own safety check, the one it runs
after formatting: the same syntax tree, docstrings aside from their
indentation) with the same comments; otherwise the piece is formatted again.
So a tampered cache cannot change what a generated module does or says, at
most its layout, and ``check --full`` renders with no cache at all
(:func:`cache_disabled`), so it sees that too. Checking a kept piece costs
about a fifth of formatting it.
"""

from __future__ import annotations

import ast
import hashlib
import io
import json
import os
import stat
import sys
import tokenize
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

import black

CACHE_DIR = Path(__file__).resolve().parents[2] / ".cache" / "format"

_MODE = black.Mode(target_versions={black.mode.TargetVersion.PY310})
_KEY_PREFIX = f"black {metadata.version('black')}, py310 target, python {sys.version_info[0]}.{sys.version_info[1]}\0"


class RenderBug(Exception):
    """A renderer produced something that is not valid Python: a bug in the generator."""


_use_cache = True


@contextmanager
def cache_disabled() -> Iterator[None]:
    """Within it, :func:`format_python` neither reads nor writes the cache: black formats every piece
    (``check --full``; worker processes forked inside inherit it)."""
    global _use_cache
    before, _use_cache = _use_cache, False
    try:
        yield
    finally:
        _use_cache = before


def format_python(path: str, text: str) -> str:
    """``text`` as black writes it; RenderBug (naming ``path``) if it is not valid Python."""
    pieces = split_definitions(path, text)
    if not _use_cache:
        return "\n\n".join(_black(path, piece) for piece in pieces)
    keys = [_sha256(piece) for piece in pieces]
    entry = CACHE_DIR / _sha256(_KEY_PREFIX + path)
    kept = _read(entry, limit=8 * len(text) + 65536)
    done: dict[str, str] = {}
    for key, piece in zip(keys, pieces, strict=True):
        if key not in done:
            found = kept.get(key)
            done[key] = found if isinstance(found, str) and _same_code(piece, found) else _black(path, piece)
    if done != kept:
        _write(entry, done)
    return "\n\n".join(done[key] for key in keys)


def _same_code(piece: str, kept: str) -> bool:
    """Whether ``kept`` can stand for black's output of ``piece``: what black checks of its own output
    (the same code) and the same comments (black keeps every comment, normalising only its spacing)."""
    try:
        black.assert_equivalent(piece, kept)
        return _comments(piece) == _comments(kept)
    except Exception:  # not Python, not the same code, too deeply nested to compare: format again
        return False


def _comments(text: str) -> list[str]:
    if "#" not in text:
        return []
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return ["".join(tok.string.split()) for tok in tokens if tok.type == tokenize.COMMENT]


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def split_definitions(path: str, text: str) -> list[str]:
    """``text`` cut before each top-level class or function that does not follow a comment."""
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise RenderBug(f"{path}: rendered text is not valid Python (line {exc.lineno}: {exc.msg})") from exc
    lines = text.splitlines(keepends=True)
    cuts = []
    for previous, node in zip(tree.body, tree.body[1:], strict=False):
        if not isinstance(node, _DEFINITIONS) or _is_stub(previous):
            continue
        start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
        before = start - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        if before >= 0 and not lines[before].lstrip().startswith("#"):
            cuts.append(start)
    bounds = [0, *cuts, len(lines)]
    return ["".join(lines[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)]


_DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _is_stub(node: ast.stmt) -> bool:
    """A definition whose body is only ``...``: black keeps such functions together when written so (overloads)."""
    return (
        isinstance(node, _DEFINITIONS)
        and len(node.body) == 1
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
        and node.body[0].value.value is Ellipsis
    )


def _black(path: str, text: str) -> str:
    try:
        return black.format_str(text, mode=_MODE)
    except Exception as exc:  # black raises several types for invalid input
        raise RenderBug(f"{path}: rendered text is not valid Python ({type(exc).__name__}: {str(exc)[:300]})") from exc


def _read(entry: Path, limit: int) -> dict[str, str]:
    """The pieces kept in ``entry`` when its checksum line matches them, else none (or if it is larger than
    ``limit`` bytes, more than the render could need: not read)."""
    try:
        fd = os.open(entry, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO put here does not block
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return {}
            data = f.read(limit + 1)
    except OSError:
        return {}
    if len(data) > limit:
        return {}
    digest, _, body = data.partition(b"\n")
    if hashlib.sha256(body).hexdigest().encode() != digest:
        return {}
    try:
        pieces = json.loads(body)
    except ValueError:
        return {}
    return pieces if isinstance(pieces, dict) else {}


def _write(entry: Path, pieces: dict[str, str]) -> None:
    """Keep ``pieces`` in ``entry`` (whole or not at all: written beside it, then renamed), as manifest.record does."""
    body = json.dumps(pieces, ensure_ascii=True, sort_keys=True).encode()
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        os.replace(tmp, entry)
    except OSError:
        pass  # a read-only checkout, a full disk: the next run formats again
