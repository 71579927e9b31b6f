"""The kit's reports: text (colour only on a terminal), JSON, JUnit XML and Markdown, and the baseline.

Hand-written: the source is runtime/conformance/_report.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from ._checks import FAILURE, VERDICTS, WARNING, Result

COLOURS = {"SUCCESS": "32", "FAILURE": "31", "WARNING": "33", "SKIPPED": "90", "INFO": "36"}


MAX_BASELINE = 1 << 20  # bytes: a baseline is a list of ids, not a data file

# What a program writes reaches the reports only escaped: C0 and C1 controls (terminal escapes,
# carriage returns, NUL...) as \\xNN, and, for XML, what XML 1.0 cannot carry at all.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def clean(text: str) -> str:
    """One line of program text, safe on a terminal and in Markdown: every control character escaped."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _xml(text: str) -> str:
    return escape(_NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text))


def _xml_attr(text: str) -> str:
    return quoteattr(_NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text))


class BaselineError(ValueError):
    pass


def read_baseline(path: Path) -> set[str]:
    """``--expected-failures``: one ``ID`` (every version) or ``ID@vN`` a line; ``#`` starts a comment."""
    try:
        if not path.is_file():  # a FIFO nobody writes would block the run before it starts
            raise BaselineError(f"{path}: the baseline is not a regular file")
        if path.stat().st_size > MAX_BASELINE:
            raise BaselineError(f"{path}: the baseline is over {MAX_BASELINE} bytes (one ID or ID@vN a line)")
        with path.open("rb") as f:
            text = f.read(MAX_BASELINE + 1).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: cannot read the baseline: {exc}") from None
    if len(text) > MAX_BASELINE:
        raise BaselineError(f"{path}: the baseline is over {MAX_BASELINE} bytes (one ID or ID@vN a line)")
    entries = set()
    for number, line in enumerate(text.splitlines(), 1):
        entry = line.split("#", 1)[0].strip()
        if entry and (" " in entry or entry.count("@") > 1):
            raise BaselineError(f"{path}:{number}: expected ID or ID@vN, got {entry!r}")
        if entry:
            entries.add(entry)
    return entries


def judge(results: list[Result], baseline: set[str]) -> dict[str, Any]:
    """Which failures count: a MUST failure outside the baseline, or a baseline entry that passes (stale)."""

    def listed(r: Result) -> bool:
        return r.key in baseline or r.check.id in baseline

    unexpected = [r.key for r in results if r.verdict == FAILURE and not listed(r)]
    expected = [r.key for r in results if r.verdict in (FAILURE, WARNING) and listed(r)]
    # stale: listed, and every result it names passed (one that could not be judged, SKIPPED or INFO, is not stale)
    verdicts: dict[str, set[str]] = {}
    for r in results:
        for name in (r.key, r.check.id):
            verdicts.setdefault(name, set()).add(r.verdict)
    stale = sorted(entry for entry in baseline if verdicts.get(entry) == {"SUCCESS"})
    return {
        "unexpected_failures": unexpected,
        "expected_failures": expected,
        "stale_baseline": stale,
        "passed": not unexpected and not stale,
    }


LEVELS = ("MUST", "SHOULD")


def summary(results: list[Result]) -> dict[str, dict[str, int]]:
    """Counts of each verdict per level; every level is there, with zeros when none of its checks ran."""
    table: dict[str, Counter[str]] = {level: Counter() for level in LEVELS}
    for r in results:
        table.setdefault(r.check.level, Counter())[r.verdict] += 1
    return {level: {v: counts[v] for v in VERDICTS} for level, counts in sorted(table.items())}


