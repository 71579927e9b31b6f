"""The installable package: `pip install .` builds acp_types with pydantic as its only dependency."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "--disable-pip-version-check",
            "-w",
            str(out),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        cwd=build,
    )
    assert done.returncode == 0, done.stderr
    (found,) = out.glob("acp_types-*.whl")
    return found


def test_wheel_depends_on_pydantic_only(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith("METADATA"))
        lines = zf.read(meta).decode().splitlines()
    requires = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Requires-Dist:")]
    assert len(requires) == 1 and requires[0].startswith("pydantic"), requires
    assert "Name: acp-types" in lines


def test_wheel_ships_exactly_the_generated_package(wheel: Path, rendered: dict[str, str]) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = {n for n in zf.namelist() if ".dist-info/" not in n}
    assert names == {path for path in rendered if path.startswith("acp_types/")}
    assert "acp_types/py.typed" in names


def test_wheel_imports_on_its_own(wheel: Path, tmp_path: Path, inputs) -> None:
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(tmp_path)
    code = (
        "import importlib, json, acp_types;"
        "mods = [importlib.import_module(f'acp_types.{v}') for v in acp_types.VERSIONS];"
        "assert all(json.loads(m.SCHEMA_PATH.read_text())['$defs'] for m in mods);"
        "assert all(json.loads(m.STABLE_SCHEMA_PATH.read_text())['$defs'] for m in mods);"
        "print(*[len(m.METHODS) for m in mods], *[len(m.stable_methods()) for m in mods])"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r}); {code}"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(len(p.methods)) for p in inputs.protocols.values()] + [
        str(sum(m.stability == "stable" for m in p.methods)) for p in inputs.protocols.values()
    ]


def test_the_version_is_written_once(wheel: Path) -> None:
    """generator/__init__.py names the version; the package and the wheel's metadata say the same."""
    import acp_types
    import generator

    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith("METADATA"))
        lines = zf.read(meta).decode().splitlines()
    assert f"Version: {generator.__version__}" in lines
    assert acp_types.__version__ == generator.__version__
    assert wheel.name.startswith(f"acp_types-{generator.__version__}-")
