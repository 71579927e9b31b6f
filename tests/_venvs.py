"""The one way tests make the virtual environments they need beside .venv.

``tests/test_interpreters.py`` (one environment per supported interpreter, from
requirements.txt) and ``tests/test_connection_interop.py`` (the official Python
SDK, from tests/interop/requirements.txt) both use :func:`ensure_venv`: an
environment is made once, then reused while the SHA-256 of its requirements
file is the one stamped in it; a changed file rebuilds it from scratch.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

STAMP = ".requirements-sha256"


def ensure_venv(venv: Path, python: str, requirements: Path, *, timeout: float = 900) -> str:
    """``venv`` made by ``python`` with ``requirements`` installed; returns the environment's python.

    A failure to make it raises ``AssertionError`` with the end of pip's
    report, and leaves no stamp behind, so the next run starts over.
    """
    digest = hashlib.sha256(requirements.read_bytes()).hexdigest()
    stamp = venv / STAMP
    venv_python = str(venv / "bin" / "python")
    if stamp.exists() and stamp.read_text() == digest and Path(venv_python).exists():
        return venv_python
    shutil.rmtree(venv, ignore_errors=True)
    made = subprocess.run([python, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=300)
    if made.returncode != 0:
        raise AssertionError(f"{python} -m venv {venv} failed: {made.stderr[-2000:]}")
    done = subprocess.run([venv_python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           "-r", str(requirements)], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"{requirements.name} does not install with {python}: {done.stderr[-2000:]}")
    stamp.write_text(digest)
    return venv_python
