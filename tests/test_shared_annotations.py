"""Annotations several classes use are built once (generator/render/models.py), and say what the plan says.

The import of a version builds one typing object and one ``Field()`` info per
distinct annotation instead of one per field; the classes must still carry
exactly the annotations of the plan.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cache

import pytest
from _models_source import models_tree, shared_definitions
from conftest import GENERATED, api

from generator import pipeline
from generator.plan import ClassPlan, ModulePlan, plan_models
from generator.render.models import SHARED_PREFIX, shared_annotations, shared_name

VERSIONS = ("v1", "v2")


@cache
def plan(version: str) -> ModulePlan:
    return plan_models(pipeline.load_inputs().protocols[version])


def _source(version: str) -> str:
    return (GENERATED / "acp_types" / version / "models.py").read_text("utf-8")


def _field_annotations(tree: ast.Module) -> dict[tuple[str, str], str]:
    """(class, attribute) -> the annotation the class body runs (a tag field's ``else:`` branch)."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            body = [s for stmt in node.body for s in (stmt.orelse if isinstance(stmt, ast.If) else [stmt])]
            for stmt in body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    out[(node.name, stmt.target.id)] = ast.unparse(stmt.annotation)
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_every_field_runs_the_plans_annotation(version: str) -> None:
    annotations = _field_annotations(models_tree(_source(version)))
    checked = 0
    for d in plan(version).definitions:
        if isinstance(d, ClassPlan):
            for f in d.fields:
                assert annotations[(d.name, f.name)] == ast.unparse(ast.parse(f.annotation, mode="eval").body), (
                    d.name,
                    f.name,
                )
                checked += 1
    assert checked > 600  # every field of every class of the version (v1 has about 660)


@pytest.mark.parametrize("version", VERSIONS)
def test_repeated_annotations_are_one_object(version: str) -> None:
    """Fields whose annotation is written alike hold the very same annotation object, pydantic's extras key too."""
    models = api(version).models
    objects: dict[str, set[int]] = defaultdict(set)
    for d in plan(version).definitions:
        if isinstance(d, ClassPlan) and not d.forward_ref:
            hints = getattr(models, d.name).__annotations__
            for f in d.fields:
                objects[f.annotation].add(id(hints[f.name]))
            if d.attribute_spellings:
                objects[f"extra {d.attribute_spellings}"].add(id(hints["__pydantic_extra__"]))
    repeated = {text: ids for text, ids in objects.items() if len(ids) > 1}
    assert not repeated, f"{len(repeated)} annotations built more than once, e.g. {sorted(repeated)[:3]}"
    shared = shared_definitions(ast.parse(_source(version)))
    assert len(shared) > 50
    assert set(shared) == set(shared_annotations(plan(version)).values())


def test_a_shared_name_depends_on_the_annotation_only() -> None:
    a = "Annotated[Meta | None, Field(alias='_meta'), OMIT_ON_ERROR]"
    assert shared_name(a) == shared_name(a).strip() and shared_name(a).startswith(SHARED_PREFIX)
    assert shared_name(a).isidentifier()
    assert shared_name(a) != shared_name(a.replace("_meta", "meta"))
    assert shared_name("list[X] | None") != shared_name("list[X | None]")
