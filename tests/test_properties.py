"""Property-based checks: models and the bundled JSON Schema agree on every method's payloads.

Instances are drawn from the bundled schema (``acp_types/<version>/schema.json``)
by a small strategy written here (no hypothesis-jsonschema): it follows
``$ref``, objects (with unknown ``x-ext-*`` keys added, since every ACP object
is open), arrays, maps, scalars with their bounds, ``const`` / ``enum`` /
``anyOf``, and the bundle's union encoding (``x-acp-union``: tagged branches,
the untagged default branch, unknown tags of open unions, presence unions).

For every method's params and result in both versions:

- a drawn instance is valid for jsonschema, validates through the method
  table, and writes back to the same JSON;
- the instance broken at one required property (the property removed, or
  given a value of a JSON type its schema does not admit) is rejected by both
  the models and jsonschema; so is one whose optional property was given such
  a value (``null`` where the schema does not admit it, for instance);
- a payload whose properties are all tolerant (``_meta`` alone, typically)
  cannot be broken that way: a malformed value of each of its properties is
  dropped instead, and the unknown keys beside it are kept.

Known, documented divergence, excluded from breaking: properties marked
``x-acp-on-error`` / ``x-acp-invalid-items`` (and everything below them) are
laxer in the models (a receiver drops what is malformed) than in the schema
(which describes what a sender writes). Deleting the tag of a branch of a
union with a default branch is not a break either: the documented rule then
picks the default branch, in the models and in the schema alike.
"""

from __future__ import annotations

import copy
import json
import string
from typing import Any

import pytest
from conftest import VERSIONS, api, bundled_schema, examples, validator_for
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

MAX_DEPTH = 4
SETTINGS = settings(
    max_examples=examples(25),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
ANY_JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
EXTRA_KEY = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=5).map(lambda s: f"x-ext-{s}")
UNKNOWN_TAG = st.tuples(
    st.sampled_from(["_", "_vendor/", "future_"]), st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6)
).map("".join)
WRONG_VALUES = {
    "string": "not-the-right-type",
    "integer": 12345,
    "number": 1.5,
    "boolean": True,
    "null": None,
    "array": [],
    "object": {},
}
ALL_TYPES = frozenset(WRONG_VALUES)


