"""Problems found in the input, reported with file and JSON pointer."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with a schema file, and how to fix it."""

    file: str
    pointer: str
    message: str
    hint: str = ""

    def format(self) -> str:
        where = f"{self.file}#{self.pointer}" if self.pointer else self.file
        text = f"{where}: {self.message}"
        if self.hint:
            text += f"\n    fix: {self.hint}"
        return text


class SchemaError(Exception):
    """The input cannot be used; carries every problem found."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(set(problems))
        super().__init__("\n".join(p.format() for p in self.problems))


class UsageError(Exception):
    """The command line asked for something that cannot be done."""


def pointer(*parts: object) -> str:
    """Build a JSON pointer (RFC 6901) from path parts."""
    out = ""
    for part in parts:
        out += "/" + str(part).replace("~", "~0").replace("/", "~1")
    return out