def as_json(mode: str, command: list[str], results: list[Result], info: dict[str, Any], outcome: dict[str, Any]) -> str:
    data = {
        "mode": mode,
        "command": command,
        "partial": bool(outcome.get("partial")),
        "summary": summary(results),
        "outcome": outcome,
        "programs": info,
        "checks": [r.as_dict() for r in results],
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def as_result(r: Result, colour: bool) -> str:
    """One result as text: its verdict line, its detail and its evidence (what the run prints as it ends)."""
    verdict = f"\033[{COLOURS[r.verdict]}m{r.verdict:<7}\033[0m" if colour else f"{r.verdict:<7}"
    out = [f"{verdict} {r.key:<14} {r.check.level:<6} {r.check.title} ({r.seconds:.2f} s)"]
    if r.detail:
        out.append(f"        {clean(r.detail)}")
    out += [f"          {clean(line)}" for line in r.evidence]
    return "\n".join(out) + "\n"


def as_text(
    mode: str,
    results: list[Result],
    info: dict[str, Any],
    outcome: dict[str, Any],
    colour: bool,
    quiet: bool = False,
    shown: bool = False,
) -> str:
    """The text report; ``shown``: the results were printed as they ended, only the summary follows."""
    out = []
    for r in results:
        if shown or quiet and r.verdict not in (FAILURE, WARNING):
            continue
        out.append(as_result(r, colour).rstrip("\n"))
    out.append("")
    out += _summary_lines(results)
    for version, data in info.items():
        out += [
            "",
            f"{mode} {version}: method, advertised (yes / no / baseline) by the {'agent' if mode == 'agent' else 'kit'}, observed",
        ] + [f"  {row['method']:<28} {row['advertised']:<9} {row['observed']}" for row in data.get("table", [])]
        if data.get("error"):
            out.append(f"  {clean(str(data['error']))}")
    out.append("")
    out += _outcome_lines(outcome)
    return "\n".join(out) + "\n"


def _summary_lines(results: list[Result]) -> list[str]:
    lines = ["level   " + " ".join(f"{v:>8}" for v in VERDICTS)]
    for level, counts in summary(results).items():
        lines.append(f"{level:<8}" + " ".join(f"{counts[v]:>8}" for v in VERDICTS))
    return lines


def _outcome_lines(outcome: dict[str, Any]) -> list[str]:
    lines = []
    if outcome.get("partial"):
        lines.append(f"PARTIAL REPORT: {outcome.get('interrupted', 'interrupted')}")
    if outcome["unexpected_failures"]:
        lines.append("MUST failures: " + ", ".join(outcome["unexpected_failures"]))
    if outcome["expected_failures"]:
        lines.append("expected (baseline): " + ", ".join(outcome["expected_failures"]))
    if outcome["stale_baseline"]:
        lines.append("stale baseline entries (they pass now): " + ", ".join(outcome["stale_baseline"]))
    lines.append("PARTIAL" if outcome.get("partial") else "PASS" if outcome["passed"] else "FAIL")
    return lines


def _cell(text: str) -> str:
    return clean(text.replace("\n", " ")).replace("|", "\\|")


def as_markdown(
    mode: str, command: list[str], results: list[Result], info: dict[str, Any], outcome: dict[str, Any]
) -> str:
    out = [
        f"# ACP conformance: {mode} mode",
        "",
        "Program: `" + clean(" ".join(command)).replace("`", "'") + "`",
        "",
        *(
            [f"**Partial report**: {_cell(str(outcome.get('interrupted', 'interrupted')))}", ""]
            if outcome.get("partial")
            else []
        ),
        "| level | " + " | ".join(VERDICTS) + " |",
        "|---|" + "---|" * len(VERDICTS),
    ]
    for level, counts in summary(results).items():
        out.append(f"| {level} | " + " | ".join(str(counts[v]) for v in VERDICTS) + " |")
    out += [
        "",
        "| verdict | check | version | level | binds | rule | source | detail |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        c = r.check
        out.append(
            f"| {r.verdict} | {c.id} | {r.version} | {c.level} | {c.binds} | {_cell(c.title)} | {_cell(c.source)} | {_cell(r.detail)} |"
        )
    for version, data in info.items():
        rows = data.get("table", [])
        if rows:
            head = (
                "what the agent advertised against what it did"
                if mode == "agent"
                else "what the client called, and whether the kit's agent advertised it"
            )
            out += ["", f"## {version}: {head}", "", "| method | advertised | observed |", "|---|---|---|"]
            out += [f"| `{row['method']}` | {row['advertised']} | {row['observed']} |" for row in rows]
        if data.get("error"):
            out += ["", f"{version}: {_cell(data['error'])}"]
    failing = [r for r in results if r.evidence]
    if failing:
        out += ["", "## Evidence", ""]
        for r in failing:
            lines = [clean(line) for line in r.evidence]
            fence = "`" * max(3, 1 + max((len(run) for line in lines for run in re.findall("`+", line)), default=0))
            out += [f"### {r.key}: {r.verdict}", "", fence, *lines, fence, ""]
    out += [""] + [f"**{line}**" if i == 0 else line for i, line in enumerate(_outcome_lines(outcome)[-1:])]
    return "\n".join(out).rstrip() + "\n"


def as_junit(mode: str, results: list[Result], partial: str | None = None) -> str:
    failures = sum(r.verdict == FAILURE for r in results)
    skipped = sum(r.verdict == "SKIPPED" for r in results)
    total = sum(r.seconds for r in results)
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<testsuite name={_xml_attr("acp-conformance-" + mode)} tests="{len(results)}" failures="{failures}" skipped="{skipped}" time="{total:.3f}">',
    ]
    if partial is not None:  # an interrupted run: what ran, said to be partial
        out.append(f'  <properties><property name="partial" value={_xml_attr(partial)}/></properties>')
    for r in results:
        head = f'  <testcase classname={_xml_attr(f"{mode}.{r.version}.{r.check.suite}")} name={_xml_attr(f"{r.check.id} {r.check.title}")} time="{r.seconds:.3f}"'
        body = "\n".join(r.evidence)
        if r.verdict == FAILURE:
            out.append(f"{head}><failure message={_xml_attr(r.detail)}>{_xml(body)}</failure></testcase>")
        elif r.verdict == "SKIPPED":
            out.append(f"{head}><skipped message={_xml_attr(r.detail)}/></testcase>")
        elif r.verdict in (WARNING, "INFO"):
            out.append(
                f"{head}><system-out>{_xml(r.verdict + ': ' + r.detail + chr(10) + body)}</system-out></testcase>"
            )
        else:
            out.append(f"{head}/>")
    out.append("</testsuite>")
    return "\n".join(out) + "\n"
