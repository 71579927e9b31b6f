"""v1 and the v2 draft stay consistent where they should.

A definition written identically in both canonical schemas must generate
identical code, and the cross-version map must resolve in both schemas and
account for everything present in only one version.
"""

from __future__ import annotations

import ast
import json

from conftest import GENERATED, ROOT

from generator.model import ObjectType


def _canonical(version: str) -> dict[str, str]:
    defs = {}
    for path in sorted((ROOT / "schema" / version).glob("*.json")):
        doc = json.loads(path.read_text("utf-8"))
        for name, schema in doc.get("$defs", {}).items():
            defs[name] = json.dumps(schema, sort_keys=True)
    return defs


def _code_blocks(version: str) -> dict[str, str]:
    """Top-level class or alias name -> its source (with the docstring that follows an alias)."""
    text = (GENERATED / "acp_types" / version / "models.py").read_text("utf-8")
    tree = ast.parse(text)
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
        segment = ast.get_source_segment(text, node) or ""
        nxt = body[i + 1] if i + 1 < len(body) else None
        if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
            segment += "\n" + (ast.get_source_segment(text, nxt) or "")
        blocks[name] = segment
    return blocks


def test_identical_definitions_generate_identical_code() -> None:
    left, right = _canonical("v1"), _canonical("v2")
    same = sorted(name for name in left.keys() & right.keys() if left[name] == right[name])
    assert len(same) >= 40, "the versions share many identical definitions"
    code_left, code_right = _code_blocks("v1"), _code_blocks("v2")
    differing = [name for name in same if code_left[name] != code_right[name]]
    assert not differing, f"identical schemas, different code: {differing}"


def test_crossmap_resolves_in_both_schemas(inputs) -> None:
    left, right = inputs.protocols["v1"], inputs.protocols["v2"]
    cm = inputs.crossmap
    for a, b in cm.methods:
        assert a is None or left.method(a), a
        assert b is None or right.method(b), b
    for a, b in cm.types:
        assert a is None or left.has_type(a), a
        assert b is None or right.has_type(b), b
    for a, b in cm.fields:
        for proto, ref in ((left, a), (right, b)):
            if ref:
                tname, wire = ref.split(".")
                t = proto.type(tname)
                assert isinstance(t, ObjectType) and t.field(wire), ref


def test_nothing_is_silently_unmapped(inputs) -> None:
    left, right = inputs.protocols["v1"], inputs.protocols["v2"]
    cm = inputs.crossmap
    for category, names in (("methods", lambda p: {m.name for m in p.methods}),
                            ("types", lambda p: {t.name for t in p.types})):
        only_left = names(left) - names(right)
        only_right = names(right) - names(left)
        listed_left = {a for a, _ in cm.pairs(category) if a}
        listed_right = {b for _, b in cm.pairs(category) if b}
        assert only_left <= listed_left, only_left - listed_left
        assert only_right <= listed_right, only_right - listed_right


def test_notes_renames_are_recorded(inputs) -> None:
    cm = inputs.crossmap
    assert ("authenticate", "auth/login") in cm.methods
    assert ("session/load", None) in cm.methods
    assert ("InitializeResponse.agentInfo", "InitializeResponse.info") in cm.fields
    assert ("SessionNotification", "UpdateSessionNotification") in cm.types
    assert ("CancelNotification", "CancelSessionNotification") in cm.types
    assert ("SessionConfigSelectGroup.group", "SessionConfigSelectGroup.groupId") in cm.fields
    assert ("agentCapabilities.sessionCapabilities.archive", "capabilities.session.archive") in cm.capabilities


def test_every_capability_gate_is_in_the_map(inputs) -> None:
    """Each method's gating path is accounted for in the capability pairs of the map."""
    cm = inputs.crossmap
    listed = {("v1", a) for a, _ in cm.capabilities if a} | {("v2", b) for _, b in cm.capabilities if b}
    for version, proto in inputs.protocols.items():
        for method in proto.methods:
            if method.capability:
                assert (version, ".".join(method.capability)) in listed, (version, method.name)
