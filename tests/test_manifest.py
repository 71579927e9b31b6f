"""`make check` confirms an unchanged tree from the local check cache; any changed input forces the full comparison.

The cache lives under .cache/ (ignored by git), so nothing committed records
the generator's own digest: a refactor of the generator rewrites no file in
generated/.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GENERATED, ROOT

from generator import manifest


def _check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "generator", "check", *args], cwd=ROOT, capture_output=True, text=True)


def _copy(tmp_path: Path) -> Path:
    out = tmp_path / "generated"
    shutil.copytree(GENERATED, out, ignore=shutil.ignore_patterns("__pycache__"))
    return out


def test_a_full_check_records_the_cache_and_the_next_check_uses_it(tmp_path: Path) -> None:
    out = _copy(tmp_path)
    manifest.cache_path(out).unlink(missing_ok=True)
    assert not manifest.up_to_date(out)  # a fresh clone has no cache: the first check is a full one
    first = _check("--out", str(out))
    assert first.returncode == 0, first.stderr
    assert "confirmed by the check cache" not in first.stdout
    second = _check("--out", str(out))
    assert second.returncode == 0 and "confirmed by the check cache" in second.stdout


def test_nothing_committed_records_the_generator(rendered: dict[str, str]) -> None:
    assert not any(path.endswith("manifest.json") for path in rendered)
    assert not any("sha256" in text.splitlines()[0] for text in rendered.values() if text)


def test_a_cache_that_lists_other_files_is_not_trusted(tmp_path: Path, rendered: dict[str, str]) -> None:
    out = _copy(tmp_path)
    manifest.record(out, {**rendered, "acp_types/ghost.py": ""})
    assert not manifest.up_to_date(out)


def test_an_edited_output_file_falls_back_to_the_full_comparison(tmp_path: Path, rendered: dict[str, str]) -> None:
    out = _copy(tmp_path)
    manifest.record(out, rendered)
    assert manifest.up_to_date(out)
    target = out / "acp_types" / "v1" / "methods.py"
    target.write_text(target.read_text() + "\n# edited\n")
    assert not manifest.up_to_date(out)
    done = _check("--out", str(out))
    assert done.returncode == 1 and "acp_types/v1/methods.py: differs" in done.stderr


def test_an_extra_file_is_not_confirmed(tmp_path: Path, rendered: dict[str, str]) -> None:
    out = _copy(tmp_path)
    manifest.record(out, rendered)
    assert manifest.up_to_date(out)
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


@pytest.mark.parametrize("part", ["generator/model.py", "templates/version/methods.py.jinja2", "runtime/_runtime.py"])
def test_changed_generator_source_or_template_changes_the_input_digest(
    part: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = manifest.input_digest(ROOT / "schema")
    copy = tmp_path / "repo"
    for name in ("generator", "templates", "runtime"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "requirements.txt", copy / "requirements.txt")
    monkeypatch.setattr(manifest, "ROOT", copy)
    assert manifest.input_digest(ROOT / "schema") == before
    (copy / part).write_text((copy / part).read_text() + "\n")
    assert manifest.input_digest(ROOT / "schema") != before
