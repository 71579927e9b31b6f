"""The oldest pydantic the package declares behaves as the pinned one.

pyproject.toml's dependency ``pydantic>=X,<3`` is a promise to everyone who
installs acp_types beside a pydantic of their own: the runtime reads pydantic
internals (``acp_types._build``) and pydantic-core behaviour, which move
between minor versions (2.12 and 2.13 cannot write a nested model back). So
the floor is tested: an environment with exactly that pydantic
(tests/floor/requirements.txt) parses and writes back every fixture, and its
output must equal the output under the pinned pydantic of requirements.txt.
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


def _observe(python: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "generated")}
    done = subprocess.run([python, str(FLOOR / "observe.py")], capture_output=True, text=True,
                          timeout=300, env=env, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_floor_reads_and_writes_every_fixture_as_the_pinned_pydantic_does() -> None:
    python = ensure_venv(ROOT / ".venv-floor", sys.executable, FLOOR / "requirements.txt")
    version = subprocess.run([python, "-c", "import pydantic; print(pydantic.VERSION)"], capture_output=True,
                             text=True, timeout=60, check=True).stdout.strip()
    assert version == _declared_floor()
    floor, pinned = _observe(python), _observe(sys.executable)
    assert pinned.count("\n") > 400  # every fixture, as text and decoded
    assert floor == pinned
