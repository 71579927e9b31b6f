"""The stored core schemas (generator/core_schemas.py, acp_types._build.stored).

Each model class's schema is recorded at generation time and the first
message completes its classes from it. What must hold:

- every stored schema is what pydantic generates for that class on a fresh
  import, and a payload class's bounded copy is what the entry points make of
  it, so completing from the store cannot change behaviour;
- a first message generates no schema at all and builds one validator (the
  entry point's), loading one store module of its version;
- the definitions an entry says a class's serializer, or a contained class's
  own schema or serializer, needs are all that pydantic-core reaches there
  (it builds every definition it is given, so the first message's serializers
  get only those), and the first message's serializers get no more;
- with another pydantic-core (or no store), the schemas are generated as
  before, with the same results.

That generated/ holds the store of today's package is test_golden's (the store
is part of the rendered tree), that its bytes are the same on every run and
interpreter is test_golden's and test_interpreters' (``check --full``).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT, VERSIONS


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         cwd=ROOT / "generated", check=False)
    assert out.returncode == 0, out.stderr[-4000:]
    return out.stdout


_EVERY_CLASS = """
import importlib, json
from pydantic import BaseModel
from pydantic._internal._config import ConfigWrapper
from pydantic_core import SchemaSerializer, SchemaValidator
from acp_types import _build
from acp_types._runtime import model_nodes
from acp_types._validators import _bound, _copy_containers
from generator.core_schemas import same

package = importlib.import_module("acp_types.{version}")
models = importlib.import_module("acp_types.{version}.models")
classes = [c for name, c in vars(models).items() if isinstance(c, type) and issubclass(c, BaseModel)
           and c.__module__ == models.__name__ and c.__qualname__ == name]
payloads = {{t for spec in package.METHODS.values() for t in (spec.params, spec.result, spec.notification_params)}}
checked = bounded = pruned = 0
for cls in classes:
    entry = _build.stored("acp_types.{version}", "model", cls.__name__)
    assert entry is not None, cls
    schema, stored_bounded, nodes, needs = entry
    fresh = _build.generate_schema(cls)        # what completing it without the store makes, on a fresh import
    assert same(schema, fresh, {{}}), cls
    assert [id(n) for n in nodes] == [id(n) for n in model_nodes(schema)], cls
    config = ConfigWrapper(cls.model_config, check=False)   # what completing it gives pydantic-core
    assert _build._configs(cls, ConfigWrapper)[1] == config.core_config(title=cls.__name__), cls
    # pydantic-core refuses a schema that refers to a definition it was not given
    defs = schema.get("definitions") if schema["type"] == "definitions" else None
    if defs is None:
        assert needs[0] == (), cls
    else:
        SchemaSerializer(_build._with(schema["schema"], defs, needs[0]))
    assert len(needs[1]) == len(nodes), cls
    for node, wanted in zip(nodes, needs[1]):
        # the generator completes every class itself; a None would leave one to pydantic
        assert wanted is not None and _build._completable(node["cls"]), (cls, node["cls"])
        own, written = wanted
        assert set(written) <= set(own), cls
        SchemaValidator(_build._with(node, defs, own))
        SchemaSerializer(_build._with(node, defs, written))
        pruned += 0 if defs is None else len(defs) - len(written)
    if cls in payloads:
        copy, classes_in = stored_bounded
        expected = _copy_containers(fresh)
        _bound(expected)
        assert same(copy, expected, {{}}), cls
        assert set(classes_in) == {{n["cls"] for n in model_nodes(copy)}}, cls
        bounded += 1
    else:
        assert stored_bounded is None, cls
    checked += 1
assert not any(c.__pydantic_complete__ for c in classes)   # nothing above completed a class
print(json.dumps([checked, bounded, pruned]))
"""


@pytest.mark.parametrize("version", VERSIONS)
def test_every_stored_schema_is_what_pydantic_generates_for_the_class(version: str) -> None:
    checked, bounded, pruned = json.loads(_run(f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
                                               + _EVERY_CLASS.format(version=version)))
    assert checked > 150 and bounded > 20 and pruned > 1000


_FIRST = """
import json, sys
from pydantic._internal import _generate_schema
import pydantic_core
{setup}
import acp_types.{version} as m
from acp_types import _build, _runtime

calls = {{"schemas": 0, "validators": 0}}
written = []   # how many definitions each serializer was given
generate = _generate_schema.GenerateSchema.generate_schema
def counting_generate(self, *args, **kwargs):
    calls["schemas"] += 1
    return generate(self, *args, **kwargs)
_generate_schema.GenerateSchema.generate_schema = counting_generate
def counting(build):
    def count(*args, **kwargs):
        calls["validators"] += 1
        return build(*args, **kwargs)
    return count
_build.SchemaValidator = counting(pydantic_core.SchemaValidator)   # a class's own validator
_runtime.own_validator = counting(_runtime.own_validator)          # the entry points' (and slow, precise) ones
serializer = _build.SchemaSerializer
def counting_serializer(schema, *args):
    written.append(len(schema["definitions"]) if schema.get("type") == "definitions" else 0)
    return serializer(schema, *args)
_build.SchemaSerializer = counting_serializer

update = {update}
text = m.parse_params("session/update", update).to_json()
assert json.loads(text) == update, text
first = dict(calls)
spec = m.METHODS["session/update"]
own = spec.params.__pydantic_core_schema__
first["written"] = written[:]
first["definitions"] = len(own["definitions"]) if own.get("type") == "definitions" else 0
assert json.loads(spec.params.model_validate(update, by_name=False).to_json()) == update
stores = sorted(name for name in sys.modules if "._core_schemas" in name)
print(json.dumps([first, dict(calls), stores]))
"""

_UPDATES = {
    "v1": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
                                         "content": {"type": "text", "text": "hi"}}},
    "v2": {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "messageId": "m1",
                                         "content": {"type": "text", "text": "hi"}}},
}


def _first(version: str, setup: str = "") -> tuple[dict[str, int], dict[str, int], list[str]]:
    code = _FIRST.format(version=version, update=repr(_UPDATES[version]), setup=setup)
    first, then, stores = json.loads(_run(code))
    return first, then, stores


@pytest.mark.parametrize("version", VERSIONS)
def test_the_first_message_generates_no_schema_and_builds_one_validator(version: str) -> None:
    first, then, stores = _first(version)
    written, definitions = first.pop("written"), first.pop("definitions")
    assert first == {"schemas": 0, "validators": 1}   # parse_params' bounded validator, nothing else
    # three serializers (the notification's, and the update's and its content's, written back by their
    # own class), each given only the definitions it reaches: together fewer than the message's schema has
    assert len(written) == 3 and sum(written) < definitions, (written, definitions)
    assert then == {"schemas": 0, "validators": 2}    # model_validate builds the class's own one then
    assert len(stores) == 1 and stores[0].startswith(f"acp_types.{version}.")   # one module of the store


@pytest.mark.parametrize("setup", [
    "pydantic_core.__version__ = '0.0.0'",             # another pydantic-core than the store was made with
    "from acp_types import _build as b\n"
    "for name in [f'acp_types.{v}.{b.STORE_MODULE}_{i}' for v in ('v1', 'v2') for i in range(b.SHARDS)]:\n"
    "    sys.modules[name] = None",
], ids=["other-pydantic-core", "no-store-module"])
def test_without_a_fitting_store_schemas_are_generated_as_before(setup: str) -> None:
    for version in VERSIONS:
        first, then, _ = _first(version, setup)
        assert first["schemas"] > 0   # generated, and the message still reads and writes back the same
