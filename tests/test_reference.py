"""`python -m generator compare-reference`: reading a published reference schema, and the comparison.

The reference files under ``tests/reference/published/`` are small ones written
here in the published schema's shape (anyOf branches wrapping definitions in
allOf, catch-all `other` branches, x-method / x-side, x-deserialize-* markers);
``tests/reference/canonical/`` is the same protocol in our format, with every
reading of issue 12 applied. Each kind of difference is produced by undoing
one reading on a copy of the canonical side.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator import cli
from generator.loader import load_version
from generator.model import AliasType, EnumType, ObjectType, Protocol, UnionType, build_protocol
from generator.reference import load_differences, names_for, read_reference
from generator.sources import DirSource

HERE = ROOT / "tests" / "reference"
PUBLISHED = HERE / "published" / "v1"
CANONICAL = HERE / "canonical"


def canonical() -> Protocol:
    return build_protocol(load_version(DirSource(CANONICAL / "v1", "canonical/v1")))


def reference() -> Protocol:
    names = names_for(load_differences(CANONICAL / "differences.json"), "v1")
    return read_reference(PUBLISHED, "v1", canonical(), names)


def run(capsys: pytest.CaptureFixture[str], schema: Path, *args: str) -> tuple[int, str, str]:
    code = cli.main(["--schema", str(schema), "compare-reference", *args])
    out, err = capsys.readouterr()
    return code, out, err


def copy_canonical(tmp_path: Path, edit: Callable[[dict[str, Any]], None] | None = None) -> Path:
    """A copy of the canonical folder; ``edit`` changes its definitions."""
    target = tmp_path / "schema"
    shutil.copytree(CANONICAL, target)
    if edit is not None:
        path = target / "v1" / "types.json"
        doc = json.loads(path.read_text("utf-8"))
        edit(doc["$defs"])
        path.write_text(json.dumps(doc, indent=2), "utf-8")
    return target


# ---------------------------------------------------------------- reading the reference


def test_reader_builds_the_methods_from_meta_and_x_method() -> None:
    ref = reference()
    table = {m.name: (m.side, m.kind, m.params, m.result) for m in ref.methods}
    assert table == {
        "initialize": ("agent", "request", "InitializeRequest", "InitializeResponse"),
        "session/new": ("agent", "request", "NewSessionRequest", "NewSessionResponse"),
        "session/update": ("client", "notification", "SessionNotification", None),
        "elicitation/create": ("client", "request", "CreateElicitationRequest", "CreateElicitationResponse"),
    }
    assert not ref.has_type("AgentRequest"), "JSON-RPC envelopes are not definitions of the model"


def test_reader_reads_every_marker_of_issue_12() -> None:
    ref = reference()
    auth = ref.type("AuthMethod")
    assert isinstance(auth, UnionType) and auth.default == "AuthMethodAgent" and auth.unknown_default
    content = ref.type("ContentBlock")
    assert isinstance(content, UnionType) and content.open and content.unknown_required == ("uri",)
    resource = ref.type("EmbeddedResourceResource")
    assert isinstance(resource, UnionType) and resource.overlap_first
    assert dict(resource.presence or ()) == {"text": "TextResourceContents", "blob": "BlobResourceContents"}
    options = ref.type("SelectOptions")
    assert isinstance(options, AliasType) and options.same_kind
    elicit = ref.type("CreateElicitationRequest")
    assert isinstance(elicit, ObjectType) and elicit.required_one_of == ("sessionId", "requestId")
    new = ref.type("NewSessionRequest")
    assert isinstance(new, ObjectType)
    servers, meta = new.field("mcpServers"), new.field("_meta")
    assert servers is not None and servers.required and servers.on_error_default
    assert meta is not None and meta.on_error_omit
    role, priority = ref.type("Role"), ref.type("PlanEntryPriority")
    assert isinstance(role, EnumType) and isinstance(priority, EnumType)
    assert role.open and not priority.open


def test_reader_writes_the_tag_into_wrapped_branches() -> None:
    ref = reference()
    chunk = ref.type("AgentMessageChunk")
    assert isinstance(chunk, ObjectType)
    tag = chunk.field("sessionUpdate")
    assert tag is not None and tag.required and tag.type.const == "agent_message_chunk"
    assert chunk.field("content") is not None


# ---------------------------------------------------------------- the comparison


def test_matching_schemas_have_no_unexplained_difference(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, CANONICAL, str(PUBLISHED), "--version", "v1", "--fail-on", "any")
    assert code == 0, out
    assert "0 unexplained differences" in out
    assert "entry chunk-names" in out, "a deliberate difference is shown as such"


def _undo_unknown_default(defs: dict[str, Any]) -> None:
    del defs["AuthMethod"]["x-acp-union"]["unknown"]


def _undo_same_kind(defs: dict[str, Any]) -> None:
    del defs["SelectOptions"]["x-acp-same-kind"]


def _undo_required_one_of(defs: dict[str, Any]) -> None:
    del defs["CreateElicitationRequest"]["x-acp-required-one-of"]


def _undo_unknown_required(defs: dict[str, Any]) -> None:
    del defs["ContentBlock"]["x-acp-union"]["unknownRequired"]


def _undo_closed(defs: dict[str, Any]) -> None:
    defs["PlanEntryPriority"]["x-acp-open"] = True


def _undo_overlap(defs: dict[str, Any]) -> None:
    del defs["EmbeddedResourceResource"]["x-acp-union"]["overlap"]


def _undo_meta(defs: dict[str, Any]) -> None:
    del defs["NewSessionRequest"]["properties"]["_meta"]["x-acp-on-error"]


def _undo_default_on_error(defs: dict[str, Any]) -> None:
    del defs["NewSessionRequest"]["properties"]["mcpServers"]["x-acp-on-error"]


KINDS = [
    ("1 unknown tag reads as the default", _undo_unknown_default, "union-unknown-reading-changed", "AuthMethod"),
    ("2 arrays of one kind", _undo_same_kind, "alias-same-kind-changed", "SelectOptions"),
    ("3 one of several fields", _undo_required_one_of, "object-required-one-of-changed", "CreateElicitationRequest"),
    ("3 catch-all requires fields", _undo_unknown_required, "union-unknown-required-changed", "ContentBlock"),
    ("4 closed enum", _undo_closed, "request-enum-became-closed", "PlanEntryPriority"),
    ("5 overlapping branches", _undo_overlap, "union-overlap-changed", "EmbeddedResourceResource"),
    ("6 _meta default-on-error", _undo_meta, "tolerance-added", "NewSessionRequest._meta"),
    ("7 required array default-on-error", _undo_default_on_error, "tolerance-added", "NewSessionRequest.mcpServers"),
]


@pytest.mark.parametrize("undo, rule, location", [k[1:] for k in KINDS], ids=[k[0] for k in KINDS])
def test_each_kind_is_reported(
    undo: Callable[[dict[str, Any]], None], rule: str, location: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = copy_canonical(tmp_path, undo)
    code, out, _ = run(capsys, schema, str(PUBLISHED), "--version", "v1", "--format", "json", "--fail-on", "any")
    doc = json.loads(out)
    hits = [c for c in doc["changes"] if c["rule"] == rule and c["location"] == location]
    assert hits, [c["rule"] + " " + c["location"] for c in doc["changes"]]
    assert all(c["deliberate"] is None for c in hits)
    assert code == 1, "an unexplained difference fails --fail-on any"
    assert doc["counts"]["unexplained"][hits[0]["level"]] >= 1


def test_a_deliberate_difference_does_not_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = copy_canonical(tmp_path, _undo_overlap)
    code, _, _ = run(capsys, schema, str(PUBLISHED), "--version", "v1", "--fail-on", "possibly-breaking")
    assert code == 1
    path = schema / "differences.json"
    doc = json.loads(path.read_text("utf-8"))
    doc["differences"].append(
        {
            "id": "overlap",
            "versions": ["v1"],
            "kind": "reads-differently",
            "locations": ["EmbeddedResourceResource"],
            "rules": ["union-overlap-*"],
            "reason": "A test.",
            "source": "written here",
        }
    )
    path.write_text(json.dumps(doc), "utf-8")
    code, out, _ = run(capsys, schema, str(PUBLISHED), "--version", "v1", "--fail-on", "any", "--format", "json")
    assert code == 0
    hits = [c for c in json.loads(out)["changes"] if c["rule"] == "union-overlap-changed"]
    assert [c["deliberate"] for c in hits] == ["overlap"]


def _add_unstable_surface(defs: dict[str, Any]) -> None:
    """What a stable reference leaves out: an unstable definition and an unstable field that uses it."""
    defs["ShinyCapabilities"] = {
        "description": "An unstable capability.",
        "type": "object",
        "properties": {},
        "x-acp-stability": "unstable",
    }
    defs["InitializeResponse"]["properties"]["shiny"] = {
        "$ref": "#/$defs/ShinyCapabilities",
        "x-acp-stability": "unstable",
    }


def test_unstable_surface_is_listed_apart_and_does_not_fail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = copy_canonical(tmp_path, _add_unstable_surface)
    code, out, _ = run(capsys, schema, str(PUBLISHED), "--version", "v1", "--fail-on", "any", "--format", "json")
    doc = json.loads(out)
    assert code == 0, "the unstable surface is not a difference from a stable reference"
    assert doc["counts"]["unstable"] == 2
    assert sum(doc["counts"]["unexplained"].values()) == 0
    assert {c["location"] for c in doc["changes"] if c["unstable"]} == {"ShinyCapabilities", "InitializeResponse.shiny"}
    _, text, _ = run(capsys, schema, str(PUBLISHED), "--version", "v1")
    assert "UNSTABLE ONLY" in text and "2 unstable only" in text

    def stable_field(defs: dict[str, Any]) -> None:  # the same field, stable: a real difference
        _add_unstable_surface(defs)
        defs["ShinyCapabilities"].pop("x-acp-stability")
        defs["InitializeResponse"]["properties"]["shiny"].pop("x-acp-stability")

    schema = copy_canonical(tmp_path / "stable", stable_field)
    assert run(capsys, schema, str(PUBLISHED), "--version", "v1", "--fail-on", "any")[0] == 1


def test_version_must_name_a_version_folder(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, CANONICAL, str(PUBLISHED), "--version", "../v1")
    assert code == 2 and out == ""
    assert "--version '../v1'" in err and "Traceback" not in err


def test_fail_on_levels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = copy_canonical(tmp_path, _undo_meta)  # tolerance-added is safe
    assert run(capsys, schema, str(PUBLISHED), "--version", "v1")[0] == 0, "without --fail-on the exit code is 0"
    assert run(capsys, schema, str(PUBLISHED), "--version", "v1", "--fail-on", "breaking")[0] == 0
    assert run(capsys, schema, str(PUBLISHED), "--version", "v1", "--fail-on", "any")[0] == 1


def test_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = copy_canonical(tmp_path, _undo_unknown_default)
    _, text, _ = run(capsys, schema, str(PUBLISHED), "--version", "v1")
    assert "DIFFERENCES (1)" in text and "union-unknown-reading-changed" in text
    _, md, _ = run(capsys, schema, str(PUBLISHED), "--version", "v1", "--format", "markdown")
    assert md.startswith("# ") and "| possibly-breaking | `AuthMethod` |" in md
    _, js, _ = run(capsys, schema, str(PUBLISHED / "schema.json"), "--version", "v1", "--format", "json")
    doc = json.loads(js)
    assert doc["format"] == 1 and doc["version"] == "v1"
    assert doc["counts"]["unexplained"] == {"breaking": 0, "possibly-breaking": 1, "safe": 0}


def test_output_is_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    first = run(capsys, CANONICAL, str(PUBLISHED), "--version", "v1", "--format", "json")[1]
    second = run(capsys, CANONICAL, str(PUBLISHED), "--version", "v1", "--format", "json")[1]
    assert first == second


# ---------------------------------------------------------------- bad input: exit 2, a clear message


def _published_copy(tmp_path: Path) -> Path:
    target = tmp_path / "published"
    shutil.copytree(PUBLISHED, target)
    return target


def test_without_meta_json_the_annotations_name_the_methods(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The published packages ship no meta.json: x-method / x-side give the same method table."""
    pub = _published_copy(tmp_path)
    for name in ("meta.json", "meta.unstable.json"):
        (pub / name).unlink()
    names = names_for(load_differences(CANONICAL / "differences.json"), "v1")
    table = {
        m.name: (m.side, m.kind, m.params, m.result) for m in read_reference(pub, "v1", canonical(), names).methods
    }
    assert table == {m.name: (m.side, m.kind, m.params, m.result) for m in reference().methods}
    code, out, err = run(capsys, CANONICAL, str(pub), "--version", "v1", "--fail-on", "any")
    assert code == 0 and "0 unexplained differences" in out, out + err


