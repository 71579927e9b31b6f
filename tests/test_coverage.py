"""The fixtures cover the whole protocol: every method both ways, every union branch, in each version."""

from __future__ import annotations

import pytest
from conftest import VERSIONS, api, fixture_files, load_fixture, payload_of
from pydantic import BaseModel


def _fixtures(version: str) -> list[dict]:
    return [fx for fx in (load_fixture(p) for p in fixture_files()) if version in fx["versions"]]


def _walk(value: object, seen: set[str]) -> None:
    if isinstance(value, BaseModel):
        seen.add(type(value).__name__)
        for name in type(value).model_fields:
            _walk(getattr(value, name), seen)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _walk(item, seen)
    elif isinstance(value, dict):
        for item in value.values():
            _walk(item, seen)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_method_has_valid_and_invalid_fixtures(version: str) -> None:
    m = api(version)
    have: dict[tuple[str, str, bool], int] = {}
    for fx in _fixtures(version):
        part, _ = payload_of(fx["message"])
        key = (fx["method"], part, fx["valid"])
        have[key] = have.get(key, 0) + 1
    missing = []
    for name, spec in m.METHODS.items():
        if (name, "params", True) not in have:
            missing.append(f"{name}: valid params")
        if spec.kind == "request" and (name, "result", True) not in have:
            missing.append(f"{name}: valid result")
        if not any(have.get((name, part, False)) for part in ("params", "result")):
            missing.append(f"{name}: an invalid payload")
    assert not missing, missing


@pytest.mark.parametrize("version", VERSIONS)
def test_every_union_branch_is_exercised(version: str, inputs) -> None:
    from generator.diff.compare import flows
    from generator.model import UnionType

    m = api(version)
    seen: set[str] = set()
    for fx in _fixtures(version):
        if not fx["valid"]:
            continue
        part, payload = payload_of(fx["message"])
        if part == "error":
            continue
        parse = m.parse_params if part == "params" else m.parse_result
        _walk(parse(fx["method"], payload), seen)
    proto = inputs.protocols[version]
    unions = [t for t in proto.types if isinstance(t, UnionType)]
    # The branches a message can carry: those reachable from some method's params or result.
    reachable = {name for name, through in flows(proto).items() if through}
    missing = []
    for union in unions:
        for variant in union.variants:
            target = proto.type(variant.name)
            if isinstance(target, UnionType):
                continue  # a nested union: its own branches are checked
            if variant.name in reachable and variant.name not in seen:
                missing.append(f"{union.name}.{variant.name}")
    assert not missing, f"no valid fixture carries: {missing}"
    defined = {t.name for t in proto.types}
    assert seen & defined <= reachable, f"parsed models that no method reaches: {(seen & defined) - reachable}"


def _walk_fields(value: object, seen: set[tuple[str, str]]) -> None:
    """(class, wire name) of every field a parsed message sets, at any depth."""
    if isinstance(value, BaseModel):
        cls = type(value)
        for name in value.model_fields_set:
            info = cls.model_fields.get(name)
            if info is not None:
                seen.add((cls.__name__, info.alias or name))
            _walk_fields(getattr(value, name, None), seen)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _walk_fields(item, seen)
    elif isinstance(value, dict):
        for item in value.values():
            _walk_fields(item, seen)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_unstable_surface_has_fixtures(version: str, inputs) -> None:
    """Read from the canonical schema, not from a list here: every unstable method has a valid params fixture
    (and a valid notification-form one when it has that form), a valid result fixture if it is a request, and an
    invalid fixture; every unstable union branch and every unstable field of a stable definition is carried
    by a valid fixture."""
    from generator.model import ObjectType, UnionType

    proto = inputs.protocols[version]
    m = api(version)
    have: set[tuple[str, str, bool]] = set()
    notification_forms: set[str] = set()
    classes: set[str] = set()
    fields: set[tuple[str, str]] = set()
    for fx in _fixtures(version):
        part, payload = payload_of(fx["message"])
        have.add((fx["method"], part, fx["valid"]))
        if not fx["valid"] or part == "error":
            continue
        if part == "params" and "id" not in fx["message"]:
            notification_forms.add(fx["method"])
        parse = m.parse_params if part == "params" else m.parse_result
        parsed = parse(fx["method"], payload)
        _walk(parsed, classes)
        _walk_fields(parsed, fields)
    missing = []
    unstable_methods = [meth for meth in proto.methods if meth.stability == "unstable"]
    assert unstable_methods, "the schema has an unstable surface"
    for meth in unstable_methods:
        if (meth.name, "params", True) not in have:
            missing.append(f"{meth.name}: valid params")
        if meth.kind == "request" and (meth.name, "result", True) not in have:
            missing.append(f"{meth.name}: valid result")
        if meth.notification_params is not None and meth.name not in notification_forms:
            missing.append(f"{meth.name}: valid params of the notification form")
        if not any((meth.name, part, False) in have for part in ("params", "result")):
            missing.append(f"{meth.name}: an invalid payload")
    branches = 0
    for union in (t for t in proto.types if isinstance(t, UnionType)):
        for variant in union.variants:
            target = proto.type(variant.name)
            if isinstance(target, UnionType) or not (union.stability == "unstable" or target.stability == "unstable"):
                continue
            branches += 1
            if variant.name not in classes:
                missing.append(f"branch {union.name}.{variant.name}")
    assert branches, "the schema has unstable union branches"
    for obj in (t for t in proto.types if isinstance(t, ObjectType) and t.stability != "unstable"):
        for f in obj.fields:
            if f.unstable and (obj.name, f.wire_name) not in fields:
                missing.append(f"field {obj.name}.{f.wire_name}")
    assert not missing, f"the unstable surface lacks fixtures: {missing}"
