"""black's output cache (generator/render/formatting.py): it stands in for black only where black would write the same."""

from __future__ import annotations

import os
from pathlib import Path

import black
import pytest

from generator.render import formatting
from generator.render.formatting import RenderBug, format_python

UGLY = "x = {  'a':1 ,'b' :2}\ndef f( a,b ):\n  return a+b\n"


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


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.glob("*/*") if not p.name.startswith(".tmp-"))


def test_the_same_text_is_formatted_once(cache: Path, calls: list[str]) -> None:
    first = format_python("m.py", UGLY)
    assert first == black.format_str(UGLY, mode=formatting._MODE)
    calls.clear()
    assert format_python("other.py", UGLY) == first
    assert calls == []
    assert len(_entries(cache)) == 1


def test_other_text_or_another_black_or_interpreter_is_formatted_again(
    cache: Path, calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    format_python("m.py", UGLY)
    format_python("m.py", UGLY + "y = 1\n")
    assert len(calls) == 2
    monkeypatch.setattr(formatting, "_KEY_PREFIX", "black 0.0, py310 target, python 3.99\0")
    format_python("m.py", UGLY)
    assert len(calls) == 3
    assert len(_entries(cache)) == 3


def test_an_entry_that_does_not_match_its_checksum_is_formatted_again(cache: Path, calls: list[str]) -> None:
    good = format_python("m.py", UGLY)
    (entry,) = _entries(cache)
    digest, _, body = entry.read_bytes().partition(b"\n")
    entry.write_bytes(digest + b"\n" + body.replace(b"a + b", b"a - b"))
    assert format_python("m.py", UGLY) == good
    assert len(calls) == 2
    entry.write_bytes(b"")  # cut short
    assert format_python("m.py", UGLY) == good
    assert len(calls) == 3
    assert entry.read_bytes().partition(b"\n")[2].decode() == good


def test_invalid_python_is_a_render_bug_and_is_not_kept(cache: Path) -> None:
    with pytest.raises(RenderBug, match=r"^broken\.py: rendered text is not valid Python"):
        format_python("broken.py", "def (:\n")
    assert _entries(cache) == []


def test_a_cache_that_cannot_be_written_only_costs_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setattr(formatting, "CACHE_DIR", blocker / "format")
    assert format_python("m.py", UGLY) == black.format_str(UGLY, mode=formatting._MODE)
    assert blocker.read_text() == "not a folder"


def test_the_least_recently_used_entries_go_past_the_limit(
    cache: Path, calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(formatting, "KEEP", 3)
    texts = [f"v{i} = {i}\n" for i in range(4)]
    for i, text in enumerate(texts[:3]):
        before = set(_entries(cache))
        format_python("m.py", text)
        (new,) = set(_entries(cache)) - before
        os.utime(new, (i + 1, i + 1))  # used at second i + 1: the order is clear on any clock
    format_python("m.py", texts[0])  # used again: now the most recent
    format_python("m.py", texts[3])  # a fourth entry: the least recently used one (texts[1]) goes
    assert len(_entries(cache)) == 3
    calls.clear()
    for text in (texts[0], texts[2], texts[3]):
        format_python("m.py", text)
    assert calls == []
    format_python("m.py", texts[1])
    assert calls == [texts[1]]
