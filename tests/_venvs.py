"""The one way tests make the virtual environments they need beside .venv.

``tests/test_interpreters.py`` (one environment per supported interpreter, from
requirements.txt), ``tests/test_pydantic_floor.py`` and
``tests/test_connection_interop.py`` (the official Python SDK, from
tests/interop/requirements.txt) all use :func:`ensure_venv`: an environment is
made once, then reused while the SHA-256 of its requirements file is the one
stamped in it; a changed file rebuilds it from scratch. A lock beside the
environment lets two test workers ask for the same one at once.

Run as a script, ``python tests/_venvs.py [pytest arguments]`` is the second
half of ``make test``: it runs pytest with those arguments on each end of the
supported range (:data:`SUPPORTED`) that is not the running interpreter, in
that interpreter's environment under ``.venv-interpreters/``. An end not found
on the machine is skipped with a note, or is a failure when
``ACP_TYPES_REQUIRE_RANGE_ENDS=1`` (set by .ci/run).
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

STAMP = ".requirements-sha256"
ROOT = Path(__file__).resolve().parents[1]
SUPPORTED = ((3, 10), (3, 11), (3, 12), (3, 13))
INTERPRETER_VENVS = ROOT / ".venv-interpreters"


def ensure_venv(venv: Path, python: str, requirements: Path, *, timeout: float = 900) -> str:
    """``venv`` made by ``python`` with ``requirements`` installed; returns the environment's python.

    A failure to make it raises ``AssertionError`` with the end of pip's
    report, and leaves no stamp behind, so the next run starts over.
    """
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure_venv_locked(venv, python, requirements, timeout)


def _ensure_venv_locked(venv: Path, python: str, requirements: Path, timeout: float) -> str:
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()
    stamp = venv / STAMP
    venv_python = str(venv / "bin" / "python")
    if stamp.exists() and stamp.read_text() == digest and Path(venv_python).exists():
        return venv_python
    shutil.rmtree(venv, ignore_errors=True)
    made = subprocess.run([python, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=300)
    if made.returncode != 0:
        raise AssertionError(f"{python} -m venv {venv} failed: {made.stderr[-2000:]}")
    done = subprocess.run(
        [venv_python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", str(requirements)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise AssertionError(f"{requirements.name} does not install with {python}: {done.stderr[-2000:]}")
    stamp.write_text(digest)
    return venv_python


def _version_of(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True, timeout=30
        )
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


def interpreter_env(version: tuple[int, int], python: str) -> str:
    """An environment of that interpreter with the pinned tools (the running one is its own); returns its python."""
    if python == sys.executable:
        return python
    return ensure_venv(INTERPRETER_VENVS / f"{version[0]}.{version[1]}", python, ROOT / "requirements.txt")


def run_on_range_ends(pytest_args: list[str]) -> int:
    """pytest with ``pytest_args`` on each end of SUPPORTED but the running interpreter; the worst exit code."""
    found = find_interpreters()
    running = sys.version_info[:2]
    required = os.environ.get("ACP_TYPES_REQUIRE_RANGE_ENDS", "") == "1"
    worst = 0
    for end in sorted({SUPPORTED[0], SUPPORTED[-1]} - {running}):
        name = f"{end[0]}.{end[1]}"
        if end not in found:
            print(
                f"python {name} not found: the tests did not run on that end of the supported range"
                + (" (ACP_TYPES_REQUIRE_RANGE_ENDS=1 requires it)" if required else ""),
                flush=True,
            )
            worst = max(worst, 1 if required else 0)
            continue
        python = interpreter_env(end, found[end])
        print(f"tests on python {name} ({python}): pytest {' '.join(pytest_args)}", flush=True)
        worst = max(worst, subprocess.run([python, "-m", "pytest", *pytest_args], cwd=ROOT).returncode)
    return worst


if __name__ == "__main__":
    sys.exit(run_on_range_ends(sys.argv[1:]))
