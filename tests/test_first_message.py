"""The first message after import builds its validators without pydantic's plugin lookup (acp_types._build).

Timing is `make bench`'s business; these tests pin what makes it fast and that
the models completed this way behave as pydantic's own completion makes them.
"""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys

import pytest
from conftest import ROOT, VERSIONS, api
from pydantic import BaseModel, ValidationError

_FIRST_MESSAGE = """
import json, sys
import acp_types.{version} as m
spec = m.METHODS["session/update"]
update = {update}
note = m.parse_params("session/update", update)
assert json.loads(note.to_json()) == update, note.to_json()
assert json.loads(spec.params.model_validate_json(json.dumps(update), by_name=False).to_json()) == update
line = json.dumps({{"jsonrpc": "2.0", "method": "session/update", "params": update}})
assert m.parse_message(line).to_json() == line.replace(", ", ",").replace(": ", ":")
print(json.dumps(sorted(name for name in sys.modules if name.startswith(("importlib.metadata", "pydantic.plugin")))))
"""

_UPDATES = {
    "v1": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
                                         "content": {"type": "text", "text": "hi"}}},
    "v2": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "messageId": "m1",
                                         "content": {"type": "text", "text": "hi"}}},
}


@pytest.mark.parametrize("version", VERSIONS)
def test_first_message_does_not_scan_installed_distributions(version: str) -> None:
    code = _FIRST_MESSAGE.format(version=version, update=repr(_UPDATES[version]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=ROOT / "generated", check=False)
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout)
    # pydantic's plugin loader imports importlib.metadata and scans every
    # installed distribution the first time it builds a validator
    assert "pydantic.plugin._loader" not in loaded
    assert "importlib.metadata" not in loaded


@pytest.mark.parametrize("version", VERSIONS)
def test_completed_models_are_what_pydantic_completes(version: str) -> None:
    m = api(version)
    cls = m.METHODS["session/update"].params
    cls.model_rebuild()
    assert cls.__pydantic_complete__ is True
    update = _UPDATES[version]
    bad = ({"sessionId": 1, "update": update["update"]}, {"update": update["update"]}, {**update, "_meta": 5})

    def observe() -> tuple[object, ...]:
        results: list[object] = [str(inspect.signature(cls))]  # what help() and editors show
        results.append(cls.model_validate(update, by_name=False).to_wire())
        results.append(cls.model_validate_json(json.dumps(update), by_name=False).to_json())
        for data in bad:
            try:
                results.append(cls.model_validate(data, by_name=False).to_wire())
            except ValidationError as exc:
                results.append(exc.errors(include_url=False))
        return tuple(results)

    ours = observe()
    assert "sessionId" in str(ours[0]) and ours[1] == update
    # pydantic's own completion of the same class (forced), observed the same way; the class is
    # shared by the whole test session, so what the forced rebuild replaces is put back afterwards
    kept = {name: cls.__dict__[name] for name in _COMPLETED if name in cls.__dict__}
    try:
        BaseModel.model_rebuild.__func__(cls, force=True)  # type: ignore[attr-defined]
        assert observe() == ours
    finally:
        for name, value in kept.items():
            type.__setattr__(cls, name, value)


_COMPLETED = ("__pydantic_core_schema__", "__pydantic_validator__", "__pydantic_serializer__", "__signature__")


def test_falls_back_to_pydantic_when_its_internals_are_missing() -> None:
    # a pydantic whose schema generation moved: acp_types._build steps aside
    code = (
        "import sys\n"
        "import acp_types.v1 as m\n"
        "sys.modules['pydantic._internal._signature'] = None\n"
        "note = m.parse_params('session/update', " + repr(_UPDATES["v1"]) + ")\n"
        "print(note.to_json())\n"
        "print('pydantic.plugin._loader' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=ROOT / "generated", check=False)
    assert out.returncode == 0, out.stderr
    text, plugin_loader = out.stdout.split()
    assert json.loads(text) == _UPDATES["v1"]
    assert plugin_loader == "True"  # pydantic's own model_rebuild ran


_CONTAINED = """
import inspect, json, sys
from pydantic import BaseModel, ValidationError
import acp_types.{version} as m
from acp_types import _build
update = {update}
spec = m.METHODS["session/update"]
note = m.parse_params("session/update", update)   # completes the params class only
classes = [m.TextContent, type(note.update)]
assert all(cls in _build._FOUND and not cls.__pydantic_complete__ for cls in classes)
assert json.loads(note.to_json()) == update       # writing back completes them from _FOUND
assert all(cls not in _build._FOUND and cls.__pydantic_complete__ for cls in classes)

def observe(cls, good):
    out = [str(inspect.signature(cls)), cls.model_validate(good, by_name=False).to_wire(),
           cls.model_validate_json(json.dumps(good), by_name=False).to_json(),
           cls.model_json_schema()]
    for bad in ({{**good, "_meta": 5}}, {{k: 1 for k in good}}, {{}}):
        try:
            out.append(cls.model_validate(bad, by_name=False).to_wire())
        except ValidationError as exc:
            out.append(exc.errors(include_url=False))
    return out

goods = [update["update"]["content"], update["update"]]
ours = [observe(cls, good) for cls, good in zip(classes, goods)]
for cls in classes:
    BaseModel.model_rebuild.__func__(cls, force=True)
theirs = [observe(cls, good) for cls, good in zip(classes, goods)]
assert ours == theirs, (ours, theirs)
print("ok")
"""


@pytest.mark.parametrize("version", VERSIONS)
def test_contained_classes_complete_from_the_schema_already_generated(version: str) -> None:
    code = _CONTAINED.format(version=version, update=repr(_UPDATES[version]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=ROOT / "generated", check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok"]


@pytest.mark.parametrize("version", VERSIONS)
def test_envelope_schemas_are_what_a_type_adapter_makes(version: str) -> None:
    # parse_message's first line of a method builds its envelope's schema itself
    # (acp_types._build.type_schema: no plugin lookup, the payload class completed
    # from the store first); it must be the schema pydantic's TypeAdapter makes
    from pydantic import TypeAdapter

    from acp_types import _build
    from generator.core_schemas import same  # equal schemas, partials compared by what they hold

    envelopes = importlib.import_module(f"acp_types.{version}.envelopes")
    types = [*envelopes.CALLS.values(), *envelopes.RESULTS.values(), envelopes.ERROR]
    assert len(types) > 20
    for tp in types:
        made = _build.type_schema(tp)
        assert made is not None, tp
        assert same(made[0], TypeAdapter(tp).core_schema), tp.__name__
