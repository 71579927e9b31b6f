"""Every fixture message, checked both ways: jsonschema bound to its method, and the models.

Valid fixtures must pass both and round-trip through the models unchanged;
invalid ones must be rejected by both. A tolerated fixture (valid, with
``reads``) breaks the sender's rules, so jsonschema rejects it, while the
tolerant receiver reads it as ``reads`` (which jsonschema accepts).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import (
    FIXTURES,
    ROOT,
    api,
    bundled_schema,
    fixture_cases,
    fixture_files,
    load_fixture,
    payload_of,
    validator_for,
)
from pydantic import BaseModel, ValidationError

SEED_DOCS = ROOT / "tests" / "seed_docs"


def _definition(version: str, method: str, part: str) -> str:
    if part == "error":
        return "Error"
    return bundled_schema(version)["x-acp-methods"][method][part]


def _parser(version: str, part: str):
    if part == "error":
        return lambda method, payload: api(version).Error.model_validate(payload)
    return api(version).parse_params if part == "params" else api(version).parse_result


@pytest.mark.parametrize("path, version", fixture_cases())
def test_fixture(path: Path, version: str) -> None:
    fx = load_fixture(path)
    method, message = fx["method"], fx["message"]
    part, payload = payload_of(message)
    if "method" in message:
        assert message["method"] == method, "a request's method must match the fixture's method"
    definition = _definition(version, method, part)
    schema_errors = list(validator_for(version, definition).iter_errors(payload))
    parse = _parser(version, part)
    if fx["valid"] and "reads" in fx:
        assert schema_errors, "a tolerated fixture must break the sender's rules (jsonschema accepts it)"
        model = parse(method, payload)
        assert model.to_wire() == fx["reads"], "the tolerant receiver does not read the message as `reads`"
        assert not list(validator_for(version, definition).iter_errors(fx["reads"])), "`reads` is not valid"
    elif fx["valid"]:
        assert not schema_errors, f"jsonschema rejects a valid fixture: {schema_errors[0].message}"
        model = parse(method, payload)
        if not isinstance(model, BaseModel):
            # a payload type that is not a model (mcp/message's result is any JSON value) reads as the value
            assert model == payload, "a payload that is not a model must read as the value itself"
            return
        assert model.to_wire() == payload, "the models do not write the message back as it came"
        assert type(model).model_validate_json(model.to_json()).to_wire() == payload
    else:
        assert fx.get("error"), "a negative fixture says why it is invalid"
        assert schema_errors, "jsonschema accepts an invalid fixture"
        with pytest.raises(ValidationError):
            parse(method, payload)


def test_fixture_files_are_well_formed() -> None:
    allowed = {"description", "source", "versions", "method", "valid", "message", "error", "reads"}
    for path in fixture_files():
        fx = load_fixture(path)
        assert set(fx) <= allowed, f"{path.name}: unexpected keys {set(fx) - allowed}"
        assert fx["versions"] and set(fx["versions"]) <= {"v1", "v2"}, path.name
        assert fx["message"].get("jsonrpc") == "2.0", path.name
        assert "reads" not in fx or fx["valid"], f"{path.name}: only a valid fixture is read as something"
        for version in fx["versions"]:
            assert fx["method"] in api(version).METHODS, f"{path.name}: {fx['method']} is not a {version} method"


def _seed_examples() -> list[tuple[str, object]]:
    """Every JSON example in the seed documents: top-level {...} blocks that parse as JSON."""
    found = []
    for doc in sorted(SEED_DOCS.glob("*.txt")):
        text = doc.read_text("utf-8")
        prefix = doc.name[:3]
        for match in re.finditer(r"^\{\n.*?^\}$", text, flags=re.S | re.M):
            found.append((prefix, json.loads(match.group(0))))
    return found


def test_every_seed_example_is_a_fixture() -> None:
    examples = _seed_examples()
    assert len(examples) >= 25, "the seed documents hold at least 25 JSON examples"
    fixtures = [load_fixture(p) for p in (FIXTURES / "seeds").glob("*.json")]
    for prefix, example in examples:
        if "jsonrpc" not in example:
            # a bare McpServer object from seed 001: it must appear inside a fixture message
            assert any(_contains(f["message"], example) for f in fixtures), example
            continue
        assert any(f["message"] == example and f["source"].startswith(f"seed {prefix}") for f in fixtures), (
            f"seed {prefix} example has no fixture: {json.dumps(example)[:200]}"
        )


def _contains(node: object, wanted: object) -> bool:
    if node == wanted:
        return True
    if isinstance(node, dict):
        return any(_contains(v, wanted) for v in node.values())
    if isinstance(node, list):
        return any(_contains(v, wanted) for v in node)
    return False


def test_shared_archive_examples_hold_in_both_versions() -> None:
    both = [load_fixture(p) for p in (FIXTURES / "seeds").glob("000-*.json")]
    methods = {f["method"] for f in both if set(f["versions"]) == {"v1", "v2"}}
    assert {"session/archive", "session/unarchive", "session/list"} <= methods
