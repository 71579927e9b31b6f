"""A corpus of bad and hostile schemas (tests/bad_schemas/<case>/).

Each case folder holds only what differs from schema/: files to lay over a copy
of it (same layout: v1/..., v2/..., crossversion.json) and a case.json:

    {"expect": "rejected", "file": "v1/x.json", "pointer": "/$defs/X", "contains": [...],
     "patches": [{"file": ..., "pointer": ..., "value": ...}]}
    {"expect": "accepted", "payload": {"TypeName": {...}}, "patches": [...]}

Patches set one JSON pointer in a base file (a last segment "-" appends to an
array); they keep cases small when only one value of a big file changes.

A rejected case must exit 2 with "<file>#<pointer>:", a "fix:" line and no
traceback, and leave the output folder byte-identical. An accepted case must
generate code that imports without running any schema text, keeps every
description, default and enum value exactly as data, and round-trips payloads.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from generator import pipeline, writer

CASES_DIR = Path(__file__).parent / "bad_schemas"
CASES = sorted(p.name for p in CASES_DIR.iterdir() if (p / "case.json").is_file())
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}


def _case(name: str) -> dict[str, Any]:
    return json.loads((CASES_DIR / name / "case.json").read_text("utf-8"))


def _set(doc: Any, pointer: str, value: Any) -> None:
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    for part in parts[:-1]:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    last = parts[-1]
    if isinstance(doc, list):
        if last == "-":
            doc.append(value)
        else:
            doc[int(last)] = value
    else:
        doc[last] = value


def build_schema(name: str, tmp: Path) -> Path:
    """schema/ copied to tmp, with the case's files laid over it and its patches applied."""
    schema = tmp / "schema"
    shutil.copytree(ROOT / "schema", schema)
    case_dir = CASES_DIR / name
    for src in sorted(case_dir.rglob("*")):
        rel = src.relative_to(case_dir)
        if src.is_file() and rel.as_posix() != "case.json":
            (schema / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, schema / rel)
    for patch in _case(name).get("patches", []):
        path = schema / patch["file"]
        doc = json.loads(path.read_text("utf-8"))
        _set(doc, patch["pointer"], patch["value"])
        path.write_text(json.dumps(doc, indent=2, ensure_ascii=False), "utf-8")
    return schema


def _overlay_defs(name: str, version: str = "v1") -> dict[str, dict[str, Any]]:
    defs: dict[str, dict[str, Any]] = {}
    for path in sorted((CASES_DIR / name / version).glob("*.json")):
        defs.update(json.loads(path.read_text("utf-8"))["$defs"])
    return defs


def test_the_corpus_is_big_enough() -> None:
    assert len(CASES) >= 30
    kinds = {_case(c)["expect"] for c in CASES}
    assert kinds == {"rejected", "accepted"}


REJECTED = [c for c in CASES if _case(c)["expect"] == "rejected"]
ACCEPTED = [c for c in CASES if _case(c)["expect"] == "accepted"]


@pytest.mark.parametrize("name", REJECTED)
def test_rejected_with_file_pointer_and_fix(name: str, tmp_path: Path) -> None:
    case = _case(name)
    build_schema(name, tmp_path)
    out = tmp_path / "out"
    (out / "acp_types").mkdir(parents=True)
    (out / "acp_types" / "__init__.py").write_text("# the old tree\n")
    (out / "keep.txt").write_bytes(b"old bytes \x00\xff")
    before = writer.existing_files(out)
    done = subprocess.run(
        [sys.executable, "-m", "generator", "--schema", "schema", "generate", "--out", str(out)],
        cwd=tmp_path,
        capture_output=True,
        env=ENV,
    )
    stderr = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    assert done.returncode == 2, stderr
    location = f"schema/{case['file']}#{case['pointer']}:" if case["pointer"] else f"schema/{case['file']}"
    assert location in stderr, stderr
    assert "fix:" in stderr, stderr
    for words in case.get("contains", []):
        assert words in stderr, stderr
    assert writer.existing_files(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "schema"]


