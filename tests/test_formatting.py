"""black one definition at a time, with a cache (generator/render/formatting.py): always the text black writes for the whole file."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import black
import pytest

from generator import cli, pipeline
from generator.render import formatting
from generator.render.formatting import RenderBug, format_python, split_definitions

# A module with what black treats specially around top-level definitions: a docstring first,
# decorators, a comment attached to a class, overloads, a string whose lines look like code,
# nested definitions, and statements between classes.
SAMPLE = '''"""Module docstring."""
class First: pass
from typing import overload
import os
x = {  'a':1 ,'b' :2}
class A :
  """Doc."""
  def f( self,a,b ):
    def inner(): return 1
    return a+b



y=1
NOTE = """
class NotAClass:
def not_a_function():
@not_a_decorator
"""
# a comment that belongs to B
class B(A): pass
@overload
def g(a: int) -> int: ...
@overload
def g(a: str) -> str: ...
def g(a): return a
@staticmethod
@property
def h(): pass
if os.name:
    class C: pass
z = [1,
  2,]
'''


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "format"
    monkeypatch.setattr(formatting, "CACHE_DIR", folder)
    return folder


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text black is asked to format."""
    seen: list[str] = []
    real = black.format_str

    def counting(text: str, *, mode: black.Mode) -> str:
        seen.append(text)
        return real(text, mode=mode)

    monkeypatch.setattr(black, "format_str", counting)
    return seen


def _whole(text: str) -> str:
    return black.format_str(text, mode=formatting._MODE)


def test_the_pieces_are_the_definitions_not_what_looks_like_one(cache: Path) -> None:
    pieces = split_definitions("m.py", SAMPLE)
    starts = [piece.splitlines()[0] for piece in pieces]
    # B follows its comment, the stubs (@overload) each other; h starts at its decorators; nothing in NOTE or in bodies
    assert starts == ['"""Module docstring."""', "class First: pass", "class A :", "@overload", "@staticmethod"]
    assert "".join(pieces) == SAMPLE


def test_the_pieces_joined_are_what_black_writes_for_the_whole_file(cache: Path) -> None:
    assert format_python("m.py", SAMPLE) == _whole(SAMPLE)
    assert format_python("m.py", SAMPLE) == _whole(SAMPLE)  # and from the cache


def test_a_run_formats_only_the_definitions_that_changed(cache: Path, calls: list[str]) -> None:
    first = format_python("m.py", SAMPLE)
    assert len(calls) == len(split_definitions("m.py", SAMPLE))
    calls.clear()
    assert format_python("m.py", SAMPLE) == first
    assert calls == []
    edited = SAMPLE.replace("def g(a): return a", "def g(a): return  a*2")
    result = format_python("m.py", edited)
    assert calls == [piece for piece in split_definitions("m.py", edited) if "a*2" in piece]
    assert len(calls) == 1
    assert result == _whole(edited)


def test_the_cache_holds_the_latest_render_of_each_path_only(cache: Path, calls: list[str]) -> None:
    format_python("m.py", SAMPLE)
    format_python("m.py", "a = 1\nclass Only: pass\n")
    format_python("other.py", SAMPLE)
    assert len(list(cache.iterdir())) == 2
    calls.clear()
    format_python("m.py", SAMPLE)  # m.py's pieces of the first render are gone; other.py's are not its own
    assert len(calls) == len(split_definitions("m.py", SAMPLE))


