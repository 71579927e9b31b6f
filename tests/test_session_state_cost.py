"""What following a growing session costs: linear in what streamed, asserted as growth ratios (N vs 10N).

A reply of many small chunks or a long build log must cost each update its
own size, in the state (``apply``) and in the shipped clients' redraws
(examples/client.py, examples/transcript.py): before, both were O(N^2).
"""

from __future__ import annotations

import base64
import contextlib
import io
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_types import v1, v2

ROOT = Path(__file__).resolve().parents[1]
LINEAR = 25  # ten times the input: about 10x when linear, 45x to 280x when quadratic (measured)


def cpu(run: Callable[[], Any], repeat: int = 3) -> float:
    """The least CPU time of ``repeat`` runs of ``run`` (CPU, not wall clock: other processes do not count)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        run()
        best = min(best, time.process_time() - start)
    return best


def growth(make: Callable[[int], Callable[[], Any]], n: int) -> float:
    small, large = make(n), make(10 * n)
    return cpu(large) / max(cpu(small), 1e-6)


def _chunks(m: Any, n: int, text: str, message_id: str | None = "a") -> list[Any]:
    update: dict[str, Any] = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    if message_id is not None:
        update["messageId"] = message_id
    return [m.parse_params("session/update", {"sessionId": "s", "update": update}) for _ in range(n)]


def test_terminal_output_costs_each_chunk_its_own_size() -> None:
    data = base64.b64encode(b"x" * 1023 + b"\n").decode()
    update = {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": data}

    def make(n: int) -> Callable[[], Any]:
        notes = [v2.parse_params("session/update", {"sessionId": "s", "update": update}) for _ in range(n)]

        def run() -> None:
            state = v2.SessionState("s")
            seen = 0
            for note in notes:
                state.apply(note)
                terminal = state.terminals["t"]
                seen += len(terminal.output_since(seen))  # a follower reads what was appended
            assert seen == n * 1024 and len(state.terminals["t"].output) == n * 1024

        return run

    ratio = growth(make, 200)
    assert ratio < LINEAR, f"10x the chunks cost {ratio:.1f}x"


def test_a_terminal_snapshot_changes_the_revision_a_follower_checks() -> None:
    state = v2.SessionState("s")

    def send(update: dict[str, Any]) -> None:
        state.apply({"sessionId": "s", "update": {"terminalId": "t", **update}})

    b64 = lambda raw: base64.b64encode(raw).decode()  # noqa: E731
    send({"sessionUpdate": "terminal_output_chunk", "data": b64(b"ab")})
    t = state.terminals["t"]
    start = (t.revision, t.output_size)
    send({"sessionUpdate": "terminal_output_chunk", "data": b64(b"cd")})
    assert (t.revision, t.output_since(start[1])) == (start[0], b"cd")
    send({"sessionUpdate": "terminal_update", "output": {"data": b64(b"abcdef")}})  # extends: no redraw
    assert t.revision == start[0] and t.output == b"abcdef"
    send({"sessionUpdate": "terminal_update", "output": {"data": b64(b"zz")}})  # replaces: redraw
    assert t.revision != start[0] and t.output == b"zz" and t.text() == "zz"


def test_following_a_message_costs_what_was_appended() -> None:
    def make(n: int) -> Callable[[], Any]:
        notes = _chunks(v2, n, "abcd")

        def run() -> None:
            state = v2.SessionState("s")
            shown = 0
            for note in notes:
                state.apply(note)
                msg = state.messages[0]
                shown += len(msg.text_since(shown))
            assert shown == 4 * n == state.messages[0].text_length

        return run

    ratio = growth(make, 1000)
    assert ratio < LINEAR, f"10x the chunks cost {ratio:.1f}x"


def test_text_since_and_revision_say_what_changed() -> None:
    state = v2.SessionState("s")

    def send(update: dict[str, Any]) -> Any:
        state.apply({"sessionId": "s", "update": {"messageId": "a", **update}})
        return state.message("a")

    chunk = lambda text: {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}  # noqa: E731
    msg = send(chunk("Hel"))
    rev = msg.revision
    send(chunk("lo"))
    send({"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": "", "mimeType": "image/png"}})
    send(chunk(" you"))
    assert (msg.text, msg.text_length, msg.revision) == ("Hello you", 9, rev)
    assert [msg.text_since(i) for i in (0, 3, 4, 5, 6, 9, 20)] == [
        "Hello you",
        "lo you",
        "o you",
        " you",
        "you",
        "",
        "",
    ]
    whole = lambda text: {"sessionUpdate": "agent_message", "content": [{"type": "text", "text": text}]}  # noqa: E731
    send(whole("Hello you, again"))  # the same text and more: still an extension
    assert msg.revision == rev and msg.text_since(9) == ", again"
    send(whole("Bye"))  # rewritten
    assert msg.revision != rev and msg.text == "Bye" and msg.text_since(1) == "ye"
    copy = v2.SessionState.from_json(state.to_json())
    assert copy.message("a").text == "Bye" and copy.message("a").text_since(1) == "ye"


def _example(name: str) -> Any:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(ROOT / "examples"))


def test_the_example_client_redraws_at_the_cost_of_what_changed() -> None:
    example = _example("client")

    def make(version: Any) -> Callable[[int], Callable[[], Any]]:
        def make_n(n: int) -> Callable[[], Any]:
            notes = _chunks(version, n, "abcd", message_id=None if version is v1 else "a")

            def run() -> None:
                state, render, out = version.SessionState("s"), example.Render(), io.StringIO()
                with contextlib.redirect_stdout(out):
                    for note in notes:
                        state.apply(note)
                        render(state, note)
                assert out.getvalue() == "abcd" * n

            return run

        return make_n

    for version in (v1, v2):
        ratio = growth(make(version), 1000)
        assert ratio < LINEAR, f"{version.__name__}: 10x the chunks cost {ratio:.1f}x"


def test_the_transcript_example_redraws_at_the_cost_of_what_changed() -> None:
    example = _example("transcript")

    def make(n: int) -> Callable[[], Any]:
        notes = _chunks(v2, n, "abcd")

        def run() -> None:
            example.seen.clear()
            state, out = v2.SessionState("s"), io.StringIO()
            with contextlib.redirect_stdout(out):
                for note in notes:
                    state.apply(note)
                    example.show(state, note)
            assert out.getvalue() == "agent: " + "abcd" * n

        return run

    ratio = growth(make, 1000)
    assert ratio < LINEAR, f"10x the chunks cost {ratio:.1f}x"


def test_a_copied_message_follows_its_own_content() -> None:
    import copy

    state = v2.SessionState("s")
    for note in _chunks(v2, 2, "ab"):
        state.apply(note)
    msg = state.messages[0]
    assert msg.text == "abab"
    for twin in (copy.copy(msg), copy.deepcopy(msg)):
        twin.content.append(v2.TextContent(text="!"))
        assert (twin.text, twin.text_since(4), twin.revision) == ("abab!", "!", msg.revision)
        assert (msg.text, msg.text_length) == ("abab", 4)
