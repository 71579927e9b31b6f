"""The diff's three outputs (terminal text, Markdown, JSON) and the generated rule table.

Everything here is a pure function of the changes and the two models: no clock,
no absolute path, sorted throughout, so a report can be a golden file.
"""

from __future__ import annotations

import json

from generator import __version__
from generator.crossversion import CrossMap
from generator.diff.compare import Change, compare
from generator.diff.rules import (
    ANY,
    AXES,
    LEVEL_TITLES,
    LEVELS,
    NEW_READER,
    PAIRING_TITLES,
    PAIRINGS,
    RULES,
    SUBJECTS,
    level_rank,
    rule,
)
from generator.model import Protocol
from generator.render.templated import md_cell

JSON_FORMAT = 1
_COLOURS = {"breaking": "\033[31m", "possibly-breaking": "\033[33m", "safe": "\033[32m"}
_BOLD, _DIM, _RESET = "\033[1m", "\033[2m", "\033[0m"


def counts(changes: list[Change]) -> dict[str, int]:
    return {level: sum(1 for c in changes if c.level == level) for level in LEVELS}


def _describe(p: Protocol) -> str:
    return f"{p.source} ({p.version}, protocolVersion {p.protocol_version}, {p.status})"


def _pairing(old: Protocol, new: Protocol, crossmap: CrossMap | None) -> str:
    if old.version == new.version:
        return "same version: methods, definitions and fields are paired by name"
    if crossmap is None:
        return "no cross-version map: renames show as a removal plus an addition"
    return "renames paired by the cross-version map"


def _summary(changes: list[Change]) -> str:
    c = counts(changes)
    if not changes:
        return "no changes"
    parts = [f"{c[level]} {LEVEL_TITLES[level].lower()}" for level in LEVELS if c[level]]
    return f"{len(changes)} change{'s' if len(changes) != 1 else ''}: " + ", ".join(parts)


def _context(c: Change) -> str:
    bits = []
    if c.direction:
        bits.append(c.direction)
    if c.sent_by:
        bits.append("sent by " + ("either side" if c.sent_by == "both" else f"the {c.sent_by}"))
    return ", ".join(bits)


def breaks(c: Change, sides: tuple[str, str] | None = None) -> str:
    """Which pairing of peers the change breaks, naming the peers when one side writes the payload.

    The old and new schemas are the two sides of the diff; "new agent reading an old client" is an agent
    built on the new schema receiving what a client built on the old one writes. ``sides`` names the new and
    the old schema otherwise ("client on the reference reading agent on ours").
    """
    r = rule(c.rule_id)
    if len(r.breaks) == 2 and r.new_reader == r.old_reader and c.sent_by not in ("client", "agent"):
        return "both pairings"
    parts = []
    for pairing in r.breaks:
        if c.sent_by in ("client", "agent"):
            writer = c.sent_by
            reader = "agent" if writer == "client" else "client"
            if sides is not None:
                new_side, old_side = sides if pairing == NEW_READER else sides[::-1]
                text = f"{reader} on {new_side} reading {writer} on {old_side}"
            else:
                text = (
                    f"new {reader} reading an old {writer}"
                    if pairing == NEW_READER
                    else f"old {reader} reading a new {writer}"
                )
        else:
            text = PAIRING_TITLES[pairing]
        parts.append(text if len(r.breaks) == 1 or r.outcome(pairing) == c.level else f"{text} ({r.outcome(pairing)})")
    return "; ".join(parts)


# ---------------------------------------------------------------- text


