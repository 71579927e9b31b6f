"""``python -m benchmarks.lines_compare BEFORE [AFTER]``: whole lines, one generated package against another.

``BEFORE`` and ``AFTER`` are folders holding an ``acp_types`` package (a
``generated/`` folder; ``AFTER`` defaults to this checkout's). The "lines"
figure of ``make bench`` compares ``parse_message`` + ``to_json`` with the
SDK; this compares it with an earlier version of acp_types, for the "2x
today's" target of issue 11. Two packages of one name cannot share a
process, so each is measured in its own processes, turn about, each time
beside the SDK's line as a yardstick; times are CPU time of the process
(``time.process_time``), less disturbed by other jobs than wall time, and
the best of the repeats counts. Get an earlier package with, for example::

    mkdir -p /tmp/before && git archive HEAD~3 generated | tar -x -C /tmp/before
    .venv-bench/bin/python -m benchmarks.lines_compare /tmp/before/generated
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import timeit
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _child(package: str) -> dict[str, list[float]]:
    sys.path.insert(0, package)
    import acp.schema as sdk

    import acp_types.v1 as v1
    from benchmarks.messages import CASES

    loads, dumps = json.loads, json.dumps
    sdk_models = {"session/update": sdk.SessionNotification, "initialize": sdk.InitializeResponse}
    out = {}
    for name, method, kind, payload in CASES:
        if kind == "params":
            envelope = {"jsonrpc": "2.0", "method": method, "params": payload}
        else:
            envelope = {"jsonrpc": "2.0", "id": 1, "result": payload}
        line = dumps(envelope)
        model = sdk_models[method]

        def ours(line: str = line, method: str = method) -> str:
            return v1.parse_message(line, method=method).to_json()

        def theirs(line: str = line, model: Any = model, part: str = kind) -> str:
            message = loads(line)
            value = model.model_validate(message[part])
            message[part] = value.model_dump(mode="json", by_alias=True, exclude_none=True)
            return dumps(message)

        def ours_in(line: str = line, method: str = method, part: str = kind) -> Any:
            return getattr(v1.parse_message(line, method=method), part)

        def theirs_in(line: str = line, model: Any = model, part: str = kind) -> Any:
            return model.model_validate(loads(line)[part])

        assert loads(ours()) == envelope, name

        def best(fn: Any) -> float:
            return min(timeit.repeat(fn, number=1000, repeat=9, timer=time.process_time)) / 1000

        out[name] = [best(ours), best(theirs)]
        out[f"{name} (receive)"] = [best(ours_in), best(theirs_in)]
    return out


def measure(before: str, after: str, rounds: int) -> dict[str, tuple[float, float, float, float]]:
    """Per line, the best CPU seconds of ``(before, after, SDK beside before, SDK beside after)``.

    ``before`` and ``after`` are folders holding an ``acp_types`` package;
    each is measured in its own processes, ``rounds`` times, turn about.
    Raises ``RuntimeError`` (with the child's error) when a package fails.
    """
    packages = {"before": before, "after": after}
    runs: dict[str, list[dict[str, list[float]]]] = {"before": [], "after": []}
    for _ in range(rounds):
        for label, package in packages.items():
            proc = subprocess.run(
                [sys.executable, "-m", "benchmarks.lines_compare", "--child", package],
                capture_output=True,
                text=True,
                cwd=ROOT,
                check=False,
            )
            if proc.returncode:
                raise RuntimeError(f"the {label} package failed: {proc.stderr.strip()[-300:]}")
            runs[label].append(json.loads(proc.stdout))
    return {
        name: (
            min(r[name][0] for r in runs["before"]),
            min(r[name][0] for r in runs["after"]),
            min(r[name][1] for r in runs["before"]),
            min(r[name][1] for r in runs["after"]),
        )
        for name in runs["after"][0]
    }


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "--child":
        print(json.dumps(_child(argv[1])))
        return 0
    if not argv or len(argv) > 2:
        print(__doc__, file=sys.stderr)
        return 2
    found = measure(argv[0], argv[1] if len(argv) > 1 else str(ROOT / "generated"), 3)
    print(f"{'line':40}  {'before':>9}  {'after':>9}  {'after/before':>12}  {'SDK/before':>10}  {'SDK/after':>9}")
    for name, (before, after, sdk_b, sdk_a) in found.items():
        print(
            f"{name:40}  {before * 1e6:7.1f}us  {after * 1e6:7.1f}us  {before / after:11.2f}x"
            f"  {sdk_b / before:9.2f}x  {sdk_a / after:8.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