class Drawer:
    """Draws instances of one bundled schema, remembering where they may be broken."""

    def __init__(self, schema: dict[str, Any]):
        self.defs = schema["$defs"]

    def deref(self, node: dict[str, Any]) -> dict[str, Any]:
        seen = 0
        while "$ref" in node:
            node = self.defs[node["$ref"].rsplit("/", 1)[-1]]
            seen += 1
            assert seen < 50, "reference cycle"
        return node

    # -- drawing -----------------------------------------------------------

    def value(
        self,
        draw: Any,
        node: dict[str, Any],
        depth: int,
        path: tuple,
        breakable: bool,
        breaks: list,
        keep_tag: str | None = None,
        outer_tags: tuple = (),
    ) -> Any:
        node = self.deref(node)
        if "x-acp-union" in node:
            return self.union(draw, node, depth, path, breakable, breaks, outer_tags)
        if "const" in node:
            return node["const"]
        if "enum" in node:
            return draw(st.sampled_from(node["enum"]))
        if "anyOf" in node and "properties" not in node:
            branch = draw(st.sampled_from(node["anyOf"]))
            return self.value(draw, branch, depth, path, breakable, breaks)
        types = node.get("type")
        if types is None:
            return draw(ANY_JSON)
        kind = draw(st.sampled_from(types)) if isinstance(types, list) else types
        if kind == "object":
            if "properties" in node:
                return self.object(draw, node, depth, path, breakable, breaks, keep_tag)
            extra = node.get("additionalProperties", True)
            if extra is True or extra == {}:
                return draw(st.dictionaries(st.text(max_size=5), ANY_JSON, max_size=3))
            keys = draw(st.lists(st.text(max_size=6), max_size=0 if depth >= MAX_DEPTH else 2, unique=True))
            return {k: self.value(draw, extra, depth + 1, path + (k,), breakable, breaks) for k in keys}
        if kind == "array" and node.get("x-acp-same-kind"):
            # every item of one branch (the compiled allOf lists one array form per branch)
            node = {**node, "items": draw(st.sampled_from(node["allOf"][0]["anyOf"]))["items"]}
        if kind == "array":
            low = node.get("minItems", 0)
            high = node.get("maxItems", low + (0 if depth >= MAX_DEPTH else 2))
            n = draw(st.integers(min_value=low, max_value=max(low, high)))
            return [self.value(draw, node["items"], depth + 1, path + (i,), breakable, breaks) for i in range(n)]
        if kind == "string":
            if "pattern" in node:
                return draw(st.from_regex(node["pattern"].strip("^$"), fullmatch=True))
            low = node.get("minLength", 0)
            return draw(st.text(min_size=low, max_size=node.get("maxLength", low + 8)))
        if kind == "integer":
            return draw(st.integers(min_value=node.get("minimum", -(2**40)), max_value=node.get("maximum", 2**40)))
        if kind == "number":
            low, high = node.get("minimum"), node.get("maximum")
            return draw(
                st.integers(
                    min_value=int(low) if low is not None else -(2**40),
                    max_value=int(high) if high is not None else 2**40,
                )
                | st.floats(min_value=low, max_value=high, allow_nan=False, allow_infinity=False)
            )
        if kind == "boolean":
            return draw(st.booleans())
        if kind == "null":
            return None
        raise AssertionError(f"the strategy does not know {node!r}")

    def object(
        self,
        draw: Any,
        node: dict[str, Any],
        depth: int,
        path: tuple,
        breakable: bool,
        breaks: list,
        keep_tag: str | None,
    ) -> dict[str, Any]:
        required = set(node.get("required", ()))
        one_of = [b["required"][0] for b in node.get("anyOf", ()) if set(b) == {"required"}]
        if one_of:  # x-acp-required-one-of: at least one of these is present
            required.add(draw(st.sampled_from(one_of)))
        out: dict[str, Any] = {}
        for name, prop in node["properties"].items():
            if name not in required and (depth >= MAX_DEPTH or not draw(st.booleans())):
                continue
            tolerant = "x-acp-on-error" in prop or "x-acp-invalid-items" in prop
            out[name] = self.value(draw, prop, depth + 1, path + (name,), breakable and not tolerant, breaks)
            if breakable and not tolerant and name != keep_tag and name not in one_of:
                breaks.append((path, name, prop, name in required))
            elif breakable and prop.get("x-acp-on-error") == "default":
                # malformed reads as the default, but a missing required array is still an error
                breaks.append((path, name, {"type": list(ALL_TYPES)}, True))
        for key in draw(st.lists(EXTRA_KEY, max_size=2, unique=True)):
            if key not in out:
                out[key] = draw(ANY_JSON)
        return out

    def union(
        self,
        draw: Any,
        node: dict[str, Any],
        depth: int,
        path: tuple,
        breakable: bool,
        breaks: list,
        outer_tags: tuple = (),
    ) -> Any:
        """A value of a union; ``outer_tags`` are the (tag, value) pairs of the unions this one is a branch of.

        A branch that is itself a union (v2's ``state_update``, discriminated
        again by ``state``) still carries the outer tag, also when the inner
        tag is an unknown one.
        """
        spec = node["x-acp-union"]
        if "presence" in spec:
            branch = draw(st.sampled_from(sorted(set(spec["presence"].values()))))
            return self.value(draw, {"$ref": f"#/$defs/{branch}"}, depth, path, breakable, breaks)
        tag = spec["tag"]
        branches = [
            (c["if"]["properties"][tag]["const"], c["then"]["$ref"])
            for c in node["allOf"]
            if "properties" in c.get("if", {})
        ]
        known = {t for t, _ in branches}
        options = list(range(len(branches))) + ([-1] if node.get("x-acp-open") else [])
        pick = draw(st.sampled_from(options))
        if pick == -1:
            unknown = dict(outer_tags)
            unknown[tag] = draw(UNKNOWN_TAG.filter(lambda t: t not in known))
            for key in spec.get("unknownRequired", ()):
                unknown[key] = draw(ANY_JSON)
            for key in draw(st.lists(EXTRA_KEY, max_size=3, unique=True)):
                unknown[key] = draw(ANY_JSON)
            return unknown
        keep = tag if "default" in spec else None
        return self.value(
            draw,
            {"$ref": branches[pick][1]},
            depth,
            path,
            breakable,
            breaks,
            keep_tag=keep,
            outer_tags=(*outer_tags, (tag, branches[pick][0])),
        )

    # -- breaking ----------------------------------------------------------

    def can_break(self, node: dict[str, Any], seen: frozenset[str] = frozenset()) -> bool:
        """Whether instances of ``node`` may hold a property that can be broken."""
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            if name in seen:
                return False
            return self.can_break(self.defs[name], seen | {name})
        if "x-acp-union" in node:
            if "presence" in node["x-acp-union"]:
                return True
            return any(self.can_break(c["then"], seen) for c in node["allOf"]) or "default" not in node["x-acp-union"]
        subs = list(node.get("anyOf", ()))
        if "items" in node:
            subs.append(node["items"])
        if isinstance(node.get("additionalProperties"), dict):
            subs.append(node["additionalProperties"])
        for prop in node.get("properties", {}).values():
            if not ("x-acp-on-error" in prop or "x-acp-invalid-items" in prop):
                subs.append(prop)
        own = [
            p for p in node.get("properties", {}).values() if not ("x-acp-on-error" in p or "x-acp-invalid-items" in p)
        ]
        return bool(node.get("required")) or bool(own) or any(self.can_break(sub, seen) for sub in subs)

    def admitted(self, node: dict[str, Any]) -> frozenset[str]:
        """The JSON types a property schema admits."""
        node = self.deref(node)
        if "x-acp-union" in node:
            return frozenset({"object"})
        if "const" in node:
            return frozenset({_json_type(node["const"])})
        if "enum" in node:
            return frozenset(_json_type(v) for v in node["enum"])
        if "anyOf" in node:
            return frozenset().union(*(self.admitted(b) for b in node["anyOf"]))
        types = node.get("type")
        if types is None:
            return ALL_TYPES
        out = set(types if isinstance(types, list) else [types])
        if "number" in out:
            out.add("integer")
        return frozenset(out)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


