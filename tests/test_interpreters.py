"""The generated tree is the same bytes under every supported interpreter (3.10 to 3.13).

Each interpreter of that range found on the machine gets a virtual
environment of its own from the pinned requirements.txt (kept in
``.venv-interpreters/`` and reused while requirements.txt is unchanged), then
renders the whole tree in memory and compares it with ``generated/`` byte for
byte (``check --full``). The running interpreter counts as one of them.

``ACP_TYPES_MIN_INTERPRETERS`` (set by .ci/run) makes finding fewer than that
many interpreters a failure instead of a skip.
"""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
from _venvs import find_interpreters, interpreter_env
from conftest import ROOT


def test_every_supported_interpreter_renders_the_committed_bytes() -> None:
    interpreters = find_interpreters()
    wanted = int(os.environ.get("ACP_TYPES_MIN_INTERPRETERS", "0") or 0)
    names = ", ".join(f"{a}.{b}" for a, b in interpreters)
    print(f"interpreters found: {names}")
    if len(interpreters) < max(wanted, 2):
        message = f"found {len(interpreters)} supported interpreter(s) ({names}); need at least {max(wanted, 2)}"
        if wanted:
            pytest.fail(message)
        pytest.skip(message + " (set ACP_TYPES_MIN_INTERPRETERS to make this a failure)")
    with ThreadPoolExecutor(max_workers=len(interpreters)) as pool:
        pythons = dict(
            zip(interpreters, pool.map(lambda item: interpreter_env(*item), interpreters.items()), strict=True)
        )

    def check(python: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [python, "-m", "generator", "check", "--full"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "ACP_TYPES_JOBS": "1"},
        )

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(pythons, pool.map(check, pythons.values()), strict=True))
    failures = {f"{a}.{b}": r.stdout + r.stderr for (a, b), r in results.items() if r.returncode != 0}
    assert not failures, f"generated/ differs from what these interpreters render: {failures}"
