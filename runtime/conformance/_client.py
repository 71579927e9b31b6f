"""Client mode: the kit plays a scriptable agent for a client it spawns.

Hand-written: the source is runtime/conformance/_client.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

from typing import Any

from ._checks import Check, Result


async def run_client(command: list[str], versions: list[str], checks: list[Check], options: Any) -> tuple[list[Result], dict[str, Any]]:
    raise NotImplementedError
