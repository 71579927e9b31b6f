"""Where the first message after import spends its time: its parts, measured inside the message itself.

Each run is a fresh process that imports ``acp_types.v1`` and sends the same
first message as the "first message after import" figure
(``parse_params(...).to_json()`` of the chunk), with the calls that make up
its parts timed where the message makes them:

- loading the class's stored entry (``acp_types._build.stored``), and within
  it importing the store module, ``marshal.loads`` of the entry and putting
  its references back;
- pydantic-core building the entry point's validator and the serializers
  from the stored schemas (every ``SchemaValidator`` and ``SchemaSerializer``
  the message constructs): what any design that validates with pydantic-core
  from a ready core schema pays, the floor;
- the rest: validating and writing back, and the Python around it all.

The timing wrappers (a dozen calls, each running cold Python code and two
clock reads) make the total here 0.2-0.3 ms more than the figure's own; the
parts inside them are not inflated, "the rest" is by about that much. Only
``bench_import`` calls :func:`parts`; it turns the medians into report rows.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Callable

_SNIPPET = """
import json, sys, time
import acp_types.v1
from benchmarks.messages import CASES, WIRE
name, method, kind, payload = CASES[0]
data = json.loads(WIRE[name])

import importlib, marshal
from acp_types import _build, _runtime

pc = time.perf_counter
spent = {"load": 0.0, "module": 0.0, "marshal": 0.0, "references": 0.0, "build": 0.0}

def timed(part, call):
    def run(*args, **kwargs):
        t = pc()
        try:
            return call(*args, **kwargs)
        finally:
            spent[part] += pc() - t
    return run

_build.stored = timed("load", _build.stored)
importlib.import_module = timed("module", importlib.import_module)   # _store imports it when called
loads = type(sys)("marshal")
loads.loads = timed("marshal", marshal.loads)
_build.marshal = loads
_build.references = timed("references", _build.references)
_build.SchemaSerializer = timed("build", _build.SchemaSerializer)
_runtime.SchemaValidator = timed("build", _runtime.SchemaValidator)

t0 = pc()
acp_types.v1.parse_params(method, data).to_json()
spent["total"] = pc() - t0
print(json.dumps(spent))
"""


def _once(run: Callable[[list[str]], subprocess.CompletedProcess[str]]) -> dict[str, float]:
    proc = run([sys.executable, "-c", _SNIPPET])
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    parts: dict[str, float] = json.loads(proc.stdout)
    return parts


def parts(repeats: int, run: Callable[[list[str]], subprocess.CompletedProcess[str]]) -> list[tuple[str, float, float]]:
    """``(label, median seconds, median total)`` of each part, over ``repeats`` fresh processes (at least 5).

    ``run`` runs a command as the benchmarks run every fresh process (their
    environment and working folder). The total is the message's own, timed in
    the same runs, so that each part reads as its share.
    """
    runs = [_once(run) for _ in range(max(repeats, 5))]

    def median(values: list[float]) -> float:
        return statistics.median(values)

    total = median([r["total"] for r in runs])
    rows = [
        ("loading its stored entry (import, marshal.loads, references)", [r["load"] for r in runs]),
        ("  entry load: importing the store module", [r["module"] for r in runs]),
        ("  entry load: marshal.loads of the entry", [r["marshal"] for r in runs]),
        ("  entry load: putting back its references", [r["references"] for r in runs]),
        ("pydantic-core building 1 validator + 3 serializers from the stored schemas (floor)",
         [r["build"] for r in runs]),
        ("the rest: validating, writing back, the Python around it", [r["total"] - r["load"] - r["build"] for r in runs]),
    ]
    return [(f"first message, part: {label}", median(values), total) for label, values in rows]
