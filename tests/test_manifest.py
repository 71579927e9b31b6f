"""`make check` confirms an unchanged tree from the manifest, and any changed input forces the full comparison."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import GENERATED, ROOT
from generator import manifest, writer


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "generator", "check", *args], cwd=ROOT, capture_output=True, text=True)


def test_unchanged_tree_is_confirmed_by_the_manifest() -> None:
    done = _check()
    assert done.returncode == 0, done.stderr
    assert "confirmed by generated/manifest.json" in done.stdout
    assert manifest.up_to_date(GENERATED)


def test_manifest_is_part_of_the_golden_tree(rendered: dict[str, str]) -> None:
    assert rendered[manifest.MANIFEST] == (GENERATED / manifest.MANIFEST).read_text("utf-8")
    listed = set(__import__("json").loads(rendered[manifest.MANIFEST])["files"])
    assert listed == set(rendered) - {manifest.MANIFEST}


def test_an_edited_output_file_falls_back_to_the_full_comparison(tmp_path: Path) -> None:
    out = tmp_path / "generated"
    shutil.copytree(GENERATED, out, ignore=shutil.ignore_patterns("__pycache__"))
    assert manifest.up_to_date(out)
    target = out / "acp_types" / "v1" / "methods.py"
    target.write_text(target.read_text() + "\n# edited\n")
    assert not manifest.up_to_date(out)
    done = _check("--out", str(out))
    assert done.returncode == 1 and "acp_types/v1/methods.py: differs" in done.stderr


def test_an_extra_file_is_not_confirmed(tmp_path: Path) -> None:
    out = tmp_path / "generated"
    shutil.copytree(GENERATED, out, ignore=shutil.ignore_patterns("__pycache__"))
    (out / "acp_types" / "stray.py").write_text("x = 1\n")
    assert not manifest.up_to_date(out)


def test_a_changed_schema_changes_the_input_digest(tmp_path: Path) -> None:
    schema = tmp_path / "schema"
    shutil.copytree(ROOT / "schema", schema)
    assert manifest.input_digest(schema) == manifest.input_digest()
    path = schema / "v1" / "session.json"
    path.write_text(path.read_text().replace("}", "} ", 1))
    assert manifest.input_digest(schema) != manifest.input_digest()


def test_a_changed_tool_version_changes_the_input_digest(monkeypatch: pytest.MonkeyPatch) -> None:
    before = manifest.input_digest()
    real = manifest.metadata.version
    monkeypatch.setattr(manifest.metadata, "version", lambda name: "9.9.9" if name == "black" else real(name))
    assert manifest.input_digest() != before


@pytest.mark.parametrize("part", ["generator/model.py", "templates/version/methods.py.jinja2"])
def test_changed_generator_source_or_template_changes_the_input_digest(part: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    before = manifest.input_digest(ROOT / "schema")
    copy = tmp_path / "repo"
    for name in ("generator", "templates"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "requirements.txt", copy / "requirements.txt")
    monkeypatch.setattr(manifest, "ROOT", copy)
    assert manifest.input_digest(ROOT / "schema") == before
    (copy / part).write_text((copy / part).read_text() + "\n")
    assert manifest.input_digest(ROOT / "schema") != before
