"""Bad input anywhere the generator reads is exit 2, and the name checks cover what the package really emits."""

from __future__ import annotations

import ast
import builtins
import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _models_source import models_tree
from conftest import GENERATED, ROOT, VERSIONS

from generator import manifest, writer
from generator.errors import SchemaError
from generator.model import (
    RESERVED_METHOD_CONSTANTS,
    RESERVED_NAMES,
    SENTINEL_PREFIX,
    SENTINEL_TAGS,
    ObjectType,
    builtins_of,
)
from generator.pipeline import Inputs
from generator.sources import MAX_INPUT_BYTES

ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
DEFINITION_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")  # what the meta-schema lets a definition be called
DEEP = "[" * 100000 + "]" * 100000


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "generator", *args], cwd=cwd, capture_output=True, text=True, env=ENV)


def test_every_name_of_the_version_package_beside_the_models_is_reserved(inputs: Inputs) -> None:
    for version in VERSIONS:
        package = importlib.import_module(f"acp_types.{version}")
        models = importlib.import_module(f"acp_types.{version}.models")
        defined = {t.name for t in inputs.protocols[version].types}
        exported = set(package.__all__) | {n for n in vars(package) if not n.startswith("_")}
        imported = {n for n in vars(models) if n not in defined and not n.startswith("_")}
        for name in sorted((exported | imported) - defined):
            if DEFINITION_NAME.match(name):
                assert name in RESERVED_NAMES, f"a definition named {name} would replace acp_types.{version}.{name}"


def test_method_constants_cannot_take_a_module_name_of_methods_py() -> None:
    for version in VERSIONS:
        methods = importlib.import_module(f"acp_types.{version}.methods")
        wire = {spec.name for spec in methods.METHODS.values()}
        errors = {name.upper() for name in methods.ERRORS.values()}
        for name, value in vars(methods).items():
            if name.isupper() and not (isinstance(value, str) and value in wire) and name not in errors:
                assert name in RESERVED_METHOD_CONSTANTS, f"a method could become the constant {name}"


def test_the_sentinel_tags_are_the_runtimes() -> None:
    runtime = importlib.import_module("acp_types._runtime")
    assert runtime.UNKNOWN_TAG in SENTINEL_TAGS
    assert all(tag.startswith(SENTINEL_PREFIX) for tag in SENTINEL_TAGS)


def test_builtins_of_names_every_builtin_the_model_annotations_use(inputs: Inputs) -> None:
    """The shadowing check is only as good as builtins_of: compare it with the rendered annotations."""
    names = {n for n in dir(builtins) if not n.startswith("_")}
    checked = 0
    for version in VERSIONS:
        tree = models_tree((GENERATED / "acp_types" / version / "models.py").read_text("utf-8"))
        classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
        for t in inputs.protocols[version].types:
            if not isinstance(t, ObjectType) or t.name not in classes:
                continue
            # tag fields are declared under `if TYPE_CHECKING:` / `else:` (see generator/plan.py)
            body = [s for stmt in classes[t.name].body for s in (stmt.body if isinstance(stmt, ast.If) else [stmt])]
            annotations = {
                stmt.target.id: stmt.annotation
                for stmt in body
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
            }
            for f in t.fields:
                used = {n.id for n in ast.walk(annotations[f.py_name]) if isinstance(n, ast.Name) and n.id in names}
                used -= {"None"}
                assert used <= builtins_of(f.type), (t.name, f.wire_name, used, builtins_of(f.type))
                checked += 1
    assert checked > 300


