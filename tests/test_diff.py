"""`python -m generator diff`: one case per rule, the v1 -> v2 report, git revisions, bad input.

Each rule case edits a small but complete version folder (base) into a revision
and checks that the diff reports the rule with the level and axis written here,
independently of `generator/diff/rules.py`. Rules whose level depends on the
direction have one case per direction (the `request-*` and `response-*` ids),
with the payload under test attached to a method's params or to its result.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from generator import cli
from generator.crossversion import CrossMap
from generator.diff import report
from generator.diff import rules as rules_module
from generator.diff.compare import compare, flows
from generator.diff.rules import BY_ID, RULES
from generator.loader import load_version
from generator.model import Protocol, build_protocol
from generator.sources import DirSource

B, P, S = "breaking", "possibly-breaking", "safe"
W, SRC = "wire", "source"
REQ, RESP = "request", "response"

# ---------------------------------------------------------------- a minimal version folder


def obj(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "description": "An object.", "properties": props}
    if required:
        out["required"] = list(required)
    return out


def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def method(
    side: str,
    params: str,
    result: str | None,
    capability: str | None = None,
    kind: str = "request",
    stability: str = "stable",
    errors: list[int] | None = None,
) -> dict[str, Any]:
    return {
        "side": side,
        "kind": kind,
        "params": params,
        "result": result,
        "capability": capability,
        "errors": errors or [],
        "stability": stability,
        "description": "A method.",
    }


def base_doc(direction: str = REQ) -> dict[str, Any]:
    """A valid version: initialize, one gated agent method `run`, and a `Payload` reachable from its
    params (direction request) or its result (direction response)."""
    defs: dict[str, Any] = {
        "InitializeRequest": obj(
            {"protocolVersion": {"type": "integer"}, "clientCapabilities": ref("ClientCapabilities")},
            ("protocolVersion",),
        ),
        "InitializeResponse": obj(
            {"protocolVersion": {"type": "integer"}, "agentCapabilities": ref("AgentCapabilities")},
            ("protocolVersion",),
        ),
        "ClientCapabilities": obj({"fs": {"type": "boolean"}}),
        "AgentCapabilities": obj(
            {"run": {"type": "boolean"}, "extra": {"type": "boolean"}, "feat": {"type": "boolean"}}
        ),
        "RunRequest": obj({"sessionId": {"type": "string"}}, ("sessionId",)),
        "RunResponse": obj({"done": {"type": "boolean"}}, ("done",)),
        "Payload": obj(
            {
                "name": {"type": "string"},
                "count": {"type": "integer"},
                "shape": ref("Shape"),
                "color": ref("Color"),
                "id": ref("PayloadId"),
            },
            ("name",),
        ),
        "PayloadId": {"type": "string", "description": "An alias."},
        "Shape": {"description": "A union.", "oneOf": [ref("Circle"), ref("Square")], "x-acp-union": {"tag": "kind"}},
        "Circle": obj({"kind": {"type": "string", "const": "circle"}, "r": {"type": "number"}}, ("kind",)),
        "Square": obj({"kind": {"type": "string", "const": "square"}, "side": {"type": "number"}}, ("kind",)),
        "Color": {"type": "string", "enum": ["red", "green"], "description": "An enum."},
        "Unused": {"type": "string", "description": "Reached by no method."},
    }
    holder = "RunRequest" if direction == REQ else "RunResponse"
    defs[holder]["properties"]["payload"] = ref("Payload")
    protocol = {
        "version": "v1",
        "protocolVersion": 1,
        "status": "stable",
        "description": "A test version.",
        "initialize": {"request": "InitializeRequest", "response": "InitializeResponse"},
        "errors": {"-32002": {"name": "resource_not_found", "description": "Not found."}},
        "methods": {
            "initialize": method("agent", "InitializeRequest", "InitializeResponse"),
            "run": method("agent", "RunRequest", "RunResponse", "agentCapabilities.run"),
        },
        "features": {"feat": {"side": "agent", "capability": "agentCapabilities.feat", "description": "A feature."}},
    }
    return {"protocol": protocol, "defs": defs}


def write_version(doc: dict[str, Any], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "protocol.json").write_text(json.dumps(doc["protocol"], indent=2), "utf-8")
    area = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "description": "All definitions.",
        "$defs": doc["defs"],
    }
    (folder / "types.json").write_text(json.dumps(area, indent=2), "utf-8")
    return folder


def load(folder: Path, label: str) -> Protocol:
    return build_protocol(load_version(DirSource(folder, label)))


def protocols(tmp_path: Path, base: dict[str, Any], rev: dict[str, Any]) -> tuple[Protocol, Protocol]:
    old = load(write_version(base, tmp_path / "old" / "v"), "old")
    new = load(write_version(rev, tmp_path / "new" / "v"), "new")
    return old, new


# ---------------------------------------------------------------- edits


def field(doc: dict[str, Any], type_name: str, wire: str) -> dict[str, Any]:
    return doc["defs"][type_name]["properties"][wire]


def set_required(doc: dict[str, Any], type_name: str, wire: str, required: bool) -> None:
    req = doc["defs"][type_name].setdefault("required", [])
    if required and wire not in req:
        req.append(wire)
    if not required and wire in req:
        req.remove(wire)


def run_method(doc: dict[str, Any]) -> dict[str, Any]:
    return doc["protocol"]["methods"]["run"]


def add_square_variant(doc: dict[str, Any], name: str = "Triangle", tag: str = "triangle") -> None:
    doc["defs"][name] = obj({"kind": {"type": "string", "const": tag}}, ("kind",))
    doc["defs"]["Shape"]["oneOf"].append(ref(name))


def drop_square(doc: dict[str, Any]) -> None:
    doc["defs"]["Shape"]["oneOf"] = [ref("Circle")]


def nullable_count(doc: dict[str, Any]) -> None:
    field(doc, "Payload", "count")["type"] = ["integer", "null"]


def retag(doc: dict[str, Any], prop: str) -> None:
    for name in ("Circle", "Square"):
        props = doc["defs"][name]["properties"]
        props[prop] = props.pop("kind")
        doc["defs"][name]["required"] = [prop]
    doc["defs"]["Shape"]["x-acp-union"] = {"tag": prop}


def default_branch(doc: dict[str, Any], branch: str) -> None:
    doc["defs"]["Shape"]["x-acp-union"]["default"] = branch
    doc["defs"][branch]["required"] = []


def box_for_square(doc: dict[str, Any]) -> None:
    doc["defs"]["Box"] = obj(
        {"kind": {"type": "string", "const": "square"}, "w": {"type": "number"}, "h": {"type": "number"}}, ("kind",)
    )
    doc["defs"]["Shape"]["oneOf"] = [ref("Circle"), ref("Box")]


Edit = Callable[[dict[str, Any]], None]


def nothing(doc: dict[str, Any]) -> None:
    pass


def both(*edits: Edit) -> Edit:
    def run(doc: dict[str, Any]) -> None:
        for e in edits:
            e(doc)

    return run


@dataclass(frozen=True)
class Case:
    rule: str
    level: str
    axis: str
    rev: Edit
    base: Edit = nothing  # both sides start from base_doc(); base edits the old side, rev the new
    direction: str = REQ  # where Payload is attached
    crossmap: CrossMap | None = None


def _map(methods=(), types=(), fields=(), capabilities=()) -> CrossMap:
    return CrossMap("v1", "v2", tuple(methods), tuple(types), tuple(fields), tuple(capabilities))


def _rename_method(doc: dict[str, Any]) -> None:
    doc["protocol"]["methods"]["run/go"] = doc["protocol"]["methods"].pop("run")


def _rename_type(doc: dict[str, Any]) -> None:
    doc["defs"]["Ident"] = doc["defs"].pop("PayloadId")
    field(doc, "Payload", "id")["$ref"] = "#/$defs/Ident"


def _rename_field(doc: dict[str, Any]) -> None:
    props = doc["defs"]["Payload"]["properties"]
    props["total"] = props.pop("count")


def _add_method(capability: str | None) -> Edit:
    def run(doc: dict[str, Any]) -> None:
        doc["protocol"]["methods"]["run/again"] = method("agent", "RunRequest", "RunResponse", capability)

    return run


def _method(**changes: Any) -> Edit:
    def run(doc: dict[str, Any]) -> None:
        run_method(doc).update(changes)

    return run


def _feature(**changes: Any) -> Edit:
    def run(doc: dict[str, Any]) -> None:
        doc["protocol"]["features"]["feat"].update(changes)

    return run


def _count(**changes: Any) -> Edit:
    def run(doc: dict[str, Any]) -> None:
        field(doc, "Payload", "count").update(changes)

    return run


def _require(wire: str, required: bool) -> Edit:
    return lambda doc: set_required(doc, "Payload", wire, required)


def _add_field(required: bool) -> Edit:
    def run(doc: dict[str, Any]) -> None:
        doc["defs"]["Payload"]["properties"]["note"] = {"type": "string"}
        set_required(doc, "Payload", "note", required)

    return run


def _remove_field(wire: str) -> Edit:
    def run(doc: dict[str, Any]) -> None:
        del doc["defs"]["Payload"]["properties"][wire]
        set_required(doc, "Payload", wire, False)

    return run


def _open(name: str) -> Edit:
    def run(doc: dict[str, Any]) -> None:
        doc["defs"][name]["x-acp-open"] = True

    return run


def _enum(values: list[str]) -> Edit:
    def run(doc: dict[str, Any]) -> None:
        doc["defs"]["Color"]["enum"] = values

    return run


def _doc(**changes: Any) -> Edit:
    def run(doc: dict[str, Any]) -> None:
        doc["protocol"].update(changes)

    return run


def _plain_default(doc: dict[str, Any]) -> None:
    default_branch(doc, "Square")
    doc["defs"]["Square"]["properties"]["kind"] = {"type": "string"}


def _unknown_default(doc: dict[str, Any]) -> None:
    _plain_default(doc)
    doc["defs"]["Shape"]["x-acp-union"]["unknown"] = "default"


def _presence(overlap: bool) -> Edit:
    def run(doc: dict[str, Any]) -> None:
        doc["defs"]["Shape"]["x-acp-union"] = {"presence": {"r": "Circle", "side": "Square"}}
        if overlap:
            doc["defs"]["Shape"]["x-acp-union"]["overlap"] = "first"
        doc["defs"]["Circle"]["required"] = ["kind", "r"]
        doc["defs"]["Square"]["required"] = ["kind", "side"]

    return run


def _shapes(same_kind: bool) -> Edit:
    def run(doc: dict[str, Any]) -> None:
        doc["defs"]["Shapes"] = {"type": "array", "items": ref("Shape"), "description": "An alias."}
        if same_kind:
            doc["defs"]["Shapes"]["x-acp-same-kind"] = True
        doc["defs"]["Payload"]["properties"]["shapes"] = ref("Shapes")

    return run


CASES: list[Case] = [
    # protocol
    Case("protocol-version-changed", B, W, _doc(protocolVersion=2)),
    Case("protocol-status-changed", S, W, _doc(status="draft")),
    # methods
    Case("method-added", S, W, _add_method("agentCapabilities.extra")),
    Case("ungated-method-added", P, W, _add_method(None)),
    Case("method-removed", B, W, nothing, base=_add_method(None)),
    Case("method-renamed", B, W, both(_rename_method, _doc(version="v2")), crossmap=_map(methods=[("run", "run/go")])),
    Case("method-kind-changed", B, W, _method(kind="notification", result=None)),
    Case("method-side-changed", B, W, _method(side="client", capability="clientCapabilities.fs")),
    Case("method-params-type-changed", B, W, _method(params="Payload")),
    Case("method-result-type-changed", B, W, _method(result="Payload")),
    Case("method-gate-added", B, W, nothing, base=_method(capability=None)),
    Case("method-gate-removed", P, W, _method(capability=None)),
    Case("method-gate-moved", B, W, _method(capability="agentCapabilities.extra")),
    Case("method-error-added", P, W, _method(errors=[-32002])),
    Case("method-error-removed", P, W, nothing, base=_method(errors=[-32002])),
    Case("stability-promoted", S, W, nothing, base=_method(stability="draft")),
    Case("stability-demoted", P, W, _method(stability="proposal")),
    Case("method-stabilized", S, W, nothing, base=_method(stability="unstable")),
    Case("method-destabilized", P, W, _method(stability="unstable")),
    # features
    Case("feature-added", S, W, nothing, base=lambda d: d["protocol"]["features"].clear()),
    Case("feature-removed", B, W, lambda d: d["protocol"]["features"].clear()),
    Case("feature-gate-moved", B, W, _feature(capability="agentCapabilities.extra")),
    Case("feature-side-changed", B, W, _feature(side="client", capability="clientCapabilities.fs")),
    Case("feature-stabilized", S, W, nothing, base=_feature(stability="unstable")),
    Case("feature-destabilized", P, W, _feature(stability="unstable")),
    # definitions
    Case("type-added", S, SRC, lambda d: d["defs"].update(Extra={"type": "string", "description": "New."})),
    Case("type-removed", B, SRC, lambda d: d["defs"].pop("Unused")),
    Case("type-renamed", B, SRC, both(_rename_type, _doc(version="v2")), crossmap=_map(types=[("PayloadId", "Ident")])),
    Case("type-kind-changed", B, W, lambda d: d["defs"]["PayloadId"].update(enum=["a"])),
    Case("type-stabilized", S, W, nothing, base=lambda d: d["defs"]["Unused"].update({"x-acp-stability": "unstable"})),
    Case("type-destabilized", P, W, lambda d: d["defs"]["Unused"].update({"x-acp-stability": "unstable"})),
    # fields
    Case("optional-field-added", S, W, _add_field(False)),
    Case("field-stabilized", S, W, nothing, base=_count(**{"x-acp-stability": "unstable"})),
    Case("field-destabilized", P, W, _count(**{"x-acp-stability": "unstable"})),
    Case("request-required-field-added", B, W, _add_field(True)),
    Case("response-required-field-added", B, W, _add_field(True), direction=RESP),
    Case("request-optional-field-removed", B, SRC, _remove_field("count")),
    Case("request-required-field-removed", B, W, _remove_field("name")),
    Case("response-required-field-removed", B, W, _remove_field("name"), direction=RESP),
    Case("response-optional-field-removed", B, SRC, _remove_field("count"), direction=RESP),
    Case(
        "field-renamed",
        B,
        W,
        both(_rename_field, _doc(version="v2")),
        crossmap=_map(fields=[("Payload.count", "Payload.total")]),
    ),
    Case("request-field-became-required", B, W, _require("count", True)),
    Case("response-field-became-required", B, W, _require("count", True), direction=RESP),
    Case("request-field-became-optional", B, W, _require("name", False)),
    Case("response-field-became-optional", B, W, _require("name", False), direction=RESP),
    Case("request-field-became-nullable", B, W, nullable_count),
    Case("response-field-became-nullable", B, W, nullable_count, direction=RESP),
    Case("request-field-became-non-nullable", B, W, nothing, base=nullable_count),
    Case("response-field-became-non-nullable", B, W, nothing, base=nullable_count, direction=RESP),
    Case("field-type-changed", B, W, _count(type="string")),
    Case(
        "type-annotation-changed",
        S,
        SRC,
        both(
            lambda d: d["defs"].update(Count={"type": "integer", "description": "An alias."}),
            lambda d: d["defs"]["Payload"]["properties"].update(count=ref("Count")),
        ),
    ),
    Case("constraints-changed", P, W, _count(minimum=0)),
    Case("field-default-changed", P, W, _count(default=1)),
    Case(
        "field-patch-changed",
        P,
        W,
        both(nullable_count, _count(**{"x-acp-patch": True})),
        base=nullable_count,
        direction=RESP,
    ),
    Case("tolerance-added", S, W, _count(**{"x-acp-on-error": "omit"})),
    Case("request-tolerance-removed", P, W, nothing, base=_count(**{"x-acp-on-error": "omit"})),
    Case("response-tolerance-removed", P, W, nothing, base=_count(**{"x-acp-on-error": "omit"}), direction=RESP),
    # unions
    Case("request-closed-union-variant-added", B, W, add_square_variant),
    Case("request-open-union-variant-added", P, W, both(_open("Shape"), add_square_variant), base=_open("Shape")),
    Case("response-closed-union-variant-added", B, W, add_square_variant, direction=RESP),
    Case(
        "response-open-union-variant-added",
        P,
        W,
        both(_open("Shape"), add_square_variant),
        base=_open("Shape"),
        direction=RESP,
    ),
    Case("request-union-variant-removed", B, W, drop_square),
    Case("response-union-variant-removed", B, W, drop_square, direction=RESP),
    Case("union-variant-tag-changed", B, W, lambda d: field(d, "Square", "kind").update(const="box")),
    Case("union-variant-type-changed", P, W, box_for_square),
    Case("union-discriminator-changed", B, W, lambda d: retag(d, "type")),
    Case(
        "union-default-changed", B, W, lambda d: default_branch(d, "Square"), base=lambda d: default_branch(d, "Circle")
    ),
    Case("union-became-open", P, SRC, _open("Shape")),
    Case("request-union-became-closed", B, W, nothing, base=_open("Shape")),
    Case("response-union-became-closed", B, W, nothing, base=_open("Shape"), direction=RESP),
    # issue 12: how receivers read what the reference reads
    Case("union-unknown-reading-changed", P, W, _unknown_default, base=_plain_default),
    Case(
        "union-unknown-required-changed",
        P,
        W,
        both(_open("Shape"), lambda d: d["defs"]["Shape"]["x-acp-union"].update(unknownRequired=["r"])),
        base=_open("Shape"),
    ),
    Case("union-overlap-changed", P, W, _presence(True), base=_presence(False)),
    Case(
        "object-required-one-of-changed",
        P,
        W,
        lambda d: d["defs"]["Payload"].update({"x-acp-required-one-of": ["count", "id"]}),
    ),
    Case("alias-same-kind-changed", P, W, _shapes(True), base=_shapes(False)),
    # enums
    Case("request-closed-enum-value-added", B, W, _enum(["red", "green", "blue"])),
    Case(
        "request-open-enum-value-added",
        P,
        W,
        both(_open("Color"), _enum(["red", "green", "blue"])),
        base=_open("Color"),
    ),
    Case("response-closed-enum-value-added", B, W, _enum(["red", "green", "blue"]), direction=RESP),
    Case(
        "response-open-enum-value-added",
        P,
        W,
        both(_open("Color"), _enum(["red", "green", "blue"])),
        base=_open("Color"),
        direction=RESP,
    ),
    Case("request-enum-value-removed", B, W, _enum(["red"])),
    Case("response-enum-value-removed", B, W, _enum(["red"]), direction=RESP),
    Case("enum-became-open", P, SRC, _open("Color")),
    Case("request-enum-became-closed", B, W, nothing, base=_open("Color")),
    Case("response-enum-became-closed", B, W, nothing, base=_open("Color"), direction=RESP),
    # aliases
    Case("alias-type-changed", B, W, lambda d: d["defs"]["PayloadId"].update(type="integer")),
]

# The request/response twin of each direction-dependent rule: the same edit in the
# other direction must not report it.
TWINS = {
    "request-required-field-added": "response-required-field-added",
    "request-field-became-required": "response-field-became-required",
    "request-field-became-optional": "response-field-became-optional",
    "request-field-became-nullable": "response-field-became-nullable",
    "request-field-became-non-nullable": "response-field-became-non-nullable",
    "request-tolerance-removed": "response-tolerance-removed",
    "request-closed-union-variant-added": "response-closed-union-variant-added",
    "request-open-union-variant-added": "response-open-union-variant-added",
    "request-union-variant-removed": "response-union-variant-removed",
    "request-union-became-closed": "response-union-became-closed",
    "request-closed-enum-value-added": "response-closed-enum-value-added",
    "request-open-enum-value-added": "response-open-enum-value-added",
    "request-enum-value-removed": "response-enum-value-removed",
    "request-enum-became-closed": "response-enum-became-closed",
    "request-optional-field-removed": "response-optional-field-removed",
    "request-required-field-removed": "response-required-field-removed",
}


def run_case(case: Case, tmp_path: Path, direction: str | None = None):
    base = base_doc(direction or case.direction)
    case.base(base)
    rev = base_doc(direction or case.direction)
    case.rev(rev)
    old, new = protocols(tmp_path, base, rev)
    return old, new, compare(old, new, case.crossmap)


@pytest.mark.parametrize("case", CASES, ids=[c.rule for c in CASES])
def test_rule(case: Case, tmp_path: Path) -> None:
    _, _, changes = run_case(case, tmp_path)
    hits = [c for c in changes if c.rule_id == case.rule]
    assert hits, f"{case.rule} not reported; got {[c.rule_id for c in changes]}"
    for c in hits:
        assert (c.level, c.axis) == (case.level, case.axis), c
        assert (c.level, c.axis) == (BY_ID[case.rule].level, BY_ID[case.rule].axis)
        rule_dir = BY_ID[case.rule].direction
        assert c.direction == (None if rule_dir == "any" else rule_dir)
        if rule_dir != "any":
            assert c.direction == case.direction
            assert c.sent_by == ("client" if case.direction == REQ else "agent")
    twin = TWINS.get(case.rule) or {v: k for k, v in TWINS.items()}.get(case.rule)
    if twin is not None:
        assert twin not in {c.rule_id for c in changes}, f"{twin} reported in the {case.direction} direction"


@pytest.mark.parametrize("request_rule", sorted(TWINS), ids=sorted(TWINS))
def test_direction_decides_the_rule(request_rule: str, tmp_path: Path) -> None:
    """The same edit, with the payload in the params and then in the result, gives the two twins."""
    case = next(c for c in CASES if c.rule == request_rule)
    _, _, as_request = run_case(case, tmp_path / "req", REQ)
    _, _, as_response = run_case(case, tmp_path / "resp", RESP)
    assert request_rule in {c.rule_id for c in as_request}
    assert TWINS[request_rule] in {c.rule_id for c in as_response}


def test_every_rule_has_a_case() -> None:
    """Every rule of the diff; the reference-only ones have theirs in tests/test_reference.py."""
    from generator.diff.rules import REFERENCE_ONLY

    assert sorted(c.rule for c in CASES) == sorted(r.id for r in RULES if r.id not in REFERENCE_ONLY)


def test_rules_are_well_formed() -> None:
    for r in RULES:
        assert r.level in (B, P, S) and r.axis in (W, SRC), r
        assert r.direction in ("any", REQ, RESP), r
        if r.direction != "any":
            assert r.id.startswith(r.direction + "-"), r
        assert r.rationale.endswith(".") and r.rationale.count(". ") == 0, f"one sentence: {r.id}"


def test_a_type_reached_both_ways_is_judged_both_ways(tmp_path: Path) -> None:
    def attach_to_result(doc: dict[str, Any]) -> None:
        doc["defs"]["RunResponse"]["properties"]["payload"] = ref("Payload")

    base = base_doc(REQ)
    attach_to_result(base)
    rev = copy.deepcopy(base)
    set_required(rev, "Payload", "name", False)
    old, new = protocols(tmp_path, base, rev)
    assert flows(old)["Payload"] == {(REQ, "client"), (RESP, "agent")}
    got = {(c.rule_id, c.direction) for c in compare(old, new)}
    assert got == {("request-field-became-optional", REQ), ("response-field-became-optional", RESP)}


def test_client_side_method_flips_the_sender(tmp_path: Path) -> None:
    base = base_doc(REQ)
    base["protocol"]["methods"]["run"] = method("client", "RunRequest", "RunResponse")
    rev = copy.deepcopy(base)
    set_required(rev, "Payload", "count", True)
    old, new = protocols(tmp_path, base, rev)
    (change,) = compare(old, new)
    assert (change.rule_id, change.sent_by) == ("request-field-became-required", "agent")


# ---------------------------------------------------------------- pairing


def test_without_the_map_a_rename_is_a_removal_and_an_addition_with_a_hint(tmp_path: Path) -> None:
    base = base_doc()
    base["defs"]["Sizes"] = obj({"small": {"type": "integer"}, "large": {"type": "integer"}})
    field(base, "Payload", "count").clear()
    field(base, "Payload", "count").update(ref("Sizes"))
    rev = copy.deepcopy(base)
    rev["defs"]["SizeTable"] = rev["defs"].pop("Sizes")
    field(rev, "Payload", "count")["$ref"] = "#/$defs/SizeTable"
    old, new = protocols(tmp_path, base, rev)
    changes = {c.rule_id: c for c in compare(old, new)}
    assert changes["type-removed"].hint == "possibly renamed to `SizeTable`"
    assert changes["type-added"].hint == "possibly renamed from `Sizes`"
    assert changes["field-type-changed"].location == "Payload.count"


def test_field_rename_hint_within_a_type(tmp_path: Path) -> None:
    base = base_doc()
    rev = copy.deepcopy(base)
    _rename_field(rev)
    old, new = protocols(tmp_path, base, rev)
    hints = {c.rule_id: c.hint for c in compare(old, new)}
    assert hints["request-optional-field-removed"] == "possibly renamed to `total`"
    assert hints["optional-field-added"] == "possibly renamed from `count`"


def test_map_is_ignored_between_revisions_of_one_version(tmp_path: Path) -> None:
    base = base_doc()
    rev = copy.deepcopy(base)
    _rename_method(rev)
    old, new = protocols(tmp_path, base, rev)
    rules = {c.rule_id for c in compare(old, new, _map(methods=[("run", "run/go")]))}
    assert "method-renamed" not in rules and {"method-removed", "method-added"} <= rules


def test_map_works_in_both_orders(tmp_path: Path) -> None:
    base = base_doc()
    rev = copy.deepcopy(base)
    _rename_method(rev)
    rev["protocol"]["version"] = "v2"
    old, new = protocols(tmp_path, base, rev)
    cm = _map(methods=[("run", "run/go")])
    forward = [c for c in compare(old, new, cm) if c.rule_id == "method-renamed"]
    backward = [c for c in compare(new, old, cm) if c.rule_id == "method-renamed"]
    assert (forward[0].old, forward[0].new) == ("run", "run/go")
    assert (backward[0].old, backward[0].new) == ("run/go", "run")


def test_a_new_tag_value_is_reported_once_by_the_union(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.rule == "union-variant-tag-changed")
    _, _, changes = run_case(case, tmp_path)
    assert [c.rule_id for c in changes] == ["union-variant-tag-changed"]


# ---------------------------------------------------------------- the real schemas


@pytest.fixture(scope="module")
def v1_to_v2(inputs) -> tuple[Protocol, Protocol, list]:
    old, new = inputs.protocols["v1"], inputs.protocols["v2"]
    return old, new, compare(old, new, inputs.crossmap("v1", "v2"))


def _find(changes, rule: str, location: str):
    return [c for c in changes if c.rule_id == rule and c.location == location]


def test_v1_to_v2_agrees_with_the_protocol_notes(v1_to_v2) -> None:
    _, _, changes = v1_to_v2
    expected = [
        ("method-removed", "session/load"),
        ("method-removed", "session/set_mode"),
        ("method-removed", "fs/read_text_file"),
        ("method-removed", "terminal/create"),
        ("method-renamed", "authenticate"),
        ("method-renamed", "logout"),
        ("field-renamed", "InitializeResponse.agentInfo"),
        ("field-renamed", "InitializeRequest.clientInfo"),
        ("field-renamed", "AuthMethodAgent.id"),
        ("field-renamed", "SessionConfigSelect.id"),
        ("field-renamed", "SessionConfigSelectGroup.group"),
        ("request-field-became-required", "AgentMessageChunk.messageId"),
        ("request-field-became-required", "UserMessageChunk.messageId"),
        ("response-required-field-removed", "PromptResponse.stopReason"),
        ("request-required-field-removed", "RequestPermissionRequest.toolCall"),
        ("type-renamed", "SessionNotification"),
        ("type-renamed", "CancelNotification"),
        ("type-removed", "Plan"),
        ("type-stabilized", "PlanUpdate"),
        ("request-union-variant-removed", "SessionUpdate"),
        ("field-renamed", "Diff.path"),
        ("field-renamed", "Diff.newText"),
        ("protocol-version-changed", "protocol"),
    ]
    missing = [e for e in expected if not _find(changes, *e)]
    assert not missing, missing
    renamed = {c.location: c.new for c in changes if c.rule_id in ("method-renamed", "type-renamed", "field-renamed")}
    assert renamed["authenticate"] == "auth/login"
    assert renamed["logout"] == "auth/logout"
    assert renamed["InitializeResponse.agentInfo"] == "info"
    assert renamed["InitializeRequest.clientInfo"] == "info"
    assert renamed["AuthMethodAgent.id"] == "methodId"
    assert renamed["SessionConfigSelect.id"] == "configId"
    assert renamed["SessionConfigSelectGroup.group"] == "groupId"
    assert renamed["SessionNotification"] == "UpdateSessionNotification"
    assert renamed["CancelNotification"] == "CancelSessionNotification"
    # v1's single-plan `plan` update is gone; v2's `plan_update` is the stable form of v1's unstable one
    assert "Plan" not in renamed
    assert not _find(changes, "union-variant-tag-changed", "SessionUpdate")
    removed_variants = {c.old for c in _find(changes, "request-union-variant-removed", "SessionUpdate")}
    assert {"ToolCall", "Plan"} <= removed_variants
    added_variants = {c.new for c in changes if c.location == "SessionUpdate" and c.rule_id.endswith("variant-added")}
    assert {
        "UserMessage",
        "AgentMessage",
        "AgentThought",
        "StateUpdate",
        "ToolCallContentChunk",
        "TerminalUpdate",
        "TerminalOutputChunk",
    } <= added_variants


def test_v1_to_v2_report_is_in_generated_docs(v1_to_v2, rendered: dict[str, str]) -> None:
    old, new, changes = v1_to_v2
    text = rendered["docs/v1-to-v2.md"]
    assert text.startswith("# Changes from v1 to v2\n")
    for c in changes:
        assert f"`{c.rule_id}`" in text
    assert "method `authenticate` renamed to `auth/login`" in text
    assert rendered["docs/diff-rules.md"] == report.rules_markdown()


def test_a_version_against_itself_is_empty(inputs) -> None:
    for proto in inputs.protocols.values():
        assert compare(proto, proto) == []
        assert compare(proto, proto, inputs.crossmap("v1", "v2")) == []


def test_rule_table_lists_every_rule() -> None:
    text = report.rules_markdown()
    for r in RULES:
        line = next(line for line in text.splitlines() if line.startswith(f"| `{r.id}` |"))
        assert f"| {r.level} | {r.axis} |" in line
    assert "oasdiff" in text and "buf" in text


# ---------------------------------------------------------------- the command


def run_cli(args: list[str], cwd: Path, capsys, monkeypatch) -> tuple[int, str, str]:
    monkeypatch.chdir(cwd)
    code = cli.main(["diff", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def pair(tmp_path: Path) -> Path:
    """tmp/old/v1 and tmp/new/v1: the rule case for a required field added to a request."""
    base = base_doc()
    rev = copy.deepcopy(base)
    _add_field(True)(rev)
    _add_method("agentCapabilities.extra")(rev)
    write_version(base, tmp_path / "old" / "v1")
    write_version(rev, tmp_path / "new" / "v1")
    return tmp_path


def test_cli_exit_codes_follow_fail_on(pair: Path, capsys, monkeypatch) -> None:
    assert run_cli(["old/v1", "new/v1"], pair, capsys, monkeypatch)[0] == 0
    assert run_cli(["old/v1", "new/v1", "--fail-on", "breaking"], pair, capsys, monkeypatch)[0] == 1
    assert run_cli(["old/v1", "new/v1", "--fail-on", "any"], pair, capsys, monkeypatch)[0] == 1
    assert run_cli(["old/v1", "old/v1", "--fail-on", "any"], pair, capsys, monkeypatch)[0] == 0
    # only a safe change: fails on any, not on possibly-breaking
    base = base_doc()
    rev = copy.deepcopy(base)
    _add_method("agentCapabilities.extra")(rev)
    write_version(rev, pair / "safe" / "v1")
    assert run_cli(["old/v1", "safe/v1", "--fail-on", "possibly-breaking"], pair, capsys, monkeypatch)[0] == 0
    assert run_cli(["old/v1", "safe/v1", "--fail-on", "any"], pair, capsys, monkeypatch)[0] == 1


def _unstable_method(name: str = "run/again", stability: str = "unstable") -> Edit:
    def run(doc: dict[str, Any]) -> None:
        doc["protocol"]["methods"][name] = method("agent", "RunRequest", "RunResponse", None, stability=stability)

    return run


def test_changes_to_the_unstable_surface_are_marked(tmp_path: Path) -> None:
    """A change is `unstable` only when what it touches is unstable on every side it exists."""
    cases: list[tuple[Edit, Edit, str, bool]] = [
        (_unstable_method(), nothing, "method-removed", True),
        (nothing, _unstable_method(), "ungated-method-added", True),
        (nothing, _add_method(None), "ungated-method-added", False),
        (_unstable_method(), _unstable_method(stability="stable"), "method-stabilized", False),
        (nothing, _count(**{"x-acp-stability": "unstable"}), "field-destabilized", False),
        (
            nothing,
            lambda d: d["defs"]["Payload"]["properties"].update(note={"type": "string", "x-acp-stability": "unstable"}),
            "optional-field-added",
            True,
        ),
        (
            nothing,
            both(add_square_variant, lambda d: d["defs"]["Triangle"].update({"x-acp-stability": "unstable"})),
            "request-closed-union-variant-added",
            True,
        ),
        (nothing, add_square_variant, "request-closed-union-variant-added", False),
    ]
    for i, (base_edit, rev_edit, rule_id, unstable) in enumerate(cases):
        base, rev = base_doc(), base_doc()
        base_edit(base)
        rev_edit(rev)
        old, new = protocols(tmp_path / str(i), base, rev)
        hits = [c for c in compare(old, new, None) if c.rule_id == rule_id]
        assert hits, (i, rule_id)
        assert all(c.unstable is unstable for c in hits), (i, rule_id, hits)
        assert all(c.to_json()["unstable"] is unstable for c in hits)


def test_cli_ignore_unstable(tmp_path: Path, capsys, monkeypatch) -> None:
    """--ignore-unstable drops changes to the unstable surface from --fail-on, and nothing else."""
    base = base_doc()
    _unstable_method()(base)
    write_version(base, tmp_path / "old" / "v1")
    write_version(base_doc(), tmp_path / "gone" / "v1")  # the unstable method removed: breaking, unstable only
    promoted = base_doc()
    _unstable_method(stability="stable")(promoted)
    write_version(promoted, tmp_path / "promoted" / "v1")
    both_kinds = base_doc()
    _add_field(True)(both_kinds)  # a breaking change to the stable surface as well
    write_version(both_kinds, tmp_path / "mixed" / "v1")
    assert run_cli(["old/v1", "gone/v1", "--fail-on", "breaking"], tmp_path, capsys, monkeypatch)[0] == 1
    code, out, _ = run_cli(
        ["old/v1", "gone/v1", "--fail-on", "breaking", "--ignore-unstable"], tmp_path, capsys, monkeypatch
    )
    assert code == 0 and "[unstable]" in out
    assert (
        run_cli(["old/v1", "promoted/v1", "--fail-on", "any", "--ignore-unstable"], tmp_path, capsys, monkeypatch)[0]
        == 1
    )
    assert (
        run_cli(["old/v1", "mixed/v1", "--fail-on", "breaking", "--ignore-unstable"], tmp_path, capsys, monkeypatch)[0]
        == 1
    )


def test_cli_formats(pair: Path, capsys, monkeypatch) -> None:
    code, text, _ = run_cli(["old/v1", "new/v1"], pair, capsys, monkeypatch)
    assert code == 0
    assert "BREAKING (1)" in text
    assert "[request-required-field-added; request, sent by the client; breaks new agent reading an old client]" in text
    assert "\033[" not in text  # not a terminal: no colour
    code, md, _ = run_cli(["old/v1", "new/v1", "--format", "markdown"], pair, capsys, monkeypatch)
    assert (
        "| `Payload.note` | required field `note` added to `Payload` | wire | request, sent by the client "
        "| new agent reading an old client | `request-required-field-added` |" in md
    )
    code, js, _ = run_cli(["old/v1", "new/v1", "--format", "json"], pair, capsys, monkeypatch)
    doc = json.loads(js)
    assert set(doc) == {"format", "old", "new", "crossVersionMap", "summary", "changes"}
    assert doc["summary"] == {"breaking": 1, "possibly-breaking": 0, "safe": 1}
    assert doc["old"]["source"] == "old/v1"
    first = doc["changes"][0]
    assert set(first) == {
        "rule",
        "level",
        "axis",
        "scope",
        "location",
        "message",
        "old",
        "new",
        "direction",
        "sentBy",
        "hint",
        "unstable",
        "breaks",
    }
    assert (first["rule"], first["scope"], first["location"]) == ("method-added", "method", "run/again")
    for text_out in (text, md, js):
        assert str(pair) not in text_out


def test_text_report_colours_only_when_asked(inputs) -> None:
    old, new = inputs.protocols["v1"], inputs.protocols["v2"]
    changes = compare(old, new, inputs.crossmap("v1", "v2"))
    assert "\033[31m" in report.text_report(old, new, changes, inputs.crossmap("v1", "v2"), colour=True)
    assert "\033[" not in report.text_report(old, new, changes, inputs.crossmap("v1", "v2"), colour=False)


def test_cli_finds_the_map_beside_new(inputs, capsys, monkeypatch) -> None:
    code, js, _ = run_cli(["schema/v1", "schema/v2", "--format", "json"], ROOT, capsys, monkeypatch)
    doc = json.loads(js)
    assert code == 0 and doc["crossVersionMap"] is True
    assert any(c["rule"] == "method-renamed" for c in doc["changes"])
    code, js, _ = run_cli(["schema/v1", "schema/v2", "--format", "json", "--no-map"], ROOT, capsys, monkeypatch)
    doc = json.loads(js)
    assert doc["crossVersionMap"] is False
    assert not any(c["rule"] == "method-renamed" for c in doc["changes"])


def test_cli_output_is_deterministic(tmp_path: Path) -> None:
    outputs = []
    for seed in ("1", "977"):
        done = subprocess.run(
            [sys.executable, "-m", "generator", "diff", "schema/v1", "schema/v2", "--format", "json"],
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def test_cli_against_a_git_revision(tmp_path: Path, capsys, monkeypatch) -> None:
    repo = tmp_path / "clone"
    base = base_doc()
    write_version(base, repo / "schema" / "v1")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    rev = copy.deepcopy(base)
    _require("count", True)(rev)
    write_version(rev, repo / "schema" / "v1")
    code, js, err = run_cli(
        ["HEAD:schema/v1", "schema/v1", "--format", "json", "--fail-on", "breaking"], repo, capsys, monkeypatch
    )
    assert code == 1, err
    doc = json.loads(js)
    assert doc["old"]["source"] == "HEAD:schema/v1"
    assert [c["rule"] for c in doc["changes"]] == ["request-field-became-required"]
    code, out, _ = run_cli(["HEAD:schema/v1", "HEAD:schema/v1"], repo, capsys, monkeypatch)
    assert code == 0 and "no changes" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["nowhere/v1", "schema/v1"], "nowhere/v1: no such schema folder"),
        (["schema/v1", "bad/v1"], "bad/v1/protocol.json"),
        (["nosuchrev:schema/v1", "schema/v1"], "unknown revision 'nosuchrev'"),
        (["HEAD:schema/v9", "schema/v1"], "no folder 'schema/v9' at revision 'HEAD'"),
    ],
)
def test_cli_bad_input_exits_2(args: list[str], message: str, tmp_path: Path, capsys, monkeypatch) -> None:
    repo = tmp_path / "clone"
    write_version(base_doc(), repo / "schema" / "v1")
    broken = base_doc()
    broken["protocol"]["methods"]["run"]["params"] = "NoSuchType"
    write_version(broken, repo / "bad" / "v1")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "base")
    code, out, err = run_cli(args, repo, capsys, monkeypatch)
    assert code == 2
    assert message in err, err
    assert out == ""


def test_cli_git_revision_outside_a_repository(tmp_path: Path, capsys, monkeypatch) -> None:
    write_version(base_doc(), tmp_path / "schema" / "v1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    code, _, err = run_cli(["HEAD:schema/v1", "schema/v1"], tmp_path, capsys, monkeypatch)
    assert code == 2 and "not inside a git repository" in err


def test_cli_usage_error_exits_2(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["diff", "schema/v1"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        cli.main(["diff", "schema/v1", "schema/v2", "--fail-on", "sometimes"])
    assert exc.value.code == 2


def test_cli_map_option(tmp_path: Path, capsys, monkeypatch) -> None:
    base = base_doc()
    rev = base_doc()
    _rename_method(rev)
    rev["protocol"]["version"] = "v2"
    write_version(base, tmp_path / "old" / "v1")
    write_version(rev, tmp_path / "new" / "v2")
    args = ["old/v1", "new/v2", "--format", "json"]
    code, js, _ = run_cli(args, tmp_path, capsys, monkeypatch)
    rules = {c["rule"] for c in json.loads(js)["changes"]}
    assert json.loads(js)["crossVersionMap"] is False and {"method-removed", "method-added"} <= rules
    (tmp_path / "map.json").write_text(
        json.dumps({"methods": [{"v1": "run", "v2": "run/go"}], "types": [], "fields": [], "capabilities": []}), "utf-8"
    )
    code, js, _ = run_cli([*args, "--map", "map.json"], tmp_path, capsys, monkeypatch)
    assert "method-renamed" in {c["rule"] for c in json.loads(js)["changes"]}
    # found on its own when it sits beside the new folder
    (tmp_path / "new" / "crossversion.json").write_text((tmp_path / "map.json").read_text("utf-8"), "utf-8")
    code, js, _ = run_cli(args, tmp_path, capsys, monkeypatch)
    assert "method-renamed" in {c["rule"] for c in json.loads(js)["changes"]}
    code, _, err = run_cli([*args, "--map", "missing.json"], tmp_path, capsys, monkeypatch)
    assert code == 2 and "missing.json: no such cross-version map" in err
    (tmp_path / "bad.json").write_text('{"methods": 3}', "utf-8")
    code, _, err = run_cli([*args, "--map", "bad.json"], tmp_path, capsys, monkeypatch)
    assert code == 2 and "bad.json" in err


def test_every_rule_is_emitted_through_its_constant() -> None:
    """Rule ids are data bound to constants: compare.py names each rule by its constant, never by a string."""
    import ast

    from generator.diff import rules as rule_module

    source = "\n".join((ROOT / "generator" / path).read_text("utf-8") for path in ("diff/compare.py", "reference.py"))
    tree = ast.parse(source)
    named = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "rules"
    }
    reached: set[str] = set()
    for name in named:
        value = getattr(rule_module, name)
        if isinstance(value, rule_module.Rule):
            reached.add(value.id)
        elif isinstance(value, dict):
            reached |= {r.id for r in value.values()}
    assert reached == {r.id for r in rule_module.RULES}, "rules never emitted, or emitted by another route"
    strings = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert not strings & {r.id for r in rule_module.RULES}, "a rule id is spelled out in compare.py"
    for r in rule_module.RULES:
        assert getattr(rule_module, r.id.upper().replace("-", "_")) is r, r.id


# ---------------------------------------------------------------- both pairings of independent upgrades


def test_each_wire_rule_is_judged_for_both_pairings() -> None:
    """The level is the worse pairing; a source-only rule is safe on the wire in both pairings."""
    from generator.diff.rules import PAIRINGS, SOURCE, WIRE, level_rank

    for r in RULES:
        outcomes = [r.outcome(p) for p in PAIRINGS]
        worst = min(outcomes, key=level_rank)
        if r.axis == WIRE:
            assert worst != S and r.level == worst or worst == S and r.level == S, r.id
        else:
            assert r.axis == SOURCE and worst == S, f"{r.id} breaks the wire in a pairing but says source"


def test_twins_are_judged_alike() -> None:
    """Neither peer upgrades first: a request rule and its response twin break the same pairings."""
    from generator.diff.rules import rule

    for request_rule, response_rule in TWINS.items():
        a, b = rule(request_rule), rule(response_rule)
        assert (a.level, a.axis, a.new_reader, a.old_reader) == (b.level, b.axis, b.new_reader, b.old_reader), (
            request_rule
        )


@pytest.mark.parametrize(
    "case_rule, direction, breaks",
    [
        # the example: a client on the new schema rejects every answer of an agent on the old one
        ("response-required-field-added", RESP, "new client reading an old agent"),
        ("request-required-field-added", REQ, "new agent reading an old client"),
        ("response-field-became-optional", RESP, "old client reading a new agent"),
        ("request-closed-union-variant-added", REQ, "old agent reading a new client"),
    ],
    ids=lambda x: x if isinstance(x, str) and "-" in x else None,
)
def test_a_change_names_the_pairing_it_breaks(case_rule: str, direction: str, breaks: str, tmp_path: Path) -> None:
    from generator.diff.report import breaks as breaks_text

    case = next(c for c in CASES if c.rule == case_rule)
    _, _, changes = run_case(case, tmp_path, direction)
    hit = next(c for c in changes if c.rule_id == case_rule)
    assert breaks_text(hit) == breaks
    assert hit.to_json()["breaks"] == list(rules_module.rule(case_rule).breaks)


# ---------------------------------------------------------------- the changelog since the previous release


def _release_repo(tmp_path: Path) -> Path:
    """A repository whose schema/v1 is committed (the release), then edited: a required result field."""
    repo = tmp_path / "clone"
    base = base_doc(RESP)
    write_version(base, repo / "schema" / "v1")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "release")
    rev = copy.deepcopy(base)
    _add_field(True)(rev)
    write_version(rev, repo / "schema" / "v1")
    return repo


def test_snapshot_release_and_the_changelog(tmp_path: Path, capsys, monkeypatch) -> None:
    from generator.diff import changelog

    repo = _release_repo(tmp_path)
    schema = repo / "schema"
    monkeypatch.chdir(repo)
    assert cli.main(["--schema", str(schema), "snapshot-release", "2026-08"]) == 0
    out = capsys.readouterr().out
    assert "releases/2026-08/v1/: 2 files of" in out
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    doc = json.loads((schema / "releases.json").read_text("utf-8"))
    entry = doc["baselines"]["v1"]
    assert (entry["release"], entry["revision"], entry["snapshot"]) == ("2026-08", head, "releases/2026-08/v1")
    # the snapshot is the committed state, not the edited working folder
    committed = subprocess.run(["git", "show", "HEAD:schema/v1/types.json"], cwd=repo, capture_output=True).stdout
    assert (schema / "releases" / "2026-08" / "v1" / "types.json").read_bytes() == committed
    protocols = {"v1": load(schema / "v1", "schema/v1")}
    docs = changelog.changelogs(protocols, schema, "schema")
    assert list(docs) == ["docs/changelog-v1.md"]
    text = docs["docs/changelog-v1.md"]
    assert text.startswith("# Changes to v1 since the 2026-08 release\n")
    assert f"git revision `{head[:12]}`" in text
    assert (
        "| `Payload.note` | required field `note` added to `Payload` | wire | response, sent by the agent "
        "| new client reading an old agent | `response-required-field-added` |"
    ) in text
    assert changelog.changelogs(protocols, schema, "schema") == docs, "deterministic"
    # a later release replaces the snapshot and removes the old one
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "next")
    assert cli.main(["--schema", str(schema), "snapshot-release", "2026-11"]) == 0
    assert sorted(p.name for p in (schema / "releases").iterdir()) == ["2026-11"]
    assert "No changes." in changelog.changelogs(protocols, schema, "schema")["docs/changelog-v1.md"]


def test_an_edited_snapshot_is_refused(tmp_path: Path, monkeypatch) -> None:
    from generator.diff import changelog
    from generator.errors import SchemaError

    repo = _release_repo(tmp_path)
    schema = repo / "schema"
    monkeypatch.chdir(repo)
    changelog.snapshot_release(schema, "2026-08")
    protocols = {"v1": load(schema / "v1", "schema/v1")}
    (schema / "releases" / "2026-08" / "v1" / "protocol.json").write_text(
        (schema / "v1" / "protocol.json").read_text("utf-8") + "\n", "utf-8"
    )
    with pytest.raises(SchemaError) as info:
        changelog.changelogs(protocols, schema, "schema")
    (problem,) = info.value.problems
    assert (problem.file, problem.pointer) == ("schema/releases.json", "/baselines/v1/sha256")
    assert "not the snapshot recorded here" in problem.message
    shutil.rmtree(schema / "releases")
    with pytest.raises(SchemaError) as info:
        changelog.changelogs(protocols, schema, "schema")
    assert "schema/releases/2026-08/v1/ is missing" in info.value.problems[0].message


@pytest.mark.parametrize(
    "args, message",
    [
        (["snapshot-release", "2026-8"], "a release is named by its year and month"),
        (["snapshot-release", "2026-08", "--revision", "nosuchrev"], "nosuchrev"),
    ],
)
def test_snapshot_release_bad_input_writes_nothing(
    args: list[str], message: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    repo = _release_repo(tmp_path)
    monkeypatch.chdir(repo)
    assert cli.main(["--schema", str(repo / "schema"), *args]) == 2
    assert message in capsys.readouterr().err
    assert not (repo / "schema" / "releases.json").exists() and not (repo / "schema" / "releases").exists()


@pytest.mark.parametrize(
    "link",
    ["releases/2026-05", "releases/2026-08/v1", "releases/2026-05/v1/types.json", "releases", "releases.json.tmp"],
)
def test_snapshot_release_refuses_a_symbolic_link_before_writing(
    link: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    """Issue 32 item 19: a link under schema/releases/ made it write the snapshot and releases.json, then fail
    removing the old one (exit 3 'nothing was written'). Now it is refused first: exit 2, nothing written,
    and what the link names is untouched."""
    repo = _release_repo(tmp_path)
    schema = repo / "schema"
    outside = tmp_path / "outside"
    (outside / "v1").mkdir(parents=True)
    (outside / "v1" / "types.json").write_text("{}", "utf-8")
    where = schema / link
    where.parent.mkdir(parents=True, exist_ok=True)
    if link.endswith("types.json"):
        where.symlink_to(outside / "v1" / "types.json")
    else:
        where.symlink_to(outside / "v1" if link.endswith("v1") or link.endswith(".tmp") else outside)
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if ".git" not in p.parts)
    monkeypatch.chdir(repo)
    assert cli.main(["--schema", str(schema), "snapshot-release", "2026-08"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and link.split("/")[-1] in err and "internal error" not in err, err
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if ".git" not in p.parts) == before
    assert not (schema / "releases.json").exists()
    assert (outside / "v1" / "types.json").read_text("utf-8") == "{}"


@pytest.mark.parametrize("where", ["releases/2026-08", "releases/2026-08/v1"])
def test_snapshot_release_refuses_a_file_where_a_snapshot_folder_goes(
    where: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    """A plain file where the snapshot's folder goes was exit 3 (removing or creating it failed after the
    check); it is refused before the first write: exit 2, one line, the file untouched, no releases.json."""
    repo = _release_repo(tmp_path)
    schema = repo / "schema"
    (schema / where).parent.mkdir(parents=True, exist_ok=True)
    (schema / where).write_text("mine", "utf-8")
    monkeypatch.chdir(repo)
    assert cli.main(["--schema", str(schema), "snapshot-release", "2026-08"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{where} is not a folder" in err, err
    assert (schema / where).read_text("utf-8") == "mine" and not (schema / "releases.json").exists()


def test_snapshot_release_that_cannot_write_says_so_in_one_line(tmp_path: Path, capsys, monkeypatch) -> None:
    """A write that fails midway (a full disk) was exit 3 saying "nothing was written"; it is exit 2 with one
    line that names the file and says the snapshot may be partly written."""
    import errno

    repo = _release_repo(tmp_path)
    schema = repo / "schema"
    monkeypatch.chdir(repo)

    def full(self: Path, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_bytes", full)
    assert cli.main(["--schema", str(schema), "snapshot-release", "2026-08"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No space left on device" in err and "partly written" in err, err
    assert "nothing was written" not in err and "internal error" not in err


def test_the_project_baseline_is_the_recorded_revision() -> None:
    """schema/releases/<name>/<v> is exactly what the recorded revision holds (the August 2026 release)."""
    from generator.diff import changelog
    from generator.loader import load_version
    from generator.sources import GitSource

    shallow = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    baselines = changelog.load_baselines(ROOT / "schema")
    assert {b.version for b in baselines} == {"v1", "v2"}
    for b in baselines:
        assert changelog.previous_release(ROOT / "schema", b).digest == b.sha256
        if shallow == "true":
            continue  # a shallow clone lacks the revision; the digest above still pins the snapshot
        assert load_version(GitSource(ROOT, b.revision, f"schema/{b.version}")).digest == b.sha256, b.version


def test_snapshot_of_a_revision_that_does_not_build_writes_nothing(tmp_path: Path, capsys, monkeypatch) -> None:
    repo = _release_repo(tmp_path)
    broken = base_doc()
    broken["protocol"]["version"] = "v2"
    broken["protocol"]["methods"]["run"]["params"] = "NoSuchType"
    write_version(broken, repo / "schema" / "v2")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "broken v2")
    monkeypatch.chdir(repo)
    assert cli.main(["--schema", str(repo / "schema"), "snapshot-release", "2026-08"]) == 2
    assert "v2/protocol.json" in capsys.readouterr().err
    assert not (repo / "schema" / "releases.json").exists() and not (repo / "schema" / "releases").exists()


@pytest.mark.parametrize("what", ["dropped", "changed"])
def test_the_notification_form_of_a_request_is_compared(what: str, tmp_path: Path) -> None:
    """proxy/successor is a request that may also be sent as a notification (issue 29 item 1): losing that form,
    or changing its params to a type that does not correspond, is reported on the method."""
    folder = tmp_path / "v2"
    shutil.copytree(ROOT / "schema" / "v2", folder)
    path = folder / "protocol.json"
    doc = json.loads(path.read_text("utf-8"))
    if what == "dropped":
        del doc["methods"]["proxy/successor"]["notificationParams"]
    else:
        doc["methods"]["proxy/successor"]["notificationParams"] = "InitializeProxyRequest"
    path.write_text(json.dumps(doc), "utf-8")
    old, new = load(ROOT / "schema" / "v2", "schema/v2"), load(folder, "edited/v2")
    hits = {(c.rule_id, c.location) for c in compare(old, new) if c.location == "proxy/successor"}
    rule = "method-kind-changed" if what == "dropped" else "method-params-type-changed"
    assert hits == {(rule, "proxy/successor")}
    assert not [c for c in compare(old, old) if c.location == "proxy/successor"]