def test_another_black_or_interpreter_formats_again(
    cache: Path, calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    format_python("m.py", SAMPLE)
    calls.clear()
    monkeypatch.setattr(formatting, "_KEY_PREFIX", "black 0.0, py310 target, python 3.99\0")
    format_python("m.py", SAMPLE)
    assert len(calls) == len(split_definitions("m.py", SAMPLE))


def test_a_cache_file_that_does_not_match_its_checksum_is_not_used(cache: Path, calls: list[str]) -> None:
    good = format_python("m.py", SAMPLE)
    (entry,) = cache.iterdir()
    digest, _, body = entry.read_bytes().partition(b"\n")
    entry.write_bytes(digest + b"\n" + body.replace(b"a + b", b"a - b"))
    calls.clear()
    assert format_python("m.py", SAMPLE) == good
    assert len(calls) == len(split_definitions("m.py", SAMPLE))
    entry.write_bytes(entry.read_bytes()[:100])  # cut short
    assert format_python("m.py", SAMPLE) == good


def test_invalid_python_is_a_render_bug_and_nothing_is_kept(cache: Path) -> None:
    with pytest.raises(RenderBug, match=r"^broken\.py: rendered text is not valid Python \(line 2"):
        format_python("broken.py", "x = 1\ndef (:\n")
    assert not cache.exists()


def test_a_cache_that_cannot_be_written_only_costs_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setattr(formatting, "CACHE_DIR", blocker / "format")
    assert format_python("m.py", SAMPLE) == _whole(SAMPLE)
    assert blocker.read_text() == "not a folder"


def test_every_generated_module_is_what_black_writes_for_it_whole(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real renders: each module formatted piece by piece equals black over the whole rendered text."""
    monkeypatch.setenv("ACP_TYPES_JOBS", "1")  # the renders are recorded in this process
    rendered: dict[str, str] = {}

    def recording(path: str, text: str) -> str:
        rendered[path] = text
        return format_python(path, text)

    monkeypatch.setattr(pipeline, "format_python", recording)
    out = pipeline.build_outputs()
    assert len(rendered) >= 18
    differing = [path for path, text in rendered.items() if _whole(text) != out[path]]
    assert differing == []
    assert os.environ["ACP_TYPES_JOBS"] == "1"


def _tamper(cache: Path, edit: Callable[[str], str]) -> None:
    """Rewrite the one cache entry's pieces with ``edit``, under a checksum that matches: what anyone who can
    write the file can do."""
    (entry,) = cache.iterdir()
    pieces = json.loads(entry.read_bytes().partition(b"\n")[2])
    body = json.dumps({key: edit(piece) for key, piece in pieces.items()}, sort_keys=True).encode()
    entry.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


@pytest.mark.parametrize(
    "edit",
    [
        lambda piece: piece.replace("a + b", "a - b"),  # other code
        lambda piece: piece.replace("# a comment that belongs to B", "# type: ignore"),  # other comments
        lambda piece: piece.replace('"""Doc."""', '"""Other doc."""'),  # another docstring
        lambda piece: piece.replace("def f(self, a, b):", "def f(self, a, b:"),  # not Python
    ],
    ids=["code", "comment", "docstring", "syntax"],
)
def test_a_tampered_piece_with_a_matching_checksum_is_formatted_again(
    cache: Path, calls: list[str], edit: Callable[[str], str]
) -> None:
    """Issue 32 item 20: a kept piece is used only if it is the rendered piece's code and comments."""
    good = format_python("m.py", SAMPLE)
    _tamper(cache, edit)
    calls.clear()
    assert format_python("m.py", SAMPLE) == good
    assert len(calls) == 1  # only the tampered piece is formatted again; the others still come from the cache
    calls.clear()
    assert format_python("m.py", SAMPLE) == good and calls == []  # and the entry was put right


def test_a_cache_entry_that_is_not_a_small_file_is_not_read(cache: Path, calls: list[str]) -> None:
    good = format_python("m.py", SAMPLE)
    (entry,) = cache.iterdir()
    entry.unlink()
    os.mkfifo(entry)  # nobody writes it: reading would block
    calls.clear()
    assert format_python("m.py", SAMPLE) == good and len(calls) == len(split_definitions("m.py", SAMPLE))
    entry.unlink()
    entry.write_bytes(b"x" * (8 * len(SAMPLE) + 65537))  # larger than the render could need
    assert format_python("m.py", SAMPLE) == good


def test_check_full_does_not_depend_on_the_cache(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cache tampered only in layout (same code, same comments) passes the check of kept pieces, so generate
    writes it; check --full formats with black alone, so it finds the tree stale instead of confirming it."""
    monkeypatch.setattr(pipeline, "load_inputs", lambda schema: None)
    monkeypatch.setattr(pipeline, "build_outputs", lambda inputs: {"m.py": format_python("m.py", SAMPLE)})
    out = tmp_path / "out"
    assert cli.main(["generate", "--out", str(out)]) == 0
    assert (out / "m.py").read_text("utf-8") == _whole(SAMPLE)
    _tamper(cache, lambda piece: piece.replace("return a + b", "return (a + b)"))
    assert cli.main(["generate", "--out", str(out)]) == 0
    assert "return (a + b)" in (out / "m.py").read_text("utf-8")
    capsys.readouterr()
    assert cli.main(["check", "--full", "--out", str(out)]) == 1
    assert "m.py" in capsys.readouterr().err