_DRAWERS: dict[str, Drawer] = {}


def drawer(version: str) -> Drawer:
    if version not in _DRAWERS:
        _DRAWERS[version] = Drawer(bundled_schema(version))
    return _DRAWERS[version]


@st.composite
def instances(draw: Any, version: str, definition: str) -> tuple[Any, list]:
    """A valid instance of ``definition`` and the places where it may be broken."""
    breaks: list = []
    value = drawer(version).value(draw, {"$ref": f"#/$defs/{definition}"}, 0, (), True, breaks)
    return value, breaks


@st.composite
def broken_instances(draw: Any, version: str, definition: str) -> tuple[Any, str]:
    """An instance broken at one property, and a description of the break.

    A required property is removed or given a value of a JSON type its schema
    does not admit; an optional one (when drawn) is given such a value (for
    example ``null`` where the schema does not admit it).
    """
    value, breaks = draw(instances(version, definition).filter(lambda vb: bool(vb[1])))
    path, key, prop, required = draw(st.sampled_from(breaks))
    wrong = sorted(ALL_TYPES - drawer(version).admitted(prop))
    if not (wrong or required):
        assume(False)
    mode = draw(st.sampled_from(["delete", *wrong] if required else wrong))
    broken = copy.deepcopy(value)
    target = broken
    for step in path:
        target = target[step]
    if mode == "delete":
        del target[key]
    else:
        target[key] = copy.deepcopy(WRONG_VALUES[mode])
    return broken, f"{'/'.join(map(str, path + (key,)))}: {mode}"


def payload_cases() -> list[Any]:
    cases = []
    for version in VERSIONS:
        methods = bundled_schema(version)["x-acp-methods"]
        for name, row in methods.items():
            for which in ("params", "result"):
                if row[which] is not None:
                    cases.append(pytest.param(version, name, which, row[which], id=f"{version}:{name}:{which}"))
    return cases


CASES = payload_cases()


def _breakable(case: Any) -> bool:
    version, _, _, definition = case.values
    return drawer(version).can_break({"$ref": f"#/$defs/{definition}"})


def _any_value(case: Any) -> bool:
    version, _, _, definition = case.values
    node = drawer(version).deref({"$ref": f"#/$defs/{definition}"})
    return not set(node) - {"description", "title", "x-acp-stability"}


# Payloads with a property outside tolerant fields can be broken; the others
# (every property tolerant, none required: `_meta` alone, typically) accept any
# object by design and get their own property below. A payload that may be any
# JSON value (mcp/message's result) cannot be broken at all.
BREAKABLE = [case for case in CASES if _breakable(case)]
TOLERANT_ONLY = [case for case in CASES if not _breakable(case) and not _any_value(case)]
ANY_VALUE = [case for case in CASES if _any_value(case)]


