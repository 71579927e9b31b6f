"""The models' plan (generator/plan.py), tested on the plan itself, and what it puts in the models."""

from __future__ import annotations

import ast
import pydoc
from functools import cache

import pytest
from _models_source import models_tree
from conftest import GENERATED, api

from generator import pipeline
from generator.model import AliasType, EnumType, ObjectType, Protocol, UnionType
from generator.plan import AliasPlan, ClassPlan, ModulePlan, plan_models

VERSIONS = ("v1", "v2")


@cache
def protocol(version: str) -> Protocol:
    return pipeline.load_inputs().protocols[version]


@cache
def plan(version: str) -> ModulePlan:
    return plan_models(protocol(version))


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("version", VERSIONS)
def test_every_definition_is_planned_once_with_its_kind(version: str) -> None:
    proto, p = protocol(version), plan(version)
    assert sorted(d.name for d in p.definitions) == sorted(t.name for t in proto.types)
    for t in proto.types:
        d = p.definition(t.name)
        assert isinstance(d, ClassPlan) == isinstance(t, ObjectType), t.name
        assert d.description == t.description
        if isinstance(t, UnionType):
            assert (
                isinstance(d, AliasPlan)
                and d.what == ("open-union" if t.open else "union")
                or (t.presence is not None and d.what == "presence-union")
            ), t.name
        if isinstance(t, EnumType):
            assert isinstance(d, AliasPlan) and d.what == ("open-enum" if t.open else "enum")
            assert all(repr(v) in d.annotation for v in t.values)
        if isinstance(t, AliasType):
            assert isinstance(d, AliasPlan) and d.what == "alias"


@pytest.mark.parametrize("version", VERSIONS)
def test_fields_carry_names_descriptions_defaults_and_wire_rules(version: str) -> None:
    proto, p = protocol(version), plan(version)
    for t in proto.types:
        if not isinstance(t, ObjectType):
            continue
        d = p.definition(t.name)
        assert isinstance(d, ClassPlan)
        assert [(f.name, f.wire_name) for f in d.fields] == [(f.py_name, f.wire_name) for f in t.fields]
        assert d.attribute_spellings == tuple(sorted({f.py_name for f in t.fields if f.py_name != f.wire_name}))
        for planned, field in zip(d.fields, t.fields, strict=True):
            where = f"{t.name}.{field.wire_name}"
            assert planned.description == field.description, where
            assert planned.required == field.required, where
            assert (planned.default is None) == field.required, where
            if field.has_default:
                assert planned.default == repr(field.default), where
            assert planned.omit_on_error == field.on_error_omit, where
            assert ("OMIT_ON_ERROR" in planned.annotation) == field.on_error_omit, where
            assert planned.skip_invalid_items == field.skip_invalid_items, where
            assert ("OnErrorOmit[" in planned.annotation) == field.skip_invalid_items, where
            assert ("NOT_NULL" in planned.annotation) == planned.not_null, where
            if field.py_name != field.wire_name:
                assert f"alias={field.wire_name!r}" in planned.annotation, where
            # Every annotation is one Python expression.
            ast.parse(planned.annotation, mode="eval")


def test_a_known_field_is_planned_as_expected() -> None:
    info = plan("v1").definition("SessionInfo")
    assert isinstance(info, ClassPlan)
    fields = {f.name: f for f in info.fields}
    assert fields["updated_at"].annotation == "Annotated[str | None, Field(alias='updatedAt'), OMIT_ON_ERROR]"
    assert fields["updated_at"].default == "None"
    assert fields["additional_directories"].annotation == (
        "Annotated[Annotated[list[OnErrorOmit[str]], FAIL_FAST] | None, Field(alias='additionalDirectories'), "
        "NOT_NULL, OMIT_ON_ERROR]"
    )
    assert fields["session_id"].annotation == "Annotated[SessionId, Field(alias='sessionId')]"
    assert fields["session_id"].default is None and fields["session_id"].required
    assert "meta" in info.attribute_spellings and "session_id" in info.attribute_spellings


@pytest.mark.parametrize("version", VERSIONS)
def test_order_defines_every_name_before_its_use(version: str) -> None:
    """Dependencies first, roots in alphabetical order: a reader meets each name before it is used."""
    proto, p = protocol(version), plan(version)
    position = {d.name: i for i, d in enumerate(p.definitions)}
    for t in proto.types:
        used = (
            [n for f in t.fields for n in f.type.refs()]
            if isinstance(t, ObjectType)
            else (
                [v.name for v in t.variants]
                if isinstance(t, UnionType)
                else (t.type.refs() if isinstance(t, AliasType) else [])
            )
        )
        for name in used:
            assert position[name] < position[t.name], f"{version}: {name} comes after {t.name}, which uses it"
    # The first definition that names nothing is the alphabetically first such root.
    roots = [d.name for d in p.definitions]
    assert roots == [d.name for d in plan_models(proto).definitions]  # stable
    assert not [d.name for d in p.definitions if isinstance(d, ClassPlan) and d.forward_ref]  # nothing recursive


@pytest.mark.parametrize("version", VERSIONS)
def test_models_module_prints_the_plan_in_its_order(version: str) -> None:
    source = (GENERATED / "acp_types" / version / "models.py").read_text("utf-8")
    tree = models_tree(source)  # without the shared annotations' names (tests/_models_source.py)
    names = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            names.append(node.targets[0].id)
    assert names == [d.name for d in plan(version).definitions]


@pytest.mark.parametrize("version", VERSIONS)
def test_every_field_description_reaches_help_and_the_attribute_docstring(version: str) -> None:
    models = api(version).models
    source = (GENERATED / "acp_types" / version / "models.py").read_text("utf-8")
    tree = ast.parse(source)
    attr_docs: dict[tuple[str, str], str] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            # A tag field is declared under `if TYPE_CHECKING:` (with its default, what editors
            # read) and again under `else:`; its docstring sits in the first branch.
            body = [s for stmt in node.body for s in (stmt.body if isinstance(stmt, ast.If) else [stmt])]
            for stmt, after in zip(body, body[1:], strict=False):
                if (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                ):
                    attr_docs[(node.name, stmt.target.id)] = after.value.value
    described = 0
    for d in plan(version).definitions:
        if not isinstance(d, ClassPlan):
            continue
        text = _words(pydoc.render_doc(getattr(models, d.name), renderer=pydoc.plaintext))
        for f in d.fields:
            if not f.description.strip():
                continue
            described += 1
            assert f"{f.name}: {_words(f.description)}" in text, f"help({d.name}) lacks {f.name}'s description"
            assert attr_docs.get((d.name, f.name), "").strip() == f.description.strip(), f"{d.name}.{f.name}"
    assert described > 200


def test_help_shows_a_field_description() -> None:
    text = pydoc.render_doc(api("v1").models.SessionNotification, renderer=pydoc.plaintext)
    assert "session_id: The session the update is about." in _words(text)
