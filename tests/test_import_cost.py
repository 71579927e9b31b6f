"""What keeps ``import acp_types.<version>`` cheap, pinned (timing is ``make bench``'s business).

The import's own cost is pydantic creating 200-odd classes per version.
These tests pin the choices that cut it: AcpModel leaves pydantic no
annotation of its own to walk again for every subclass, and a version
module loads only what the version needs. The shared annotations of the
models have their own tests (tests/test_shared_annotations.py). The last
test holds ``make bench``'s import bound (benchmarks/import_bound.py) to
what it claims to be: our classes as plain pydantic models.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GENERATED, ROOT, VERSIONS, api

from acp_types._runtime import AcpModel
from benchmarks.import_bound import write_bound


def test_acp_model_leaves_pydantic_no_annotation_to_walk_per_subclass() -> None:
    assert AcpModel.__dict__.get("__annotations__", {}) == {}
    assert AcpModel.__acp_tags__ == ()


@pytest.mark.parametrize("version", VERSIONS)
def test_tag_tables_leave_pydantic_nothing_to_do(version: str) -> None:
    """A tagged class's ``__acp_tags__`` is a plain class attribute: no annotation, nothing pydantic records."""
    models = api(version).models
    classes = [c for c in vars(models).values() if isinstance(c, type) and issubclass(c, AcpModel)]
    tagged = [c for c in classes if "__acp_tags__" in c.__dict__]
    assert len(classes) > 150 and len(tagged) > 30
    for cls in classes:
        assert "__acp_tags__" not in cls.__dict__.get("__annotations__", {}), cls
        assert "__acp_tags__" not in cls.__class_vars__, cls
        assert "__acp_tags__" not in cls.__private_attributes__, cls
        assert "__acp_tags__" not in cls.__pydantic_fields__, cls
        assert isinstance(cls.__acp_tags__, tuple), cls
    chunk = models.AgentMessageChunk
    assert chunk.__acp_tags__ == (("session_update", "sessionUpdate", "agent_message_chunk"),)
    content = models.TextContent(text="hi")
    kwargs = {"message_id": "m1"} if version == "v2" else {}
    assert json.loads(chunk(content=content, **kwargs).to_json())["sessionUpdate"] == "agent_message_chunk"


_LOADED = """
import json, sys
import acp_types.{version}
from acp_types._runtime import AcpModel
models = acp_types.{version}.models
classes = [c for c in vars(models).values() if isinstance(c, type) and issubclass(c, AcpModel)]
built = sorted(c.__name__ for c in classes if c.__pydantic_complete__)
print(json.dumps({{"modules": sorted(sys.modules), "classes": len(classes), "built": built}}))
"""

# Not needed to import a version: the other versions, the connection layer,
# pydoc, asyncio, and the plugin lookup that pydantic makes when it builds a validator.
_NOT_AT_IMPORT = ("acp_types.connection", "pydoc", "asyncio", "importlib.metadata", "pydantic.plugin._loader")