def model_accepts(version: str, method: str, which: str, value: Any) -> tuple[bool, Any]:
    spec = api(version).METHODS[method]
    try:
        parsed = spec.validate_params(value) if which == "params" else spec.validate_result(value)
    except ValidationError:
        return False, None
    return True, parsed


def schema_accepts(version: str, definition: str, value: Any) -> bool:
    return validator_for(version, definition).is_valid(value)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def test_every_method_payload_is_covered() -> None:
    for version in VERSIONS:
        methods = api(version).METHODS
        covered = {c.values[1] for c in CASES if c.values[0] == version}
        assert covered == set(methods)


@pytest.mark.parametrize("version, method, which, definition", CASES)
def test_drawn_instances_validate_and_round_trip(version: str, method: str, which: str, definition: str) -> None:
    @SETTINGS
    @given(instances(version, definition))
    def check(drawn: tuple[Any, list]) -> None:
        value, _ = drawn
        snapshot = canonical(value)
        assert schema_accepts(version, definition, value), "the strategy drew an instance jsonschema rejects"
        ok, parsed = model_accepts(version, method, which, value)
        assert ok, f"the models reject a valid {definition}: {snapshot}"
        assert canonical(value) == snapshot, "validation changed its input"
        if not isinstance(parsed, BaseModel):  # a payload type that is not a model (mcp/message's result)
            assert canonical(parsed) == snapshot
            return
        assert canonical(parsed.to_wire()) == snapshot
        assert json.loads(parsed.to_json()) == json.loads(snapshot)

    check()


@pytest.mark.parametrize("version, method, which, definition", BREAKABLE)
def test_broken_instances_are_rejected_by_both(version: str, method: str, which: str, definition: str) -> None:
    @SETTINGS
    @given(broken_instances(version, definition))
    def check(drawn: tuple[Any, str]) -> None:
        value, how = drawn
        by_schema = schema_accepts(version, definition, value)
        by_models, _ = model_accepts(version, method, which, value)
        assert by_models == by_schema, f"models say {by_models}, jsonschema says {by_schema} ({how})"
        assert not by_schema, f"breaking {how} left a valid {definition}"

    check()


def _tolerant_properties(version: str, definition: str) -> dict[str, Any]:
    node = drawer(version).deref({"$ref": f"#/$defs/{definition}"})
    return dict(node.get("properties", {}))


def test_only_all_tolerant_payloads_are_left_unbroken() -> None:
    """The breaking property is waived only where no property could break."""
    assert BREAKABLE, "no payload can be broken: the strategy lost its way"
    assert not {c.values[3] for c in ANY_VALUE} - {"MessageMcpResponse", "ProxySuccessorResponse"}, (
        "a new any-JSON payload: is that meant?"
    )
    for case in ANY_VALUE:
        version, method, which, _ = case.values
        for value in (None, 5, "x", [1], {"a": {"b": []}}):
            assert model_accepts(version, method, which, value) == (True, value)
    for case in TOLERANT_ONLY:
        version, _, _, definition = case.values
        node = drawer(version).deref({"$ref": f"#/$defs/{definition}"})
        assert "x-acp-union" not in node and not node.get("required"), definition
        properties = node.get("properties", {})
        assert properties, f"{definition} has no property at all"
        for name, prop in properties.items():
            assert "x-acp-on-error" in prop or "x-acp-invalid-items" in prop, f"{definition}.{name}"


@pytest.mark.parametrize("version, method, which, definition", TOLERANT_ONLY)
def test_tolerant_only_payloads_drop_malformed_values(version: str, method: str, which: str, definition: str) -> None:
    """Every property of these payloads is tolerant: a value of a JSON type the
    schema does not admit is dropped (not kept, not written back), and the
    unknown keys beside it survive."""
    properties = _tolerant_properties(version, definition)
    for name, prop in properties.items():
        for wrong in sorted(ALL_TYPES - drawer(version).admitted(prop)):
            value = {name: copy.deepcopy(WRONG_VALUES[wrong]), "x-ext-kept": [1, {"a": None}]}
            ok, parsed = model_accepts(version, method, which, value)
            assert ok, f"{definition}.{name} = {wrong} was rejected"
            assert parsed.to_wire() == {"x-ext-kept": [1, {"a": None}]}, f"{definition}.{name} = {wrong}"
            assert name not in json.loads(parsed.to_json()), f"{definition}.{name} = {wrong}"
