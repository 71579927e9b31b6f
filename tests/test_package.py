"""The installable package: `pip install .` builds acp_types with pydantic as its only dependency."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import ROOT


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel, and everything the build printed (verbose: the backend's warnings included)."""
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    # built from a clean copy of what the wheel is made of: an in-tree build (`pip install .`, as `make
    # bench` does) leaves build/lib behind, and setuptools would ship its modules removed since
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "generated", source / "generated", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--verbose",
            "--disable-pip-version-check",
            "-w",
            str(out),
            str(source),
        ],
        capture_output=True,
        text=True,
        cwd=build,
    )
    assert done.returncode == 0, done.stderr
    (found,) = out.glob("acp_types-*.whl")
    return found, done.stdout + done.stderr


@pytest.fixture(scope="module")
def wheel(built: tuple[Path, str]) -> Path:
    return built[0]


def test_the_build_warns_of_nothing_deprecated(built: tuple[Path, str]) -> None:
    # setuptools >= 77 warned four times that the `license = { text = ... }` table is deprecated and
    # that such builds stop working "By 2027-Feb-18": the license is an SPDX expression now
    log = built[1]
    assert not [line for line in log.splitlines() if "deprecat" in line.lower() or "2027" in line], log[-3000:]
    with zipfile.ZipFile(built[0]) as zf:
        meta = zf.read(next(n for n in zf.namelist() if n.endswith("METADATA"))).decode().splitlines()
        assert "License-Expression: Apache-2.0" in meta and "License-File: LICENSE" in meta
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in zf.namelist())


def test_the_build_backend_is_pinned_to_a_range() -> None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - 3.10
        import tomli as tomllib
    from packaging.requirements import Requirement

    requires = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["build-system"]["requires"]
    (backend,) = [Requirement(r) for r in requires if Requirement(r).name == "setuptools"]
    specs = {s.operator: s.version for s in backend.specifier}
    assert specs.get(">=", "0").split(".")[0] >= "77" and "<" in specs, backend  # PEP 639 support, and a cap


def test_wheel_depends_on_pydantic_only(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith("METADATA"))
        lines = zf.read(meta).decode().splitlines()
    requires = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Requires-Dist:")]
    base = [r for r in requires if "extra ==" not in r]
    assert len(base) == 1 and base[0].startswith("pydantic"), requires
    # everything else is an optional extra, each named in the metadata
    extras = {line.split(":", 1)[1].strip() for line in lines if line.startswith("Provides-Extra:")}
    assert extras == {"postgres", "remote"}, extras  # the session store on PostgreSQL, the remote transport
    assert all(any(f'extra == "{e}"' in r for e in extras) for r in requires if r not in base), requires
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
