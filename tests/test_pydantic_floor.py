"""The oldest pydantic the package declares behaves as the pinned one.

pyproject.toml's dependency ``pydantic>=X,<3`` is a promise to everyone who
installs acp_types beside a pydantic of their own: the runtime relies on
pydantic-core behaviour, which moves between minor versions (2.12 and 2.13
cannot write a nested model back), and keeps one private name,
``__pydantic_base_init__`` (docs/ARCHITECTURE.md). So the floor is tested: an
environment with exactly that pydantic (tests/floor/requirements.txt) parses
and writes back every fixture, and its output must equal the output under the
pinned pydantic of requirements.txt, the newest the package is tested with; and
what the private name is for holds under both (tests/floor/private_names.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from _venvs import ensure_venv
from conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # tomllib is 3.11+; requirements.txt installs its backport on 3.10
    import tomli as tomllib

FLOOR = ROOT / "tests" / "floor"


def _declared_floor() -> str:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["dependencies"]
    assert len(deps) == 1, f"acp_types depends on pydantic only, not {deps}"
    found = re.fullmatch(r"pydantic>=([0-9.]+),<3", deps[0])
    assert found, f"the dependency should read pydantic>=X,<3, not {deps[0]!r}"
    return found.group(1)


def _pinned(requirements: str, name: str) -> str:
    found = re.search(rf"^{name}==([0-9.]+)$", requirements, re.MULTILINE)
    assert found, f"{name} is not pinned"
    return found.group(1)


def test_the_tested_floor_is_the_declared_one() -> None:
    floor = _declared_floor()
    assert _pinned((FLOOR / "requirements.txt").read_text("utf-8"), "pydantic") == floor
    pinned = _pinned((ROOT / "requirements.txt").read_text("utf-8"), "pydantic")
    assert tuple(map(int, floor.split("."))) <= tuple(map(int, pinned.split(".")))


def _observe(python: str, script: str = "observe.py") -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "generated")}
    done = subprocess.run(
        [python, str(FLOOR / script)], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _floor_python() -> str:
    python = ensure_venv(ROOT / ".venv-floor", sys.executable, FLOOR / "requirements.txt")
    version = subprocess.run(
        [python, "-c", "import pydantic; print(pydantic.VERSION)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.strip()
    assert version == _declared_floor()
    return python


def test_the_floor_reads_and_writes_every_fixture_as_the_pinned_pydantic_does() -> None:
    floor, pinned = _observe(_floor_python()), _observe(sys.executable)
    assert pinned.count("\n") > 400  # every fixture, as text and decoded
    assert floor == pinned


def test_the_private_name_does_its_job_on_the_oldest_and_the_newest_pydantic() -> None:
    """``__pydantic_base_init__``: construction runs the runtime's ``__init__``, reading the wire does not."""
    for python in (_floor_python(), sys.executable):
        assert _observe(python, "private_names.py") == "ok\n"
