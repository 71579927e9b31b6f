"""v1 and the v2 draft stay consistent where they should.

A definition written identically in both canonical schemas must generate
identical code, and the cross-version map must resolve in both schemas and
account for everything present in only one version.
"""

from __future__ import annotations

import ast
import json

import pytest
from _models_source import models_tree
from conftest import GENERATED, ROOT

from generator.crossversion import build_crossmap
from generator.errors import SchemaError


def _canonical(version: str) -> dict[str, str]:
    defs = {}
    for path in sorted((ROOT / "schema" / version).glob("*.json")):
        doc = json.loads(path.read_text("utf-8"))
        for name, schema in doc.get("$defs", {}).items():
            defs[name] = json.dumps(schema, sort_keys=True)
    return defs


def _code_blocks(version: str) -> dict[str, str]:
    """Top-level class or alias name -> its code (with the docstring that follows an alias).

    The code as ``ast.unparse`` prints it, with the annotations the module
    shares between classes put back inline: which annotations are shared
    depends on the whole module, not on the definition.
    """
    text = (GENERATED / "acp_types" / version / "models.py").read_text("utf-8")
    tree = models_tree(text)
    blocks: dict[str, str] = {}
    body = tree.body
    for i, node in enumerate(body):
        name = None
        if isinstance(node, ast.ClassDef):
            name = node.name
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
        if name is None:
            continue
        segment = ast.unparse(node)
        nxt = body[i + 1] if i + 1 < len(body) else None
        if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
            segment += "\n" + ast.unparse(nxt)
        blocks[name] = segment
    return blocks


def test_identical_definitions_generate_identical_code() -> None:
    left, right = _canonical("v1"), _canonical("v2")
    same = sorted(name for name in left.keys() & right.keys() if left[name] == right[name])
    assert len(same) >= 40, "the versions share many identical definitions"
    code_left, code_right = _code_blocks("v1"), _code_blocks("v2")
    differing = [name for name in same if code_left[name] != code_right[name]]
    assert not differing, f"identical schemas, different code: {differing}"


def _map_doc() -> dict:
    return json.loads((ROOT / "schema" / "crossversion.json").read_text("utf-8"))


def _problems(doc: dict, inputs) -> list[str]:
    left, right = inputs.protocols["v1"], inputs.protocols["v2"]
    with pytest.raises(SchemaError) as caught:
        build_crossmap(doc, left, right, "schema/crossversion.json")
    return [f"{p.pointer}: {p.message}" for p in caught.value.problems]


def test_an_entry_naming_nothing_is_refused(inputs) -> None:
    doc = _map_doc()
    doc["methods"].append({"v1": "session/nowhere", "v2": None})
    doc["fields"].append({"v1": "SessionInfo.noSuchField", "v2": "SessionInfo.cwd"})
    problems = _problems(doc, inputs)
    n = len(doc["methods"]) - 1
    assert f"/methods/{n}/v1: method 'session/nowhere' does not exist in schema/v1" in problems
    assert any("field 'SessionInfo.noSuchField' does not exist" in p for p in problems)


def test_a_one_version_name_left_out_of_the_map_is_refused(inputs) -> None:
    doc = _map_doc()
    doc["methods"] = [e for e in doc["methods"] if e["v1"] != "session/load"]
    doc["types"] = [e for e in doc["types"] if e["v1"] != "McpServerSse"]
    problems = _problems(doc, inputs)
    assert "/methods: v1 method 'session/load' has no counterpart in v2 and is not listed" in problems
    assert "/types: v1 type 'McpServerSse' has no counterpart in v2 and is not listed" in problems


def test_a_capability_is_named_in_the_singular(inputs) -> None:
    doc = _map_doc()
    doc["capabilities"].append({"v1": "agentCapabilities.noSuchThing", "v2": None})
    n = len(doc["capabilities"]) - 1
    assert f"/capabilities/{n}/v1: capability 'agentCapabilities.noSuchThing' does not exist in schema/v1" in _problems(
        doc, inputs
    )


def test_a_name_listed_twice_is_refused(inputs) -> None:
    doc = _map_doc()
    doc["methods"].append({"v1": "session/load", "v2": None})
    assert any("'session/load' is listed twice" in p for p in _problems(doc, inputs))


def test_notes_renames_are_recorded(inputs) -> None:
    cm = inputs.crossmap("v1", "v2")
    assert ("authenticate", "auth/login") in cm.methods
    assert ("session/load", None) in cm.methods
    assert ("InitializeResponse.agentInfo", "InitializeResponse.info") in cm.fields
    assert ("SessionNotification", "UpdateSessionNotification") in cm.types
    assert ("CancelNotification", "CancelSessionNotification") in cm.types
    assert ("SessionConfigSelectGroup.group", "SessionConfigSelectGroup.groupId") in cm.fields
    assert ("agentCapabilities.sessionCapabilities.archive", "capabilities.session.archive") in cm.capabilities


def test_every_capability_gate_is_in_the_map(inputs) -> None:
    """Each method's gating path is accounted for in the capability pairs of the map."""
    cm = inputs.crossmap("v1", "v2")
    listed = {("v1", a) for a, _ in cm.capabilities if a} | {("v2", b) for _, b in cm.capabilities if b}
    for version, proto in inputs.protocols.items():
        for method in proto.methods:
            if method.capability:
                assert (version, ".".join(method.capability)) in listed, (version, method.name)