def text_report(
    old: Protocol, new: Protocol, changes: list[Change], crossmap: CrossMap | None = None, colour: bool = False
) -> str:
    """Grouped by level, then axis; colour only when asked (the caller checks for a terminal)."""

    def paint(text: str, code: str) -> str:
        return f"{code}{text}{_RESET}" if colour else text

    lines = [f"{_describe(old)} -> {_describe(new)}", f"({_pairing(old, new, crossmap)})", _summary(changes)]
    for level in LEVELS:
        group = [c for c in changes if c.level == level]
        if not group:
            continue
        lines.append("")
        lines.append(paint(f"{LEVEL_TITLES[level].upper()} ({len(group)})", _BOLD + _COLOURS[level]))
        for axis in AXES:
            sub = [c for c in group if c.axis == axis]
            if not sub:
                continue
            lines.append(f"  {axis} ({len(sub)})")
            for c in sub:
                ctx = "; ".join(x for x in (_context(c), breaks(c) and "breaks " + breaks(c)) if x)
                tail = paint(f"[{c.rule_id}{'; ' + ctx if ctx else ''}]", _DIM)
                lines.append(f"    {c.location}: {c.message}{' [unstable]' if c.unstable else ''}  {tail}")
                if c.hint:
                    lines.append(f"      hint: {c.hint}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- Markdown


def markdown_changes(
    old: Protocol,
    new: Protocol,
    changes: list[Change],
    crossmap: CrossMap | None = None,
    generated_doc: bool = False,
    title: str | None = None,
    note: str | None = None,
) -> str:
    """A Markdown report, for a pull request, or for docs/ in generated/ (``generated_doc``); ``note`` is a
    paragraph after the provenance."""
    out = [title or f"# Changes from {old.version} to {new.version}", ""]
    provenance = (
        f"Generated by the acp-types generator {__version__} (`python -m generator diff`) from "
        f"`{old.source}` (sha256 {old.digest[:16]}) and `{new.source}` (sha256 {new.digest[:16]})."
    )
    if generated_doc:
        provenance += " Do not edit; regenerate with `make generate` after changing the schemas."
    out.append(provenance)
    out.append("")
    if note:
        out += [note, ""]
    out.append(f"- Old: {_describe(old)}")
    out.append(f"- New: {_describe(new)}")
    out.append(f"- Pairing: {_pairing(old, new, crossmap)}")
    out.append(
        "- Levels and axes follow the rules in `docs/diff-rules.md`: *wire* breaks peers speaking the "
        "protocol, *source* breaks code importing `acp_types`. *Breaks* names the pairing of peers that "
        'fails, one built on the old schema and one on the new: "new client reading an old agent" is a '
        "client on the new schema receiving what an agent on the old one writes."
    )
    out.append("")
    if not changes:
        out.append("No changes.")
        return "\n".join(out) + "\n"
    out.append("| level | wire | source | total |")
    out.append("| --- | ---: | ---: | ---: |")
    for level in LEVELS:
        row = [sum(1 for c in changes if c.level == level and c.axis == axis) for axis in AXES]
        out.append(f"| {LEVEL_TITLES[level]} | {row[0]} | {row[1]} | {sum(row)} |")
    out.append(
        f"| **Total** | {sum(1 for c in changes if c.axis == 'wire')} | "
        f"{sum(1 for c in changes if c.axis == 'source')} | {len(changes)} |"
    )
    for level in LEVELS:
        group = [c for c in changes if c.level == level]
        if not group:
            continue
        out += ["", f"## {LEVEL_TITLES[level]} ({len(group)})", ""]
        out.append("| where | change | axis | direction | breaks | rule |")
        out.append("| --- | --- | --- | --- | --- | --- |")
        for c in group:
            message = c.message + (" (unstable)" if c.unstable else "") + (f" (hint: {c.hint})" if c.hint else "")
            out.append(
                f"| `{md_cell(c.location)}` | {md_cell(message)} | {c.axis} | {md_cell(_context(c)) or '—'} "
                f"| {md_cell(breaks(c)) or '—'} | `{c.rule_id}` |"
            )
    return "\n".join(out) + "\n"


def markdown_report(old: Protocol, new: Protocol, crossmap: CrossMap | None) -> str:
    """The Markdown report of ``old`` against ``new`` (docs/v1-to-v2.md in generated/)."""
    return markdown_changes(old, new, compare(old, new, crossmap), crossmap, generated_doc=True)


# ---------------------------------------------------------------- JSON


def json_report(old: Protocol, new: Protocol, changes: list[Change], crossmap: CrossMap | None = None) -> str:
    """Stable field names for CI; ``format`` changes only if they do."""

    def side(p: Protocol) -> dict[str, object]:
        return {
            "source": p.source,
            "version": p.version,
            "protocolVersion": p.protocol_version,
            "status": p.status,
            "sha256": p.digest,
        }

    doc = {
        "format": JSON_FORMAT,
        "old": side(old),
        "new": side(new),
        "crossVersionMap": old.version != new.version and crossmap is not None,
        "summary": counts(changes),
        "changes": [c.to_json() for c in changes],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------- the rule table


def rules_markdown() -> str:
    """docs/diff-rules.md, generated from ``generator.diff.rules.RULES``."""
    from generator.diff import rules as rules_module

    out = [
        "# Diff rules",
        "",
        f"Generated by the acp-types generator {__version__} from `generator/diff/rules.py`. Do not edit; "
        "regenerate with `make generate` after changing the rules.",
        "",
        "`python -m generator diff OLD NEW` reports every change under one of these rules. "
        "`--fail-on breaking|possibly-breaking|any` exits 1 when a change at that level (or worse) is found.",
        "",
    ]
    out.append(rules_module.CONVENTIONS.strip())
    out.append("")
    out.append(
        "Levels: **breaking**, **possibly-breaking**, **safe**. A rule whose direction is *any* is judged "
        "the same way in requests and responses. The two pairing columns give the wire outcome when the "
        "payload's reader follows the new schema and its writer the old one, and the other way round."
    )
    for subject in SUBJECTS:
        group = [r for r in RULES if r.subject == subject]
        if not group:
            continue
        out += ["", f"## {subject.capitalize()}", ""]
        out.append(
            f"| rule | level | axis | direction | {' | '.join(PAIRING_TITLES[p] for p in PAIRINGS)} | when | why |"
        )
        out.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in sorted(group, key=lambda r: (level_rank(r.level), r.id)):
            direction = "any" if r.direction == ANY else r.direction
            outcomes = " | ".join(r.outcome(p) for p in PAIRINGS)
            out.append(
                f"| `{r.id}` | {r.level} | {r.axis} | {direction} | {outcomes} | {md_cell(r.summary)} "
                f"| {md_cell(r.rationale)} |"
            )
    return "\n".join(out) + "\n"