@pytest.mark.parametrize("version", VERSIONS)
def test_a_version_imports_only_what_it_needs(version: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _LOADED.format(version=version)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT / "generated",
        check=False,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    loaded = set(result["modules"])
    # the models are built on first use (defer_build): the import builds none
    assert result["classes"] > 150 and result["built"] == []
    assert f"acp_types.{version}.models" in loaded
    others = {m for m in loaded if m.startswith("acp_types.v") and not m.startswith(f"acp_types.{version}")}
    assert not others
    assert not loaded & set(_NOT_AT_IMPORT), sorted(loaded & set(_NOT_AT_IMPORT))


@pytest.mark.parametrize("version", VERSIONS)
def test_the_extras_field_is_an_annotation_only_at_runtime(version: str) -> None:
    """``__pydantic_extra__ = Field(init=False)`` is written for type checkers only: no FieldInfo per class."""
    models = api(version).models
    classes = [c for c in vars(models).values() if isinstance(c, type) and issubclass(c, AcpModel)]
    checked = [c for c in classes if "__pydantic_extra__" in c.__dict__.get("__annotations__", {})]
    assert len(checked) > 150
    for cls in checked:
        assert "__pydantic_extra__" not in cls.__dict__, cls
    # unknown keys are still kept, checked and written back
    content = models.TextContent.model_validate({"type": "text", "text": "x", "zz": 1})
    assert content.model_extra == {"zz": 1}
    assert json.loads(content.to_json()) == {"type": "text", "text": "x", "zz": 1}
    assert "__pydantic_extra__" not in vars(content)


_BOUND_CLASSES = """
import json, sys
sys.path.insert(0, {folder!r})
import {module} as bound
from pydantic import BaseModel
classes = {{}}
for name, cls in vars(bound).items():
    if isinstance(cls, type) and issubclass(cls, BaseModel) and cls.__module__ == bound.__name__ and name[0] != "_":
        classes[name] = {{
            "config": dict(cls.model_config),
            "fields": [[f, repr(i.annotation), i.alias, repr(i.default), len(i.metadata)] for f, i in cls.model_fields.items()],
            "extra": cls.__pydantic_extra_info__ is not None,
            "validators": len(cls.__pydantic_decorators__.model_validators),
            "tags": "__acp_tags__" in vars(cls),
        }}
print(json.dumps({{"classes": classes, "acp": sorted(m for m in sys.modules if m.startswith("acp_types"))}}))
"""


def _plain(text: str, module: str) -> str:
    return text.replace(f"{module}.", "")


@pytest.mark.parametrize("version", VERSIONS)
def test_the_import_bound_is_our_classes_as_plain_pydantic_models(version: str, tmp_path: Path) -> None:
    """``make bench``'s import bound (benchmarks/import_bound.py): our classes, fields and annotations, nothing of ACP."""
    path = write_bound(tmp_path, GENERATED / "acp_types" / version / "models.py")
    code = _BOUND_CLASSES.format(folder=str(tmp_path), module=path.stem)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["acp"] == []  # pydantic and the standard library only
    bound = result["classes"]
    models = api(version).models
    ours = {
        name: c
        for name, c in vars(models).items()
        if isinstance(c, type) and issubclass(c, AcpModel) and c.__module__ == models.__name__
    }
    assert set(bound) == set(ours) | {"UnknownVariant"} and len(ours) > 150
    validated = 0
    for name, cls in ours.items():
        plain = bound[name]
        assert plain["config"] == {"defer_build": True}, name
        assert not plain["extra"] and not plain["validators"] and not plain["tags"], name
        validated += len(cls.__pydantic_decorators__.model_validators)
        fields = [
            [f, _plain(repr(i.annotation), models.__name__), i.alias, repr(i.default), len(i.metadata)]
            for f, i in cls.model_fields.items()
        ]
        assert [[f[0], _plain(f[1], path.stem), *f[2:]] for f in plain["fields"]] == fields, name
    assert validated > 0  # ours has model validators; the bound none


def _runtime_imports() -> dict[str, set[str]]:
    """Each runtime module -> the runtime modules it imports (at any level of its source)."""
    import ast

    modules = {p.stem: p for p in (ROOT / "runtime").glob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = (node.module or "").removeprefix("acp_types").lstrip(".")
                if base in modules:
                    found.add(base)
                elif not base and (node.level or node.module == "acp_types"):
                    found.update(a.name for a in node.names if a.name in modules)
        graph[name] = found - {name}
    return graph


def test_the_runtime_reads_from_the_top_down() -> None:
    graph = _runtime_imports()
    assert {"_runtime", "_jsonrpc", "_wire", "_errors", "connection"} <= set(graph)
    # no circle: some order imports each module after everything it imports
    done: list[str] = []
    while len(done) < len(graph):
        ready = sorted(m for m in graph if m not in done and graph[m] <= set(done))
        assert ready, f"an import circle among {sorted(set(graph) - set(done))}"
        done += ready
    assert graph["_wire"] == set() and "_jsonrpc" not in graph["_runtime"]


def test_the_write_back_rule_is_spelled_once() -> None:
    # to_wire / to_json of the models and messages all go through _runtime.WRITE_BACK
    spelled = []
    for path in sorted((ROOT / "runtime").glob("*.py")) + sorted((ROOT / "templates").rglob("*.jinja2")):
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if "exclude_unset=True" in line or '"exclude_unset": True' in line:
                spelled.append(f"{path.relative_to(ROOT)}:{number}")
    assert spelled == ["runtime/_runtime.py:" + str(_write_back_line())], spelled


def _write_back_line() -> int:
    for number, line in enumerate((ROOT / "runtime" / "_runtime.py").read_text("utf-8").splitlines(), 1):
        if line.startswith("WRITE_BACK"):
            return number
    raise AssertionError("no WRITE_BACK in runtime/_runtime.py")
