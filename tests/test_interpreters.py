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

import glob
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from _venvs import ensure_venv
from conftest import ROOT

SUPPORTED = ((3, 10), (3, 11), (3, 12), (3, 13))
VENVS = ROOT / ".venv-interpreters"


def _version_of(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    major, minor = out.stdout.split()
    return int(major), int(minor)


def find_interpreters() -> dict[tuple[int, int], str]:
    """One interpreter per supported minor version: the running one, then PATH, then pyenv's."""
    candidates = [sys.executable]
    for major, minor in SUPPORTED:
        found = shutil.which(f"python{major}.{minor}")
        if found:
            candidates.append(found)
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(os.path.join(pyenv_root, "versions", "3.*", "bin", "python3")))
    candidates += sorted(glob.glob("/usr/bin/python3.*[0-9]")) + sorted(glob.glob("/usr/local/bin/python3.*[0-9]"))
    found_by_version: dict[tuple[int, int], str] = {}
    for python in candidates:
        version = _version_of(python)
        if version in SUPPORTED and version not in found_by_version:
            found_by_version[version] = python
    return dict(sorted(found_by_version.items()))


def _environment(version: tuple[int, int], python: str) -> str:
    """A venv of that interpreter with the pinned tools; returns its python."""
    if python == sys.executable:
        return python
    return ensure_venv(VENVS / f"{version[0]}.{version[1]}", python, ROOT / "requirements.txt")


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
        pythons = dict(zip(interpreters, pool.map(lambda item: _environment(*item), interpreters.items()),
                           strict=True))

    def check(python: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([python, "-m", "generator", "check", "--full"], cwd=ROOT, capture_output=True,
                              text=True, timeout=600, env={**os.environ, "ACP_TYPES_JOBS": "1"})

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(pythons, pool.map(check, pythons.values()), strict=True))
    failures = {f"{a}.{b}": r.stdout + r.stderr for (a, b), r in results.items() if r.returncode != 0}
    assert not failures, f"generated/ differs from what these interpreters render: {failures}"
