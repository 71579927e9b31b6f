"""Bad schemas: a clear message with file, JSON pointer and fix, exit 2, and generated/ untouched."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import GENERATED, ROOT

from generator import writer


def _edit_json(path: Path, change: Callable[[dict], None]) -> None:
    doc = json.loads(path.read_text("utf-8"))
    change(doc)
    path.write_text(json.dumps(doc, indent=2), "utf-8")


def _break_json(schema: Path) -> None:
    text = (schema / "v1" / "session.json").read_text("utf-8")
    lines = text.splitlines()
    lines[3] = lines[3] + ","  # a trailing comma after a member: not JSON
    (schema / "v1" / "session.json").write_text("\n".join(lines), "utf-8")


def _dangling_ref(schema: Path) -> None:
    def change(doc: dict) -> None:
        doc["$defs"]["ListSessionsRequest"]["properties"]["cwd"] = {"$ref": "#/$defs/NoSuchPath"}
    _edit_json(schema / "v1" / "session.json", change)


def _missing_type(schema: Path) -> None:
    def change(doc: dict) -> None:
        doc["methods"]["session/new"]["params"] = "CreateSessionRequest"
    _edit_json(schema / "v2" / "protocol.json", change)


def _unknown_capability(schema: Path) -> None:
    def change(doc: dict) -> None:
        doc["methods"]["session/archive"]["capability"] = "agentCapabilities.sessionCapabilities.archival"
    _edit_json(schema / "v1" / "protocol.json", change)


CASES = {
    "invalid-json": (_break_json, "schema/v1/session.json", "", "invalid JSON at line"),
    "dangling-ref": (_dangling_ref, "schema/v1/session.json", "#/$defs/ListSessionsRequest/properties/cwd/$ref", "'NoSuchPath', which is not defined"),
    "missing-type": (_missing_type, "schema/v2/protocol.json", "#/methods/session~1new/params", "'CreateSessionRequest' is not defined"),
    "unknown-capability": (_unknown_capability, "schema/v1/protocol.json", "#/methods/session~1archive/capability", "'agentCapabilities.sessionCapabilities.archival' does not exist"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_schema_is_reported_and_nothing_is_written(case: str, tmp_path: Path) -> None:
    breaker, file, ptr, words = CASES[case]
    schema = tmp_path / "schema"
    shutil.copytree(ROOT / "schema", schema)
    breaker(schema)
    out = tmp_path / "generated"
    shutil.copytree(GENERATED, out, ignore=shutil.ignore_patterns("__pycache__"))
    before = writer.existing_files(out)
    done = subprocess.run(
        [sys.executable, "-m", "generator", "--schema", "schema", "generate", "--out", str(out)],
        cwd=tmp_path, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{file}{ptr}:" in done.stderr, done.stderr
    assert words in done.stderr, done.stderr
    assert "fix:" in done.stderr
    assert "nothing was written" in done.stderr
    assert writer.existing_files(out) == before


def test_every_problem_is_listed_not_just_the_first(tmp_path: Path) -> None:
    schema = tmp_path / "schema"
    shutil.copytree(ROOT / "schema", schema)
    _missing_type(schema)
    _unknown_capability(schema)
    done = subprocess.run([sys.executable, "-m", "generator", "--schema", str(schema), "validate"],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 2
    assert "CreateSessionRequest" in done.stderr and "archival" in done.stderr
