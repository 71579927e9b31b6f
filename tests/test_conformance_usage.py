"""The conformance kit's reports escape what a program wrote, and bad usage is one line and exit 2, fast."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_conformance import _cli as kit  # the kit as a user runs it

from acp_types import conformance
from acp_types.conformance._checks import Result
from acp_types.conformance._report import MAX_BASELINE, as_junit, as_markdown, as_text, judge

HOSTILE = "\x1b[2J\x1b]0;owned\x07 bell \r carriage \x00 nul \x0b vt \ud800 ``` fence | pipe \x9b csi"


def results() -> list[Result]:
    check = conformance.REGISTRY["agent"][0]
    return [
        Result(check, "v1", "FAILURE", HOSTILE, [f"#1 <- program {HOSTILE}"]),
        Result(check, "v2", "WARNING", HOSTILE, [HOSTILE]),
    ]


def test_text_has_no_terminal_escapes_from_the_program() -> None:
    rs = results()
    text = as_text("agent", rs, {}, judge(rs, set()), colour=False)
    assert "\x1b" not in text and "\x07" not in text and "\r" not in text and "\x9b" not in text
    assert "\\x1b[2J" in text  # shown, escaped
    coloured = as_text("agent", rs, {}, judge(rs, set()), colour=True)
    assert "\x1b[2J" not in coloured and "\x1b[31m" in coloured  # the kit's own colours only


def test_junit_is_well_formed_xml_whatever_the_program_wrote() -> None:
    rs = results()
    root = ET.fromstring(as_junit("agent", rs).encode("utf-8", "surrogatepass"))
    failure = root.find("testcase/failure")
    assert failure is not None and "\\x00" in (failure.text or "") and "\\x1b" in failure.get("message", "")


def test_markdown_keeps_its_table_and_fences() -> None:
    rs = results()
    md = as_markdown("agent", ["agent\r\x1b[31m`x`"], rs, {}, judge(rs, set()))
    assert "\r" not in md and "\x1b" not in md and "\x00" not in md
    rows = [line for line in md.splitlines() if line.startswith("| FAILURE")]
    assert len(rows) == 1 and rows[0].count(" | ") == 7  # the pipe in the detail is escaped, not a column
    fences = [line for line in md.splitlines() if line.startswith("```")]
    assert fences and all(f == "````" for f in fences)  # longer than the ``` inside the evidence


def one_line_exit_2(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 2, out
    assert "Traceback" not in out.stderr
    return out.stderr.strip().splitlines()[-1]


def test_a_transcript_path_that_is_a_file_is_bad_usage(tmp_path: Path) -> None:
    taken = tmp_path / "t"
    taken.write_text("keep me")
    line = one_line_exit_2(kit("agent", "--transcript", str(taken), "--", "true"))
    assert "not a folder" in line and taken.read_text() == "keep me"


def test_a_huge_baseline_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "b"
    with big.open("wb") as f:
        f.truncate(MAX_BASELINE * 64)  # sparse: costs nothing to make, would cost 64 MiB to read
    assert "over" in one_line_exit_2(kit("agent", "--expected-failures", str(big), "--", "true"))


def test_a_fifo_as_baseline_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    assert "not a regular file" in one_line_exit_2(kit("agent", "--expected-failures", str(fifo), "--", "true"))


@pytest.mark.parametrize("flag", ["--json", "--junit", "--markdown"])
def test_a_report_path_that_is_a_folder_is_bad_usage(tmp_path: Path, flag: str) -> None:
    assert "not a regular file" in one_line_exit_2(kit("agent", flag, str(tmp_path), "--", "true"))


def test_help_shows_the_defaults() -> None:
    text = kit("--help").stdout
    for default in ("(default: both)", "(default: all)", "(default: 10.0)", "(default: 5.0)", "(default: allow)"):
        assert default in " ".join(text.split()), default


FLOOD = r"""
import sys
line = ('{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"' + "x" * 900 + '"}}}}\n').encode()
out = sys.stdout.buffer
while True:
    out.write(line * 64)
"""


def test_a_flooding_program_costs_the_kit_a_bounded_amount(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio
    import tracemalloc

    from acp_types.conformance import _driver

    monkeypatch.setattr(_driver, "KEEP_EVENT_BYTES", 256 << 10, raising=False)
    monkeypatch.setattr(_driver, "KEEP_LINE_BYTES", 256 << 10, raising=False)

    async def answer(method: str, params: object) -> object:
        return {}

    async def go() -> tuple[int, int]:
        program = _driver.Program([sys.executable, "-c", FLOOD], _driver.Transcript(), answer, version="v2")
        await program.start()
        try:
            seen = []
            for lines in (4_000, 20_000):
                assert await program.wait_for(lambda n=lines: program.transcript.seq >= n, 120)
                seen.append(tracemalloc.get_traced_memory()[0])
            return seen[0], seen[1]
        finally:
            await program.stop()

    tracemalloc.start()
    try:
        small, large = asyncio.run(go())
    finally:
        tracemalloc.stop()
    assert large < small * 1.5, (small, large)  # 5x the flood, about the same memory