def test_a_diff_side_nested_too_deeply_is_exit_2(tmp_path: Path) -> None:
    side = tmp_path / "side" / "v1"
    shutil.copytree(ROOT / "schema" / "v1", side)
    (side / "zz_deep.json").write_text(
        '{"$schema": "https://json-schema.org/draft/2020-12/schema", '
        f'"description": "d", "$defs": {{"Deep": {{"description": "d", "default": {DEEP}}}}}}}'
    )
    done = _run("diff", str(ROOT / "schema" / "v1"), str(side), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "zz_deep.json" in done.stderr and "nested too deeply" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_cross_version_map_nested_too_deeply_is_exit_2(tmp_path: Path) -> None:
    deep = tmp_path / "map.json"
    deep.write_text('{"methods": ' + DEEP + "}")
    done = _run("diff", str(ROOT / "schema" / "v1"), str(ROOT / "schema" / "v2"), "--map", str(deep), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "nested too deeply" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow  # a full check renders the whole tree
def test_a_check_cache_nested_too_deeply_only_costs_the_fast_path(tmp_path: Path) -> None:
    out = tmp_path / "out"
    writer.write_tree(out, {"x.txt": "x\n"})  # a marked tree, so check consults the cache
    cache = manifest.cache_path(out)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text('{"files": ' + DEEP + "}")
    try:
        done = _run("check", "--out", str(out), cwd=tmp_path)
    finally:
        cache.unlink()
    assert done.returncode == 1, done.stderr  # compared in full: stale, not a crash
    assert "x.txt: not generated by any schema" in done.stderr


def test_validate_reports_a_lone_surrogate_without_crashing_the_terminal(tmp_path: Path) -> None:
    schema = tmp_path / "schema"
    shutil.copytree(ROOT / "schema", schema)
    (schema / "v1" / "zz_case.json").write_text(
        '{"$schema": "https://json-schema.org/draft/2020-12/schema", "description": "d", '
        '"$defs": {"\\ud800Bad": {"description": "\\udc00", "type": "string"}}}'
    )
    done = subprocess.run(
        [sys.executable, "-m", "generator", "--schema", str(schema), "validate"],
        cwd=tmp_path,
        capture_output=True,
        env={**ENV, "LC_ALL": "C", "PYTHONIOENCODING": "ascii"},
    )
    stderr = done.stderr.decode("ascii", "replace")
    assert done.returncode == 2, stderr
    assert "lone surrogate" in stderr and "Traceback" not in stderr
    assert os.listdir(tmp_path) == ["schema"]


def _limited(megabytes: int):  # type: ignore[no-untyped-def]
    """A preexec_fn capping the child's address space, so reading a huge file whole fails instead of swapping."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (megabytes << 20, megabytes << 20))

    return limit


def _sparse(path: Path, size: int = 4 << 30) -> None:
    with open(path, "wb") as f:
        f.truncate(size)


def test_a_schema_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    schema = tmp_path / "schema"
    shutil.copytree(ROOT / "schema", schema)
    _sparse(schema / "v1" / "zz_huge.json")
    for command in (["validate"], ["diff", "schema/v1", "schema/v2"]):
        _refused_for_size(schema, *command, file="schema/v1/zz_huge.json", size=4 << 30)


def _refused_for_size(schema: Path, *args: str, file: str, size: int, cwd: Path | None = None) -> None:
    """The generator run with ``args`` in 1 GiB of memory stops with exit 2, naming ``file`` and its ``size``."""
    done = subprocess.run(
        [sys.executable, "-m", "generator", "--schema", str(schema), *args],
        cwd=cwd or schema.parent,
        capture_output=True,
        text=True,
        env=ENV,
        preexec_fn=_limited(1024),
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert f"{file}: {size} bytes, more than the 16 MiB" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_cross_version_map_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """The map the diff finds beside a side is read like a schema file: its size first, from a folder or from git."""
    schema = tmp_path / "schema"
    shutil.copytree(ROOT / "schema", schema)
    _sparse(schema / "crossversion.json")
    _refused_for_size(schema, "diff", "schema/v1", "schema/v2", file="schema/crossversion.json", size=4 << 30)
    # at a revision: git is asked for the size, and the blob is never shown
    (schema / "crossversion.json").write_bytes(b" " * (MAX_INPUT_BYTES + 1))
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "schema"], ["commit", "-q", "-m", "big map"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    _refused_for_size(
        schema,
        "diff",
        "HEAD:schema/v1",
        "HEAD:schema/v2",
        file="HEAD:schema/crossversion.json",
        size=MAX_INPUT_BYTES + 1,
    )


def test_a_reference_schema_over_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    reference.mkdir()
    _sparse(reference / "schema.json")
    (reference / "meta.json").write_text('{"agentMethods": {}, "clientMethods": {}, "version": 1}')
    _refused_for_size(
        ROOT / "schema",
        "compare-reference",
        "--version",
        "v1",
        str(reference),
        file=str(reference / "schema.json"),
        size=4 << 30,
        cwd=tmp_path,
    )


def test_a_file_just_over_the_limit_is_refused_and_one_at_it_is_read(tmp_path: Path) -> None:
    from generator.sources import MAX_INPUT_BYTES, read_bounded

    at_limit, over = tmp_path / "at.json", tmp_path / "over.json"
    at_limit.write_bytes(b" " * MAX_INPUT_BYTES)
    over.write_bytes(b" " * (MAX_INPUT_BYTES + 1))
    assert len(read_bounded(at_limit)) == MAX_INPUT_BYTES
    with pytest.raises(SchemaError, match="16777217 bytes"):
        read_bounded(over)


_RECURSIVE = r"""
import json
from pydantic import ValidationError
from acp_types._runtime import validate_payload
from acp_types.v1 import models as m

names = ("SelfRef", "TreeNode", "PingNode", "PongNode", "Branch", "Grove")
assert not any(getattr(m, n).__pydantic_complete__ for n in names), "the import builds no model"

# read from the wire, nested three deep: each level is the model, and it writes back as it came
wire = {
    "SelfRef": {"value": 1, "next": {"value": 2, "next": {"value": 3}}},
    "TreeNode": {"label": "r", "children": [{"label": "a", "children": [{"label": "a1"}]}, {"label": "b"}]},
    "PingNode": {"pong": {"ping": {"pong": {"ping": {}}}}},
    "Branch": {"kind": "branch", "children": [{"kind": "leaf", "value": "x"},
                                              {"kind": "branch", "children": [{"kind": "leaf", "value": "y"}]}]},
    "Grove": {"parent": [{"name": "p", "parent": None, "forest": [{"name": "deep"}]}]},
}
for name, data in wire.items():
    model = validate_payload(getattr(m, name), data)
    assert model.to_wire() == data, (name, model.to_wire())
    assert type(model).model_validate_json(model.to_json()) == model
assert type(validate_payload(m.SelfRef, wire["SelfRef"]).next.next) is m.SelfRef
assert type(validate_payload(m.TreeNode, wire["TreeNode"]).children[0].children[0]) is m.TreeNode
assert type(validate_payload(m.PingNode, wire["PingNode"]).pong.ping.pong) is m.PongNode
assert type(validate_payload(m.Branch, wire["Branch"]).children[1].children[0]) is m.Leaf
assert type(validate_payload(m.Grove, wire["Grove"]).parent[0].forest[0]) is m.Grove
assert validate_payload(m.Node, wire["Branch"]).to_wire() == wire["Branch"]  # the union alias itself

# the wire rules hold at every depth: a nested error names its place, a nested null is refused
for name, data, loc in [("SelfRef", {"value": 1, "next": {"value": 2, "next": {"value": "3"}}}, ("next", "next", "value")),
                        ("SelfRef", {"value": 1, "next": {"value": 2, "next": None}}, ("next", "next")),
                        ("Branch", {"kind": "branch", "children": [{"kind": "branch", "children": [{"kind": "x"}]}]},
                         ("children", 0, "branch", "children", 0))]:
    try:
        validate_payload(getattr(m, name), data)
    except ValidationError as exc:
        assert exc.errors()[0]["loc"] == loc, (name, exc.errors())
    else:
        raise AssertionError(f"{name}: {data} accepted")

# constructed in code: tags filled in, misspelled keywords refused, written as the wire spells it
built = m.Branch(children=[m.Leaf(value="x"), m.Branch(children=[])])
assert built.to_wire() == {"kind": "branch", "children": [{"kind": "leaf", "value": "x"}, {"kind": "branch", "children": []}]}
assert m.SelfRef(value=1, next=m.SelfRef(value=2)).to_wire() == {"value": 1, "next": {"value": 2}}
assert m.PingNode(pong=m.PongNode(ping=m.PingNode())).to_wire() == {"pong": {"ping": {}}}
try:
    m.TreeNode(label="r", childern=[])
except TypeError:
    pass
else:
    raise AssertionError("a misspelled keyword was accepted")
print("ok")
"""


def test_recursive_types_generate_import_and_round_trip(tmp_path: Path) -> None:
    """A type naming itself (directly, through an array, a union or aliases) or its neighbour is a class that works."""
    from test_hostile_schemas import build_schema

    build_schema("recursive-object-types", tmp_path)
    done = _run("--schema", "schema", "generate", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    models = (tmp_path / "out" / "acp_types" / "v1" / "models.py").read_text("utf-8")
    assert "model_rebuild" not in models  # pydantic builds each model on first use, after the module ran
    run = tmp_path / "run"
    run.mkdir()
    check = subprocess.run(
        [sys.executable, "-c", _RECURSIVE],
        cwd=run,
        capture_output=True,
        text=True,
        env={**ENV, "PYTHONPATH": str(tmp_path / "out")},
    )
    assert check.returncode == 0, check.stderr
    assert check.stdout == "ok\n"