def test_unstable_reference_with_one_meta_file_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pub = _published_copy(tmp_path)
    (pub / "meta.unstable.json").unlink()
    code, out, err = run(capsys, CANONICAL, str(pub), "--version", "v1", "--unstable")
    assert code == 2 and out == "" and "meta.unstable.json" in err and "missing" in err and "Traceback" not in err


def test_wrong_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, CANONICAL, str(PUBLISHED), "--version", "v2")
    assert code == 2
    assert "no canonical schema folder for v2" in err or "protocol version 1" in err


def test_reference_of_another_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pub = _published_copy(tmp_path)
    meta = json.loads((pub / "meta.json").read_text("utf-8"))
    meta["version"] = 2
    (pub / "meta.json").write_text(json.dumps(meta), "utf-8")
    code, _, err = run(capsys, CANONICAL, str(pub), "--version", "v1")
    assert code == 2 and "protocol version 2, not v1" in err


def test_invalid_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pub = _published_copy(tmp_path)
    (pub / "schema.json").write_text('{"$defs": {', "utf-8")
    code, _, err = run(capsys, CANONICAL, str(pub), "--version", "v1")
    assert code == 2 and "schema.json" in err and "line 1" in err


def test_untranslatable_shape_names_file_and_pointer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pub = _published_copy(tmp_path)
    doc = json.loads((pub / "schema.json").read_text("utf-8"))
    doc["$defs"]["NewSessionRequest"]["properties"]["cwd"] = {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    (pub / "schema.json").write_text(json.dumps(doc), "utf-8")
    code, _, err = run(capsys, CANONICAL, str(pub), "--version", "v1")
    assert code == 2
    assert "schema.json#/$defs/NewSessionRequest/properties/cwd" in err and "Traceback" not in err


def test_method_without_definitions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pub = _published_copy(tmp_path)
    meta = json.loads((pub / "meta.json").read_text("utf-8"))
    meta["agentMethods"]["session_gone"] = "session/gone"
    (pub / "meta.json").write_text(json.dumps(meta), "utf-8")
    code, _, err = run(capsys, CANONICAL, str(pub), "--version", "v1")
    assert code == 2 and "meta.json#/agentMethods/session_gone" in err and "session/gone" in err


def test_bad_differences_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "differences.json"
    bad.write_text(
        json.dumps(
            {
                "differences": [
                    {
                        "id": "x",
                        "versions": ["v1"],
                        "kind": "adds",
                        "locations": ["A"],
                        "reason": "r",
                        "source": "a hunch",
                    }
                ]
            }
        ),
        "utf-8",
    )
    code, _, err = run(capsys, CANONICAL, str(PUBLISHED), "--version", "v1", "--differences", str(bad))
    assert code == 2 and "differences.json#/differences/0/source" in err
    code, _, err = run(
        capsys, CANONICAL, str(PUBLISHED), "--version", "v1", "--differences", str(tmp_path / "absent.json")
    )
    assert code == 2 and "no such differences file" in err


# ---------------------------------------------------------------- the project's own file


def test_project_differences_file_is_well_formed() -> None:
    entries = load_differences(ROOT / "schema" / "differences.json")
    assert entries, "the project records its deliberate differences"
    ids = {e.id for e in entries}
    assert {"archive-proposal", "setup-available-commands"} <= ids
    for e in entries:
        assert e.reason.endswith(".") and e.source, e.id
        assert e.locations or e.names, e.id
    protos = [build_protocol(load_version(DirSource(ROOT / "schema" / v, v))) for v in ("v1", "v2")]
    for version in ("v1", "v2"):
        for ours in names_for(entries, version).values():
            assert any(p.has_type(ours) for p in protos), f"naming entry maps to {ours}, defined nowhere"


def test_run_writes_to_the_given_stream() -> None:
    from generator import reference

    args = cli._parser().parse_args(
        ["--schema", str(CANONICAL), "compare-reference", str(PUBLISHED), "--version", "v1"]
    )
    out = io.StringIO()
    assert reference.run(args, out) == 0
    assert "0 unexplained differences" in out.getvalue()


# ---------------------------------------------------------------- the new markers, misplaced


def _set(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(defs: dict[str, Any]) -> None:
        node = defs
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


MISPLACED = [
    (
        "default on an optional property",
        _set(("TextContent", "properties", "role", "x-acp-on-error"), "default"),
        "TextContent/properties/role/x-acp-on-error",
        "required, non-nullable arrays only",
    ),
    (
        "unknown default on an open union",
        _set(("ContentBlock", "x-acp-union", "unknown"), "default"),
        "ContentBlock/x-acp-union/unknown",
        "needs a default branch and a closed union",
    ),
    (
        "unknown default with a const tag",
        _set(("AuthMethodAgent", "properties", "type"), {"type": "string", "const": "agent"}),
        "AuthMethodAgent/properties/type/const",
        "cannot be a const",
    ),
    (
        "unknownRequired on a closed union",
        _set(("SessionUpdate", "x-acp-union", "unknownRequired"), ["x"]),
        "SessionUpdate/x-acp-union/unknownRequired",
        "open unions only",
    ),
    (
        "required-one-of naming a required property",
        _set(("CreateElicitationRequest", "x-acp-required-one-of"), ["message", "sessionId"]),
        "CreateElicitationRequest/x-acp-required-one-of",
        "'message' must be an optional property",
    ),
    (
        "same-kind on an array of objects",
        _set(
            ("PlanEntryList",),
            {
                "description": "Entries.",
                "type": "array",
                "items": {"$ref": "#/$defs/PlanEntry"},
                "x-acp-same-kind": True,
            },
        ),
        "PlanEntryList/x-acp-same-kind",
        "an array of a union",
    ),
]


@pytest.mark.parametrize("edit, where, words", [m[1:] for m in MISPLACED], ids=[m[0] for m in MISPLACED])
def test_misplaced_marker_is_reported_with_its_pointer(
    edit: Callable[[dict[str, Any]], None], where: str, words: str, tmp_path: Path
) -> None:
    from generator.errors import SchemaError

    schema = copy_canonical(tmp_path, edit)
    with pytest.raises(SchemaError) as info:
        build_protocol(load_version(DirSource(schema / "v1", "v1")))
    found = [p for p in info.value.problems if p.pointer == "/$defs/" + where]
    assert found, [p.format() for p in info.value.problems]
    assert words in found[0].message


# ---------------------------------------------------------------- the published unstable schema

# tests/reference/published/v1/schema.unstable.json is schema.json plus an unstable surface, as the
# protocol publishes it: a capability and two fields on InitializeResponse, a method (shiny/start, listed
# in meta.unstable.json only) and a new SessionUpdate branch. The stable pair beside it says what is new.


def _add_whole_unstable_surface(defs: dict[str, Any]) -> None:
    """Our side of the reference's unstable surface, marked unstable where the reference has it only there."""
    _add_unstable_surface(defs)
    defs["InitializeResponse"]["properties"]["shinyNote"] = {"type": ["string", "null"], "x-acp-stability": "unstable"}
    defs["ShinyStartRequest"] = {
        "description": "Params.",
        "type": "object",
        "properties": {
            "tags": {
                "type": ["array", "null"],
                "items": {"type": "string"},
                "x-acp-on-error": "omit",
                "x-acp-invalid-items": "skip",
            }
        },
        "x-acp-stability": "unstable",
    }
    defs["ShinyStartResponse"] = {
        "description": "Result.",
        "type": "object",
        "properties": {},
        "x-acp-stability": "unstable",
    }
    defs["ShinyUpdate"] = {
        "description": "Update.",
        "type": "object",
        "properties": {
            "sessionUpdate": {"type": "string", "const": "shiny_update"},
            "level": {"type": "integer", "minimum": 0, "maximum": 255},
        },
        "required": ["sessionUpdate", "level"],
        "x-acp-stability": "unstable",
    }
    defs["SessionUpdate"]["oneOf"].append({"$ref": "#/$defs/ShinyUpdate"})


def copy_with_unstable(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None] | None = None, method_stability: str = "unstable"
) -> Path:
    """The canonical copy with the whole unstable surface (types and the shiny/start method)."""

    def both(defs: dict[str, Any]) -> None:
        _add_whole_unstable_surface(defs)
        if edit is not None:
            edit(defs)

    schema = copy_canonical(tmp_path, both)
    path = schema / "v1" / "protocol.json"
    proto = json.loads(path.read_text("utf-8"))
    proto["methods"]["shiny/start"] = {
        "side": "agent",
        "kind": "request",
        "params": "ShinyStartRequest",
        "result": "ShinyStartResponse",
        "capability": None,
        "errors": [],
        "stability": method_stability,
        "description": "A method.",
    }
    path.write_text(json.dumps(proto, indent=2), "utf-8")
    return schema


def unstable_reference(schema: Path) -> Protocol:
    proto = build_protocol(load_version(DirSource(schema / "v1", "canonical/v1")))
    names = names_for(load_differences(schema / "differences.json"), "v1")
    return read_reference(PUBLISHED, "v1", proto, names, unstable=True)


def test_reader_marks_what_only_the_unstable_reference_has(tmp_path: Path) -> None:
    ref = unstable_reference(copy_with_unstable(tmp_path))
    assert ref.method("shiny/start") is not None and ref.method("shiny/start").stability == "unstable"
    assert {m.name for m in ref.methods if m.stability == "stable"} == {
        "initialize",
        "session/new",
        "session/update",
        "elicitation/create",
    }
    unstable_types = {t.name for t in ref.types if t.stability == "unstable"}
    assert unstable_types == {"ShinyCapabilities", "ShinyStartRequest", "ShinyStartResponse", "ShinyUpdate"}
    init = ref.type("InitializeResponse")
    assert isinstance(init, ObjectType) and init.stability == "stable"
    assert {f.wire_name for f in init.fields if f.unstable} == {"shiny", "shinyNote"}
    assert not init.field("protocolVersion").unstable  # type: ignore[union-attr]
    update = ref.type("SessionUpdate")
    assert isinstance(update, UnionType) and update.stability == "stable"
    assert "ShinyUpdate" in [v.name for v in update.variants]
    # a nullable array keeps the reference's skip-invalid-items (it used to be read only on non-null arrays)
    tags = ref.type("ShinyStartRequest")
    assert isinstance(tags, ObjectType) and tags.field("tags").skip_invalid_items  # type: ignore[union-attr]


def test_unstable_reference_matching_our_unstable_surface(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = copy_with_unstable(tmp_path)
    code, out, _ = run(
        capsys, schema, str(PUBLISHED), "--version", "v1", "--unstable", "--fail-on", "any", "--format", "json"
    )
    doc = json.loads(out)
    assert code == 0, [c["location"] + " " + c["rule"] for c in doc["changes"] if not c["deliberate"]]
    assert sum(doc["counts"]["unexplained"].values()) == 0
    assert doc["counts"]["unstable"] == 0
    assert not [c for c in doc["changes"] if "stabilized" in c["rule"]], "same stability on both sides"
    # the unstable schema file itself names the unstable reference
    code, out, _ = run(capsys, schema, str(PUBLISHED / "schema.unstable.json"), "--version", "v1", "--fail-on", "any")
    assert code == 0 and "0 unexplained differences" in out and "schema.unstable.json" in out.splitlines()[0]


def test_against_the_unstable_reference_the_unstable_surface_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without our unstable surface, what only the unstable reference has is unexplained, not "unstable only"."""
    code, out, _ = run(
        capsys, CANONICAL, str(PUBLISHED), "--version", "v1", "--unstable", "--format", "json", "--fail-on", "any"
    )
    doc = json.loads(out)
    assert code == 1
    assert doc["counts"]["unstable"] == 0
    open_ = {(c["location"], c["rule"]) for c in doc["changes"] if c["deliberate"] is None}
    assert {
        ("shiny/start", "ungated-method-added"),
        ("SessionUpdate", "request-closed-union-variant-added"),
        ("InitializeResponse.shiny", "optional-field-added"),
        ("InitializeResponse.shinyNote", "optional-field-added"),
    } <= open_

    # an unstable difference inside the unstable surface fails too
    def no_skip(defs: dict[str, Any]) -> None:
        del defs["ShinyStartRequest"]["properties"]["tags"]["x-acp-invalid-items"]

    schema = copy_with_unstable(tmp_path / "skip", no_skip)
    code, out, _ = run(
        capsys, schema, str(PUBLISHED), "--version", "v1", "--unstable", "--format", "json", "--fail-on", "any"
    )
    assert code == 1
    hits = [c for c in json.loads(out)["changes"] if c["location"] == "ShinyStartRequest.tags"]
    assert [c["rule"] for c in hits] == ["tolerance-added"] and not hits[0]["unstable"]


@pytest.mark.parametrize(
    "edit, method_stability, rule, location",
    [
        (
            lambda defs: defs["InitializeResponse"]["properties"]["shinyNote"].pop("x-acp-stability"),
            "unstable",
            "field-destabilized",
            "InitializeResponse.shinyNote",
        ),
        (None, "stable", "method-destabilized", "shiny/start"),
    ],
    ids=["field we call stable", "method we call stable"],
)
def test_stability_differences_are_reported(
    edit: Callable[[dict[str, Any]], None] | None,
    method_stability: str,
    rule: str,
    location: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if method_stability == "stable":

        def stable_types(defs: dict[str, Any]) -> None:  # a stable method needs stable types
            defs["ShinyStartRequest"].pop("x-acp-stability")
            defs["ShinyStartResponse"].pop("x-acp-stability")

        edit = stable_types
    schema = copy_with_unstable(tmp_path, edit, method_stability)
    code, out, _ = run(
        capsys,
        schema,
        str(PUBLISHED),
        "--version",
        "v1",
        "--unstable",
        "--format",
        "json",
        "--fail-on",
        "possibly-breaking",
    )
    hits = [c for c in json.loads(out)["changes"] if c["rule"] == rule and c["location"] == location]
    assert hits and hits[0]["deliberate"] is None, [c["rule"] + " " + c["location"] for c in json.loads(out)["changes"]]
    assert code == 1


def test_unstable_reference_needs_its_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pub = tmp_path / "published"
    pub.mkdir()
    shutil.copy(PUBLISHED / "schema.json", pub)
    shutil.copy(PUBLISHED / "meta.json", pub)
    code, out, err = run(capsys, CANONICAL, str(pub), "--version", "v1", "--unstable")
    assert code == 2 and out == "" and "schema.unstable.json" in err and "Traceback" not in err
    shutil.copy(PUBLISHED / "schema.unstable.json", pub)
    code, _, err = run(capsys, CANONICAL, str(pub), "--version", "v1", "--unstable")
    assert code == 2 and "meta.unstable.json" in err and "missing" in err
    shutil.copy(PUBLISHED / "meta.unstable.json", pub)
    (pub / "schema.json").unlink()
    code, _, err = run(capsys, CANONICAL, str(pub), "--version", "v1", "--unstable")
    assert code == 2 and "schema.json" in err and "stable" in err and "Traceback" not in err
    shutil.copy(PUBLISHED / "schema.json", pub)
    (pub / "schema.json").write_text('{"$defs": {', "utf-8")
    code, _, err = run(capsys, CANONICAL, str(pub), "--version", "v1", "--unstable")
    assert code == 2 and "schema.json" in err and "line 1" in err


# ---------------------------------------------------------------- constructs of the published packages (issue 22)

# Each test edits a copy of the small reference in tests/reference/published/v1 into one shape the published
# November 2026 schemas use, and checks how it is read: into our model, or reported by name as unsupported.


def _edited(tmp_path: Path, edit: Callable[[dict[str, Any]], None], *, meta: bool = False) -> Path:
    """A copy of the small reference (without its meta files unless ``meta``) whose $defs ``edit`` changes."""
    pub = _published_copy(tmp_path)
    if not meta:
        for name in ("meta.json", "meta.unstable.json"):
            (pub / name).unlink()
    doc = json.loads((pub / "schema.json").read_text("utf-8"))
    edit(doc["$defs"])
    (pub / "schema.json").write_text(json.dumps(doc), "utf-8")
    return pub


def _load(pub: Path) -> Any:
    from generator.reference import load_reference

    return load_reference(pub, "v1", canonical(), names_for(load_differences(CANONICAL / "differences.json"), "v1"))


def _unsupported(pub: Path) -> dict[str, str]:
    return {c.location: c.message for c in _load(pub).unsupported}


def _compare(capsys: pytest.CaptureFixture[str], pub: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run(capsys, CANONICAL, str(pub), "--version", "v1", "--format", "json", *extra)
    assert code in (0, 1), err
    return code, json.loads(out)


def _proxy_chain(defs: dict[str, Any]) -> None:
    """The proxy chains' methods as the published schemas write them (x-side proxy, proxy/successor both a
    request and a notification), with their JSON-RPC envelopes."""
    defs["InitializeProxyRequest"] = {
        "description": "Params.",
        "x-method": "proxy/initialize",
        "x-side": "proxy",
        "allOf": [{"$ref": "#/$defs/InitializeRequest"}],
    }
    defs["InitializeProxyResponse"] = {
        "description": "Result.",
        "x-method": "proxy/initialize",
        "x-side": "proxy",
        "allOf": [{"$ref": "#/$defs/InitializeResponse"}],
    }
    envelope = {
        "type": "object",
        "properties": {"method": {"type": "string"}, "params": {}},
        "required": ["method"],
        "x-method": "proxy/successor",
        "x-side": "proxy",
    }
    defs["ProxySuccessorRequest"] = {"description": "Wrapped request.", **envelope}
    defs["ProxySuccessorNotification"] = {"description": "Wrapped notification.", **envelope}
    defs["ProxySuccessorResponse"] = {
        "description": "Wrapped result.",
        "x-method": "proxy/successor",
        "x-side": "proxy",
    }
    # the proxy's JSON-RPC envelopes are skipped like the others (an inline union inside `params`)
    defs["ProxyRequest"] = {
        "type": "object",
        "properties": {
            "params": {
                "anyOf": [{"anyOf": [{"allOf": [{"$ref": "#/$defs/InitializeProxyRequest"}]}]}, {"type": "null"}]
            }
        },
    }
    defs["ProxyResponse"] = {"anyOf": [{"title": "Result", "type": "object", "properties": {"result": {}}}]}


def test_the_proxy_side_is_read(tmp_path: Path) -> None:
    """Issue 29 item 1: x-side proxy is our `proxy` side; a method with a Request, a Notification and a
    Response definition is a request that may also be sent as a notification (notificationParams)."""
    ref = _load(_edited(tmp_path, _proxy_chain))
    init, successor = ref.protocol.method("proxy/initialize"), ref.protocol.method("proxy/successor")
    assert init is not None and successor is not None and ref.unsupported == ()
    assert (init.side, init.kind, init.params, init.result, init.notification_params) == (
        "proxy",
        "request",
        "InitializeProxyRequest",
        "InitializeProxyResponse",
        None,
    )
    assert (successor.side, successor.kind, successor.params, successor.result, successor.notification_params) == (
        "proxy",
        "request",
        "ProxySuccessorRequest",
        "ProxySuccessorResponse",
        "ProxySuccessorNotification",
    )
    assert not ref.protocol.has_type("ProxyRequest")


def test_a_method_of_another_side_is_reported_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def conductor(defs: dict[str, Any]) -> None:
        _proxy_chain(defs)
        for name in list(defs):
            if name.startswith("ProxySuccessor"):
                del defs[name]
        for name in ("InitializeProxyRequest", "InitializeProxyResponse"):
            defs[name]["x-side"] = "conductor"

    pub = _edited(tmp_path, conductor)
    ref = _load(pub)
    assert ref.protocol.method("proxy/initialize") is None
    assert "`conductor` side" in _unsupported(pub)["proxy/initialize"]
    code, doc = _compare(capsys, pub, "--fail-on", "any")
    hit = [c for c in doc["changes"] if c["rule"] == "reference-unsupported"]
    assert code == 1 and [(c["location"], c["scope"], c["deliberate"]) for c in hit] == [
        ("proxy/initialize", "method", None)
    ]
    # explained in differences.json, it no longer fails
    diffs = tmp_path / "differences.json"
    entries = json.loads((CANONICAL / "differences.json").read_text("utf-8"))
    entries["differences"].append(
        {
            "id": "conductor",
            "versions": ["v1"],
            "kind": "reads-differently",
            "locations": ["proxy/*"],
            "rules": ["reference-unsupported"],
            "reason": "A test.",
            "source": "written here",
        }
    )
    diffs.write_text(json.dumps(entries), "utf-8")
    assert _compare(capsys, pub, "--fail-on", "any", "--differences", str(diffs))[0] == 0


def test_x_method_without_x_side_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pub = _edited(tmp_path, lambda defs: defs["NewSessionRequest"].pop("x-side"))
    code, out, err = run(capsys, CANONICAL, str(pub), "--version", "v1")
    assert code == 2 and out == "" and "schema.json#/$defs/NewSessionRequest" in err and "x-side" in err


def _first_object(defs: dict[str, Any]) -> dict[str, Any]:
    return next(d for _, d in sorted(defs.items()) if isinstance(d, dict) and "properties" in d)


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (lambda defs: _first_object(defs).__setitem__("properties", []), "/properties: not valid JSON Schema"),
        (lambda defs: _first_object(defs).__setitem__("required", 5), "/required: not valid JSON Schema"),
        (
            lambda defs: defs.__setitem__(
                "Loop", {"type": "object", "properties": {"a": {"type": "string"}}, "anyOf": [{"$ref": "#/$defs/Loop"}]}
            ),
            "#/$defs/Loop/anyOf/0: Loop: its anyOf comes back to Loop",
        ),
        (
            lambda defs: defs.update(
                {
                    "LoopA": {"type": "object", "properties": {"a": {}}, "anyOf": [{"$ref": "#/$defs/LoopB"}]},
                    "LoopB": {
                        "type": "object",
                        "properties": {"b": {"$ref": "#/$defs/LoopA"}},
                        "required": ["b"],
                        "anyOf": [{"$ref": "#/$defs/LoopA"}],
                    },
                }
            ),
            "(LoopA -> LoopB -> LoopA)",
        ),
        # a boolean schema as a definition another one's anyOf scope refers to (found by fuzzing: exit 3)
        (lambda defs: defs.__setitem__("SessionScope", True), "#/$defs/SessionScope: a definition must be an object"),
        # boolean subschemas where the reader expects an object (found by fuzzing: exit 3)
        (
            lambda defs: defs["McpServer"]["anyOf"][0]["allOf"].__setitem__(0, False),
            "#/$defs/McpServer/anyOf/0/allOf/0: a boolean schema (false) is not read here",
        ),
        (
            lambda defs: defs["SessionUpdate"]["anyOf"][1]["properties"].__setitem__("sessionUpdate", True),
            "/anyOf/1/properties/sessionUpdate: a boolean schema (true) is not read here",
        ),
    ],
    ids=[
        "properties-list",
        "required-int",
        "anyOf-self",
        "anyOf-cycle",
        "boolean-definition",
        "boolean-branch",
        "boolean-tag",
    ],
)
def test_a_reference_that_is_not_json_schema_or_loops_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: Callable[[dict[str, Any]], None], where: str
) -> None:
    """Issue 32 item 18: these were exit 3 ("a bug in the generator"); they are the input's fault: exit 2, one
    problem with its pointer. A loop of anyOf scopes at one place of the message is undefined in JSON Schema."""
    pub = _edited(tmp_path, edit)
    code, out, err = run(capsys, CANONICAL, str(pub), "--version", "v1")
    assert (code, out) == (2, "") and where in err and "internal error" not in err, err


def test_a_reference_wrong_everywhere_reports_its_first_problems_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """5,000 definitions that are not JSON Schema: exit 2 with the first 50 problems, not 10,000 of them."""

    def junk(defs: dict[str, Any]) -> None:
        for i in range(5000):
            defs[f"Bad{i}"] = {"properties": [], "required": 5}

    code, out, err = run(capsys, CANONICAL, str(_edited(tmp_path, junk)), "--version", "v1")
    assert (code, out) == (2, "") and "the schema has 50 problems" in err and err.count("not valid JSON Schema") == 50


def _scope_chain(defs: dict[str, Any], depth: int, width: int) -> None:
    """``width`` definitions at each of ``depth`` levels, each with an anyOf scope on every definition of the
    next level: a chain (width 1) or a lattice of 2**depth paths (width 2)."""
    names = [[f"Level{i}Scope{j}" for j in range(width)] for i in range(depth + 1)]
    for i in range(depth):
        for name in names[i]:
            defs[name] = {
                "type": "object",
                "properties": {name[:1].lower() + name[1:]: {"type": "string"}},
                "anyOf": [{"$ref": f"#/$defs/{n}"} for n in names[i + 1]],
            }
    for name in names[depth]:
        defs[name] = {"type": "object", "properties": {"last": {"type": "string"}}, "required": ["last"]}


def test_anyof_scopes_nested_too_deep_are_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A chain of 3,000 definitions each with an anyOf scope on the next was a RecursionError (exit 3); scopes
    nest at most MAX_SCOPE_DEPTH definitions deep: exit 2 naming where, and a chain within it is read."""
    from generator.reference import MAX_SCOPE_DEPTH

    pub = _edited(tmp_path / "deep", lambda defs: _scope_chain(defs, 3000, 1))
    code, out, err = run(capsys, CANONICAL, str(pub), "--version", "v1")
    assert (code, out) == (2, "") and f"anyOf scopes nested more than {MAX_SCOPE_DEPTH} definitions deep" in err
    ref = _load(_edited(tmp_path / "ok", lambda defs: _scope_chain(defs, MAX_SCOPE_DEPTH - 1, 1)))
    assert ref.protocol.type("Level0Scope0").field("last") is not None


def test_shared_anyof_scopes_are_merged_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scopes shared by several definitions (a lattice: 2**16 paths through 34 definitions) are merged once per
    definition, not once per path: the work grows with the definitions, not exponentially."""
    from generator import reference as module

    calls: list[str] = []
    real = module._Translator.scopes

    def counting(self: Any, name: str, *args: Any) -> list[str]:
        calls.append(name)
        return real(self, name, *args)

    monkeypatch.setattr(module._Translator, "scopes", counting)
    ref = _load(_edited(tmp_path, lambda defs: _scope_chain(defs, 16, 2)))
    lattice = [c for c in calls if c.startswith("Level")]
    assert len(lattice) <= 2 * 34, len(lattice)
    level0 = ref.protocol.type("Level0Scope0")
    assert all(level0.field(k) is not None for k in ("level0Scope0", "level15Scope1", "last"))


def test_recursion_through_a_property_of_a_union_branch_is_read(tmp_path: Path) -> None:
    """A union whose branch refers back to the union through a property is valid JSON Schema and a finite
    message: it is read, not refused."""

    def loop(defs: dict[str, Any]) -> None:
        defs["Tree"] = {"anyOf": [{"$ref": "#/$defs/Node"}, {"$ref": "#/$defs/Leaf"}]}
        defs["Node"] = {"type": "object", "properties": {"child": {"$ref": "#/$defs/Tree"}}, "required": ["child"]}
        defs["Leaf"] = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}

    ref = _load(_edited(tmp_path, loop))
    assert ref.protocol.has_type("Tree") and ref.protocol.has_type("Node")


_JUNK = [None, True, 5, 1.5, "x", [], {}, ["a"], {"a": 1}, {"$ref": "#/$defs/Nope"}, {"anyOf": []}]
_KEYS = ["properties", "required", "anyOf", "oneOf", "allOf", "items", "$ref", "type", "const", "enum"]
_KEYS += ["additionalProperties", "description", "x-method", "x-side", "default", "x-deserialize-default-on-error"]


def _objects(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        return [node, *(o for v in node.values() for o in _objects(v))]
    if isinstance(node, list):
        return [o for v in node for o in _objects(v)]
    return []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_damaged_reference_is_never_a_bug_in_the_generator(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    """Any keyword of the reference or its meta file set to any JSON value: exit 0, 1 or 2, never 3."""
    pub = _published_copy(tmp_path_factory.mktemp("fuzz"))
    file = data.draw(st.sampled_from(["schema.json", "meta.json"]))
    doc = json.loads((pub / file).read_text("utf-8"))
    for _ in range(data.draw(st.integers(1, 3))):
        node = data.draw(st.sampled_from(_objects(doc)))
        node[data.draw(st.sampled_from(_KEYS + sorted(node)))] = copy.deepcopy(data.draw(st.sampled_from(_JUNK)))
    (pub / file).write_text(json.dumps(doc), "utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(["--schema", str(CANONICAL), "compare-reference", str(pub), "--version", "v1"])
    assert code in (0, 1, 2), err.getvalue()


def test_an_any_value_branch_makes_the_union_take_any_value(tmp_path: Path) -> None:
    def error_data(defs: dict[str, Any]) -> None:
        defs["KnownData"] = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
        defs["ErrorData"] = {
            "description": "Known shapes, or anything.",
            "anyOf": [{"title": "Known", "allOf": [{"$ref": "#/$defs/KnownData"}]}, {"title": "Other"}],
        }
        defs["NewSessionResponse"]["properties"]["data"] = {"anyOf": [{"$ref": "#/$defs/ErrorData"}, {"type": "null"}]}

    ref = _load(_edited(tmp_path, error_data)).protocol
    data = ref.type("ErrorData")
    assert isinstance(data, AliasType) and data.type.kind == "any"
    field = ref.type("NewSessionResponse").field("data")  # type: ignore[union-attr]
    assert field is not None and field.type.render() == "ErrorData", "it takes null already: no `| null`"


def test_inline_untagged_branches_are_a_presence_union(tmp_path: Path) -> None:
    def outcome(defs: dict[str, Any]) -> None:
        defs["Outcome"] = {
            "description": "One of two.",
            "anyOf": [
                {"title": "Result", "type": "object", "properties": {"result": {}}, "required": ["result"]},
                {
                    "title": "Error",
                    "type": "object",
                    "properties": {"error": {"type": "string"}},
                    "required": ["error"],
                },
            ],
        }

    ref = _load(_edited(tmp_path, outcome)).protocol
    union = ref.type("Outcome")
    assert isinstance(union, UnionType) and union.overlap_first
    assert dict(union.presence or ()) == {"result": "OutcomeResult", "error": "OutcomeError"}
    assert ref.type("OutcomeResult").field("result").type.kind == "any"  # type: ignore[union-attr]


def test_an_untagged_branch_of_another_shape_is_reported_with_its_pointer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pub = _edited(
        tmp_path,
        lambda defs: defs.update(
            Odd={"anyOf": [{"allOf": [{"$ref": "#/$defs/SessionScope"}]}, {"type": "object", "minProperties": 1}]}
        ),
    )
    code, _, err = run(capsys, CANONICAL, str(pub), "--version", "v1")
    assert code == 2 and "schema.json#/$defs/Odd/anyOf/1" in err and "minProperties" in err
    assert "$ref None" not in err and "Traceback" not in err


def _open_content(scopes: str | None = None) -> Callable[[dict[str, Any]], None]:
    """ContentBlock with a property every variant requires (beside the tag) and, if given, scopes on its
    catch-all branch: what v2 SetSessionConfigOptionRequest and elicitation/create look like."""

    def edit(defs: dict[str, Any]) -> None:
        block = defs["ContentBlock"]
        block.update(type="object", properties={"name": {"type": "string"}}, required=["name"])
        if scopes:
            block["anyOf"][2][scopes] = [
                {"title": "Session", "allOf": [{"$ref": "#/$defs/SessionScope"}]},
                {"title": "Request", "allOf": [{"$ref": "#/$defs/RequestScope"}]},
            ]
            block["anyOf"][2]["unevaluatedProperties"] = True

    return edit


def test_an_unknown_variant_carries_what_the_union_requires(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pub = _edited(tmp_path, _open_content())
    block = _load(pub).protocol.type("ContentBlock")
    assert isinstance(block, UnionType) and block.unknown_required == ("name", "uri")
    _, doc = _compare(capsys, pub)
    hits = [c for c in doc["changes"] if c["location"] == "ContentBlock" and c["deliberate"] is None]
    assert [c["rule"] for c in hits] == ["union-unknown-required-changed"]
    assert "['name', 'uri'] instead of ['uri']" in hits[0]["message"]


def test_an_unknown_variant_carries_one_of_its_scopes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pub = _edited(tmp_path, _open_content("anyOf"))
    block = _load(pub).protocol.type("ContentBlock")
    assert isinstance(block, UnionType) and block.unknown_required_one_of == ("sessionId", "requestId")
    assert "ContentBlock" not in _unsupported(pub)
    _, doc = _compare(capsys, pub)
    messages = [c["message"] for c in doc["changes"] if c["rule"] == "union-unknown-required-changed"]
    assert any("at least one of ['sessionId', 'requestId'] instead of nothing" in m for m in messages), messages


def test_exactly_one_scope_is_reported_as_unsupported(tmp_path: Path) -> None:
    def exactly_one(defs: dict[str, Any]) -> None:
        _open_content("oneOf")(defs)
        defs["CreateElicitationRequest"]["oneOf"] = defs["CreateElicitationRequest"].pop("anyOf")

    pub = _edited(tmp_path, exactly_one)
    ref = _load(pub)
    elicit = ref.protocol.type("CreateElicitationRequest")
    assert isinstance(elicit, ObjectType) and elicit.required_one_of == ("sessionId", "requestId")
    found = _unsupported(pub)
    assert "exactly one of ['sessionId', 'requestId']" in found["CreateElicitationRequest"]
    assert "exactly one of" in found["ContentBlock"]


def test_default_on_null_is_read_only_with_default_on_error(tmp_path: Path) -> None:
    def on_null(defs: dict[str, Any]) -> None:
        servers = defs["NewSessionRequest"]["properties"]["mcpServers"]
        servers["x-deserialize-default-on-null"] = True  # with default-on-error: nothing more to say
        defs["McpServerStdio"]["properties"]["args"] = {
            "type": "array",
            "items": {"type": "string"},
            "x-deserialize-default-on-null": True,
        }

    found = _unsupported(_edited(tmp_path, on_null))
    assert list(found) == ["McpServerStdio.args"] and "x-deserialize-default-on-null" in found["McpServerStdio.args"]


def test_every_keyword_is_read_or_reported(tmp_path: Path) -> None:
    def keywords(defs: dict[str, Any]) -> None:
        text = defs["TextContent"]
        text["properties"]["text"]["contentEncoding"] = "base64"  # an annotation in JSON Schema 2020-12
        text["x-docs-ignore"] = True
        text["properties"]["text"]["patternProperties"] = {"^x": {}}
        defs["SelectOption"]["propertyNames"] = {"pattern": "^[a-z]+$"}

    found = {(c.location, c.message) for c in _load(_edited(tmp_path, keywords)).unsupported}
    assert {loc for loc, _ in found} == {"TextContent", "SelectOption"}
    assert any("`patternProperties`" in m for _, m in found) and any("`propertyNames`" in m for _, m in found)
    assert not any("contentEncoding" in m or "x-docs-ignore" in m for _, m in found)


def test_branch_names_do_not_depend_on_reading_order(tmp_path: Path) -> None:
    """Two unions with a branch of the same tag value: each is named after its union, whichever comes first."""

    def two(defs: dict[str, Any]) -> None:
        for union in ("AUnion", "ZUnion"):
            defs[union] = {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {"kind": {"type": "string", "const": "done"}, "x": {"type": "string"}},
                        "required": ["kind"],
                    },
                    {
                        "type": "object",
                        "properties": {"kind": {"type": "string", "const": union}},
                        "required": ["kind"],
                    },
                ]
            }

    ref = _load(_edited(tmp_path, two)).protocol
    assert ref.has_type("AUnionDone") and ref.has_type("ZUnionDone") and not ref.has_type("Done")


def test_a_naming_entry_onto_a_name_the_reference_defines_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pub = _edited(tmp_path, lambda defs: defs.update(CancelAction={"type": "object", "properties": {}}))
    diffs = tmp_path / "differences.json"
    entries = json.loads((CANONICAL / "differences.json").read_text("utf-8"))
    entries["differences"].append(
        {
            "id": "clash",
            "versions": ["v1"],
            "kind": "naming",
            "names": {"SelectGroup": "CancelAction"},
            "reason": "A test.",
            "source": "written here",
        }
    )
    diffs.write_text(json.dumps(entries), "utf-8")
    code, out, err = run(capsys, CANONICAL, str(pub), "--version", "v1", "--differences", str(diffs))
    assert code == 2 and out == "" and "'SelectGroup' to 'CancelAction'" in err and "Traceback" not in err


def test_a_change_from_the_reference_names_the_pairing_it_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """issue 22: a required field added to a result: a client on the reference rejects our agent's answers."""

    def message_id(defs: dict[str, Any]) -> None:
        defs["NewSessionResponse"]["properties"]["messageId"] = {"type": "string"}
        defs["NewSessionResponse"].setdefault("required", []).append("messageId")

    pub = _edited(tmp_path, message_id)
    code, doc = _compare(capsys, pub, "--fail-on", "breaking")
    hit = next(c for c in doc["changes"] if c["location"] == "NewSessionResponse.messageId")
    assert code == 1 and hit["rule"] == "response-required-field-added" and hit["level"] == "breaking"
    assert hit["breaks"] == ["new-reader-old-writer"]
    _, text, _ = run(capsys, CANONICAL, str(pub), "--version", "v1")
    assert "breaks client on the reference reading agent on ours" in text


# ---------------------------------------------------------------- the published files themselves

SDK_VERSION = "2.4.0"
TS_DIR = ROOT / "tests" / "interop" / "ts"
SDK_SCHEMA = TS_DIR / "node_modules" / "@agentclientprotocol" / "sdk" / "schema"


@pytest.fixture(scope="module")
def published_package() -> Path:
    """The schema folder of @agentclientprotocol/sdk, installed with npm at test time as the interop tests do
    (tests/interop/ts, ignored by git); never committed. Without npm: skipped, except under CI=true."""
    import os
    import subprocess

    npm = shutil.which("npm")
    if not SDK_SCHEMA.is_dir():
        if npm is None:
            message = "npm is not on PATH: the published schemas of @agentclientprotocol/sdk cannot be fetched"
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail(message + " (CI=true requires it)")
            pytest.skip(message)
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent"], cwd=TS_DIR, check=True, timeout=300)
    installed = json.loads((SDK_SCHEMA.parent / "package.json").read_text("utf-8"))["version"]
    assert installed == SDK_VERSION, f"tests/interop/ts installed @agentclientprotocol/sdk {installed}"
    return SDK_SCHEMA


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("unstable", [False, True], ids=["stable", "unstable"])
def test_the_published_schemas_match_ours(
    published_package: Path, version: str, unstable: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """compare-reference --fail-on any passes on each of the four published files: every difference is adopted
    or explained in schema/differences.json."""
    args = ["compare-reference", str(published_package / version), "--version", version, "--fail-on", "any"]
    code = cli.main([*args, *(["--unstable"] if unstable else [])])
    out, err = capsys.readouterr()
    unexplained = out.split("\nDELIBERATE", 1)[0]
    assert code == 0, unexplained[:6000] + err
