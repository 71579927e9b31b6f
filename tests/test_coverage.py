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
