"""Checks as data: each has a stable id, a level, who it binds, its versions and its source.

A check is an ``async`` function of a context that returns nothing (SUCCESS),
or raises :class:`Fail`, :class:`Skip` or :class:`Note` (INFO). A failure of a
SHOULD check is reported as WARNING. The id is the inventory row the check
tests (``../shared/conformance-musts.md`` in the project), ``rows`` lists every
row it covers.

Hand-written: the source is runtime/conformance/_checks.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

SUCCESS, FAILURE, WARNING, SKIPPED, INFO = "SUCCESS", "FAILURE", "WARNING", "SKIPPED", "INFO"
VERDICTS = (SUCCESS, FAILURE, WARNING, SKIPPED, INFO)


class Fail(Exception):
    """The rule is broken; ``seqs`` are the transcript lines that show it."""

    def __init__(self, detail: str, *seqs: int, soft: bool = False) -> None:
        super().__init__(detail)
        self.detail = detail
        self.seqs = seqs
        self.soft = soft  # only SHOULD-level rules are broken: a WARNING


class Skip(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.detail = reason


class Note(Exception):
    """Nothing to judge, but worth saying (INFO)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True)
class Check:
    id: str
    title: str
    level: str  # MUST or SHOULD
    binds: str  # agent, client or both
    versions: tuple[str, ...]
    source: str  # seed or page, and section
    suite: str  # core or seeds
    mode: str  # agent: the kit plays the client; client: the kit plays the agent
    run: Callable[[Any], Awaitable[None]] = field(compare=False, repr=False)
    rows: tuple[str, ...] = ()
    final: bool = False  # judged over the whole exchange, after every other check
    prompt: bool = False  # needs a prompt turn (the agent's model): the "prompt" suite, else "setup"

    @property
    def covers(self) -> tuple[str, ...]:
        return self.rows or (self.id,)

    @property
    def tags(self) -> tuple[str, str]:
        """The suites it belongs to: core or seeds, and prompt or setup."""
        return (self.suite, "prompt" if self.prompt else "setup")


@dataclass
class Result:
    check: Check
    version: str
    verdict: str
    detail: str = ""
    evidence: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.check.id}@{self.version}"

    def as_dict(self) -> dict[str, Any]:
        c = self.check
        return {
            "id": c.id,
            "version": self.version,
            "title": c.title,
            "level": c.level,
            "binds": c.binds,
            "suite": c.suite,
            "source": c.source,
            "rows": list(c.covers),
            "verdict": self.verdict,
            "detail": self.detail,
            "evidence": self.evidence,
            "seconds": round(self.seconds, 3),
        }


REGISTRY: dict[str, list[Check]] = {"agent": [], "client": []}


def check(
    id: str,
    title: str,
    *,
    level: str = "MUST",
    binds: str = "agent",
    versions: tuple[str, ...] = ("v1", "v2"),
    source: str,
    suite: str = "core",
    mode: str = "agent",
    rows: tuple[str, ...] = (),
    final: bool = False,
    prompt: bool = False,
) -> Callable[[Callable[[Any], Awaitable[None]]], Callable[[Any], Awaitable[None]]]:
    """Register the decorated coroutine as a check (ids are unique per mode)."""

    def register(fn: Callable[[Any], Awaitable[None]]) -> Callable[[Any], Awaitable[None]]:
        if any(c.id == id for c in REGISTRY[mode]):
            raise ValueError(f"check {id} is registered twice")
        REGISTRY[mode].append(Check(id, title, level, binds, versions, source, suite, mode, fn, rows, final, prompt))
        return fn

    return register


SUITES = ("core", "seeds", "setup", "prompt")


def checks(mode: str, suites: tuple[str, ...] = ("core", "seeds"), case: str | None = None) -> list[Check]:
    """The registered checks of ``mode`` in the given suites (or the one with id ``case``).

    ``core`` and ``seeds`` say where a rule comes from, ``setup`` and ``prompt`` whether a check needs
    a prompt turn (an agent's model); a check is chosen when every kind of suite named has it.
    """
    if case:
        return [c for c in REGISTRY[mode] if c.id == case]
    source = [s for s in suites if s in ("core", "seeds")] or ["core", "seeds"]
    need = [s for s in suites if s in ("setup", "prompt")] or ["setup", "prompt"]
    return [c for c in REGISTRY[mode] if c.suite in source and c.tags[1] in need]


def scrub(results: list[Result], root: str) -> list[Result]:
    """Reports name the kit's temporary workspace ``$WORKSPACE``, so that two runs compare."""
    for r in results:
        r.detail = r.detail.replace(root, "$WORKSPACE")
        r.evidence = [line.replace(root, "$WORKSPACE") for line in r.evidence]
    return results