_CHECK = r"""
import importlib, json, os, sys, typing, inspect
import pydantic
spec = json.loads(sys.stdin.read())
for mod in ("acp_types", "acp_types.v1", "acp_types.v1.models", "acp_types.v1.methods",
            "acp_types.v1.interfaces", "acp_types.v1.capabilities", "acp_types.v1.messages"):
    importlib.import_module(mod)
models = importlib.import_module("acp_types.v1.models")
import ast
attr_docs = {}
for node in ast.parse(open(models.__file__, encoding="utf-8").read()).body:
    if isinstance(node, ast.ClassDef):
        body = [s for st in node.body for s in (st.body if isinstance(st, ast.If) else [st])]
        for a, b in zip(body, body[1:]):
            if (isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name) and isinstance(b, ast.Expr)
                    and isinstance(b.value, ast.Constant) and isinstance(b.value.value, str)):
                attr_docs[(node.name, a.target.id)] = b.value.value
problems = []
def literal_values(tp):
    out = []
    for arg in typing.get_args(tp):
        out += literal_values(arg) if typing.get_args(arg) and typing.get_origin(arg) is not typing.Literal else (
            list(typing.get_args(arg)) if typing.get_origin(arg) is typing.Literal else [])
    if typing.get_origin(tp) is typing.Literal:
        out = list(typing.get_args(tp))
    return out
for name, schema in spec["defs"].items():
    obj = getattr(models, name)
    value = getattr(obj, "__value__", obj)
    if schema.get("type") == "object":
        doc = inspect.cleandoc(obj.__doc__ or "")
        if schema["description"].strip() not in (obj.__doc__ or "") and doc != inspect.cleandoc(schema["description"]):
            problems.append(f"{name}: docstring {obj.__doc__!r} != {schema['description']!r}")
        for wire, prop in schema["properties"].items():
            attr = next((n for n, f in obj.model_fields.items() if (f.alias or n) == wire), None)
            field = obj.model_fields.get(attr) if attr is not None else None
            if field is None:
                problems.append(f"{name}.{wire}: no field with that wire name")
                continue
            if "description" in prop:
                got = attr_docs.get((name, attr))
                want = prop["description"]
                if got is None or (got != want.strip() and inspect.cleandoc(got) != inspect.cleandoc(want)):
                    problems.append(f"{name}.{wire}: attribute docstring {got!r} != description {want!r}")
            if "default" in prop and field.default != prop["default"]:
                problems.append(f"{name}.{wire}: default {field.default!r} != {prop['default']!r}")
            if "const" in prop and literal_values(field.annotation) != [prop["const"]]:
                problems.append(f"{name}.{wire}: const {literal_values(field.annotation)!r} != {prop['const']!r}")
    if "enum" in schema:
        vals = literal_values(value)
        if vals != schema["enum"]:
            problems.append(f"{name}: enum {vals!r} != {schema['enum']!r}")
for name, payload in spec["payloads"].items():
    model = getattr(models, name)
    parsed = model.model_validate(payload)
    again = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if again != payload:
        problems.append(f"{name}: round trip {again!r} != {payload!r}")
    if model.model_validate_json(parsed.model_dump_json(by_alias=True, exclude_unset=True)) != parsed:
        problems.append(f"{name}: JSON round trip differs")
print(json.dumps(problems))
"""


@pytest.mark.parametrize("name", ACCEPTED)
def test_accepted_keeps_text_as_data(name: str, tmp_path: Path) -> None:
    case = _case(name)
    schema = build_schema(name, tmp_path)
    # The overlays change v1 only: its package is all the check needs (no v2, no docs, no diff).
    assert not (CASES_DIR / name / "v2").exists(), "accepted cases overlay v1 only"
    outputs = pipeline.build_outputs(pipeline.load_inputs(schema), versions=["v1"], docs=False)
    out = tmp_path / "out"
    writer.write_tree(out, outputs)
    defs = _overlay_defs(name)
    payloads = dict(case.get("payload", {}))
    run = tmp_path / "run"
    run.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _CHECK],
        cwd=run,
        capture_output=True,
        text=True,
        input=json.dumps({"defs": defs, "payloads": payloads}),
        env={**ENV, "PYTHONPATH": str(out)},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    assert not list(tmp_path.rglob("PWNED")), "schema text was executed"
    assert os.listdir(run) == [] or all(p == "__pycache__" for p in os.listdir(run))
    # the bundled schema keeps the text byte for byte
    bundle = json.loads(outputs["acp_types/v1/schema.json"])
    for def_name, d in defs.items():
        assert bundle["$defs"][def_name]["description"] == d["description"]


def test_every_problem_is_listed_not_just_the_first(tmp_path: Path) -> None:
    """Two cases of the corpus laid over one copy of schema/: both problems are reported at once."""
    schema = build_schema("v2-method-names-missing-type", tmp_path)
    for patch in _case("capability-path-missing").get("patches", []):
        path = schema / patch["file"]
        doc = json.loads(path.read_text("utf-8"))
        _set(doc, patch["pointer"], patch["value"])
        path.write_text(json.dumps(doc, indent=2), "utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "generator", "--schema", str(schema), "validate"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "the schema has 2 problems" in done.stderr, done.stderr
    assert "CreateSessionRequest" in done.stderr
