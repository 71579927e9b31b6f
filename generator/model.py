"""The typed intermediate model of one protocol version, and the checks that build it.

Renderers and the diff read this model, never raw JSON. Everything here is
immutable and ordered, so two builds of the same input compare equal.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from generator.errors import Problem, SchemaError, pointer
from generator.loader import LoadedVersion
from generator.naming import KEYWORDS, constant_name, field_name, method_name

REF_PREFIX = "#/$defs/"
_SCALARS = ("string", "integer", "number", "boolean")
_CONSTRAINTS = (
    "format",
    "pattern",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
)


@dataclass(frozen=True)
class TypeExpr:
    """The type of a property, an array item or an alias.

    kind: ``ref`` (name), ``scalar`` (name is the JSON type), ``const`` (value),
    ``array`` (items), ``map`` (items is the value type, or None for any),
    ``any``, ``null``.
    """

    kind: str
    name: str | None = None
    items: TypeExpr | None = None
    nullable: bool = False
    const: Any = None
    constraints: tuple[tuple[str, Any], ...] = ()

    def render(self) -> str:
        if self.kind == "ref":
            text = self.name or ""
        elif self.kind == "scalar":
            text = self.name or ""
        elif self.kind == "const":
            text = json.dumps(self.const)
        elif self.kind == "array":
            inner = self.items.render() if self.items else "any"
            text = f"({inner})[]" if " " in inner else f"{inner}[]"
        elif self.kind == "map":
            text = f"map<{self.items.render() if self.items else 'any'}>"
        elif self.kind == "null":
            return "null"
        else:
            text = "any"
        return f"{text} | null" if self.nullable else text

    def refs(self) -> list[str]:
        out = []
        if self.kind == "ref" and self.name:
            out.append(self.name)
        if self.items is not None:
            out.extend(self.items.refs())
        return out


@dataclass(frozen=True)
class Field:
    wire_name: str
    py_name: str
    type: TypeExpr
    required: bool
    description: str
    on_error_omit: bool = False
    skip_invalid_items: bool = False
    patch: bool = False
    default: Any = None
    has_default: bool = False
    stability: str = "stable"

    @property
    def unstable(self) -> bool:
        return self.stability == "unstable"

    # x-acp-on-error: "default" (a required array): a malformed value reads as the default (`[]`)
    on_error_default: bool = False

    @property
    def tolerant(self) -> bool:
        return self.on_error_omit or self.skip_invalid_items or self.on_error_default


@dataclass(frozen=True)
class ObjectType:
    name: str
    description: str
    fields: tuple[Field, ...]
    kind: str = "object"
    stability: str = "stable"
    # x-acp-required-one-of: at least one of these wire properties must be present
    required_one_of: tuple[str, ...] = ()

    def field(self, wire_name: str) -> Field | None:
        for f in self.fields:
            if f.wire_name == wire_name:
                return f
        return None


@dataclass(frozen=True)
class Variant:
    name: str
    tag: str | None


@dataclass(frozen=True)
class UnionType:
    name: str
    description: str
    variants: tuple[Variant, ...]
    tag: str | None
    presence: tuple[tuple[str, str], ...] | None
    default: str | None
    open: bool
    kind: str = "union"
    stability: str = "stable"
    # x-acp-union "unknown": "default": an unknown tag value reads as the default branch (v1)
    unknown_default: bool = False
    # x-acp-union "unknownRequired": the wire properties an unknown variant of an open union must carry
    unknown_required: tuple[str, ...] = ()
    # an unknown variant must carry at least one of these: read from a published reference only (our format
    # has no marker for it yet), so the comparison can tell
    unknown_required_one_of: tuple[str, ...] = ()
    # x-acp-union "overlap": "first": with several presence keys, the first listed branch is chosen
    overlap_first: bool = False


@dataclass(frozen=True)
class EnumType:
    name: str
    description: str
    values: tuple[str, ...]
    value_descriptions: tuple[tuple[str, str], ...]
    open: bool
    kind: str = "enum"
    stability: str = "stable"


@dataclass(frozen=True)
class AliasType:
    name: str
    description: str
    type: TypeExpr
    kind: str = "alias"
    stability: str = "stable"
    # x-acp-same-kind on an array of a union: every item is of the same branch
    same_kind: bool = False


TypeDef = ObjectType | UnionType | EnumType | AliasType


@dataclass(frozen=True)
class Method:
    name: str
    side: str
    kind: str
    params: str
    result: str | None
    capability: tuple[str, ...] | None
    errors: tuple[int, ...]
    stability: str
    description: str
    notification_params: str | None = None  # a request that may also be sent as a notification, with these params

    @property
    def advertiser(self) -> str | None:
        """Whose initialize message carries the gating capability."""
        return None if self.side in ("protocol", "proxy") else self.side


@dataclass(frozen=True)
class Feature:
    name: str
    side: str
    capability: tuple[str, ...]
    description: str
    stability: str = "stable"


@dataclass(frozen=True)
class ErrorCode:
    code: int
    name: str
    description: str


@dataclass(frozen=True)
class Protocol:
    """One protocol version, ready to render or compare."""

    version: str
    protocol_version: int
    status: str
    batches: bool
    description: str
    source: str
    digest: str
    init_request: str
    init_response: str
    errors: tuple[ErrorCode, ...]
    methods: tuple[Method, ...]
    features: tuple[Feature, ...]
    types: tuple[TypeDef, ...]
    bundle: dict[str, Any] = field(compare=False, hash=False, repr=False)
    stable_bundle: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    def type(self, name: str) -> TypeDef:
        return self._types[name]

    @property
    def _types(self) -> dict[str, TypeDef]:
        cache = self.__dict__.get("_type_cache")
        if cache is None:
            cache = {t.name: t for t in self.types}
            object.__setattr__(self, "_type_cache", cache)
        return cache

    def has_type(self, name: str) -> bool:
        return name in self._types

    def stable_methods(self) -> tuple[Method, ...]:
        """The methods of the stable protocol (``stable`` stability), without unstable, draft or proposal ones."""
        return tuple(m for m in self.methods if m.stability == "stable")

    def method(self, name: str) -> Method | None:
        for m in self.methods:
            if m.name == name:
                return m
        return None

    def capability_root(self, side: str) -> str:
        return self.init_response if side == "agent" else self.init_request

    def resolve_path(self, side: str, path: tuple[str, ...]) -> list[Field]:
        """The fields a capability path walks through; raises KeyError at the first miss."""
        current: str | None = self.capability_root(side)
        walked = []
        for i, segment in enumerate(path):
            obj = self._object_behind(current)
            f = obj.field(segment) if obj else None
            if f is None:
                raise KeyError(".".join(path[: i + 1]))
            walked.append(f)
            current = f.type.name if f.type.kind == "ref" else None
        return walked

    def _object_behind(self, name: str | None) -> ObjectType | None:
        seen = set()
        while name is not None and name not in seen:
            seen.add(name)
            t = self._types.get(name)
            if isinstance(t, ObjectType):
                return t
            if isinstance(t, AliasType) and t.type.kind == "ref":
                name = t.type.name
                continue
            return None
        return None


# ---------------------------------------------------------------- building


class _Builder:
    def __init__(self, loaded: LoadedVersion):
        self.loaded = loaded
        self.problems: list[Problem] = []

    def problem(self, def_name: str | None, ptr: str, message: str, hint: str) -> None:
        file = self.loaded.file_of(def_name) if def_name else f"{self.loaded.label}/protocol.json"
        self.problems.append(Problem(file, ptr, message, hint))

    # -- types

    def type_expr(self, schema: dict[str, Any], def_name: str, ptr: str) -> TypeExpr:
        if "anyOf" in schema:
            branches = schema["anyOf"]
            other = [b for b in branches if b.get("type") != "null"]
            if len(other) != 1:
                self.problem(
                    def_name,
                    ptr + "/anyOf",
                    "anyOf may only make one schema nullable",
                    'write {"anyOf": [<schema>, {"type": "null"}]}',
                )
                return TypeExpr("any")
            inner = self.type_expr(other[0], def_name, ptr + "/anyOf/" + str(branches.index(other[0])))
            return TypeExpr(inner.kind, inner.name, inner.items, True, inner.const, inner.constraints)
        constraints = tuple((k, schema[k]) for k in _CONSTRAINTS if k in schema)
        if "pattern" in schema:
            why = pattern_problem(schema["pattern"])
            if why:
                self.problem(
                    def_name,
                    ptr + "/pattern",
                    f"the pattern cannot be used: {why}",
                    "write a pattern both regex engines accept (no lookaround, no backreferences; "
                    "see docs/SCHEMA_FORMAT.md)",
                )
        if "$ref" in schema:
            target = schema["$ref"][len(REF_PREFIX) :]
            if target not in self.loaded.definitions:
                self.problem(
                    def_name,
                    ptr + "/$ref",
                    f"$ref points to {target!r}, which is not defined in {self.loaded.label}",
                    f"define {target} in one of the area files, or correct the name",
                )
            return TypeExpr("ref", target)
        types = schema.get("type")
        type_list = [types] if isinstance(types, str) else list(types or [])
        nullable = "null" in type_list
        rest = [t for t in type_list if t != "null"]
        if "const" in schema:
            self.check_const(schema["const"], rest, def_name, ptr + "/const")
            return TypeExpr("const", rest[0] if rest else None, nullable=nullable, const=schema["const"])
        if len(rest) > 1:
            if not set(rest) <= set(_SCALARS) | {"array"}:
                self.problem(
                    def_name,
                    ptr + "/type",
                    f"several non-null types {rest} including an object",
                    "use scalar types only; for a union of objects give each branch a named definition",
                )
                return TypeExpr("any", nullable=nullable)
            items = self.type_expr(schema["items"], def_name, ptr + "/items") if "items" in schema else None
            return TypeExpr("scalar", " | ".join(rest), items=items, nullable=nullable, constraints=constraints)
        if not rest:
            if nullable:
                return TypeExpr("null")
            return TypeExpr("any", nullable=nullable)
        t = rest[0]
        if t in _SCALARS:
            return TypeExpr("scalar", t, nullable=nullable, constraints=constraints)
        if t == "array":
            if "items" not in schema:
                self.problem(def_name, ptr, "an array needs `items`", "add an items schema")
                return TypeExpr("array", items=TypeExpr("any"), nullable=nullable, constraints=constraints)
            return TypeExpr(
                "array",
                items=self.type_expr(schema["items"], def_name, ptr + "/items"),
                nullable=nullable,
                constraints=constraints,
            )
        if t == "object":
            extra = schema.get("additionalProperties", True)
            items = None if extra is True else self.type_expr(extra, def_name, ptr + "/additionalProperties")
            return TypeExpr("map", items=items, nullable=nullable)
        return TypeExpr("any", nullable=nullable)

    def check_const(self, value: Any, types: list[str], def_name: str, ptr: str) -> None:
        """A const becomes a ``Literal``: a string, an integer or a boolean, of the declared type."""
        if isinstance(value, bool):
            kind = "boolean"
        elif isinstance(value, int):
            kind = "integer"
        elif isinstance(value, str):
            kind = "string"
        else:
            shown = (
                "null"
                if value is None
                else type(value)
                .__name__.replace("dict", "object")
                .replace("list", "array")
                .replace("float", "non-integer number")
            )
            self.problem(
                def_name,
                ptr,
                f"a const must be a string, an integer or a boolean, not {shown}",
                'use one of those (for null use {"type": "null"}; for a fixed object, '
                "give each property its own const)",
            )
            return
        allowed = {"integer": {"integer", "number"}}.get(kind, {kind})
        if types and not allowed & set(types):
            self.problem(
                def_name,
                ptr,
                f"the const is a {kind} but the type says {' or '.join(types)}",
                "make the const and the type agree",
            )

    def build_type(self, name: str, schema: dict[str, Any]) -> TypeDef | None:
        t = self._build_type(name, schema)
        stability = schema.get("x-acp-stability", "stable")
        return replace(t, stability=stability) if t is not None and stability != "stable" else t

    def _build_type(self, name: str, schema: dict[str, Any]) -> TypeDef | None:
        ptr = pointer("$defs", name)
        desc = schema.get("description", "")
        if "oneOf" in schema:
            return self.build_union(name, schema, ptr)
        if "enum" in schema:
            return EnumType(
                name,
                desc,
                tuple(schema["enum"]),
                tuple(sorted(schema.get("x-acp-enum-descriptions", {}).items())),
                bool(schema.get("x-acp-open")),
            )
        if "x-acp-open" in schema:
            self.problem(
                name,
                ptr + "/x-acp-open",
                "x-acp-open is only allowed on unions and enums",
                "remove it, or make the definition a union or an enum",
            )
        if "properties" in schema:
            return self.build_object(name, schema, ptr)
        texpr = self.type_expr(schema, name, ptr)
        same_kind = bool(schema.get("x-acp-same-kind"))
        if same_kind and not (
            texpr.kind == "array"
            and texpr.items is not None
            and texpr.items.kind == "ref"
            and isinstance(self.loaded.definitions.get(texpr.items.name or ""), dict)
            and "oneOf" in self.loaded.definitions[texpr.items.name or ""]
        ):
            self.problem(
                name,
                ptr + "/x-acp-same-kind",
                "x-acp-same-kind applies to an array of a union",
                "make the alias an array whose items are a union definition, or remove the marker",
            )
        return AliasType(name, desc, texpr, same_kind=same_kind)

    def build_object(self, name: str, schema: dict[str, Any], ptr: str) -> ObjectType:
        required = schema.get("required", [])
        props = schema["properties"]
        for r in required:
            if r not in props:
                self.problem(
                    name,
                    ptr + "/required",
                    f"{r!r} is required but not among the properties",
                    f"add a property {r!r} or drop it from required",
                )
        fields = []
        py_names: dict[str, str] = {}
        for wire, prop in props.items():
            fptr = ptr + pointer("properties", wire)
            texpr = self.type_expr(prop, name, fptr)
            py = field_name(wire)
            if py in py_names:
                self.problem(
                    name,
                    fptr,
                    f"{wire!r} and {py_names[py]!r} both become the Python attribute {py!r}",
                    "rename one of the two properties",
                )
            py_names[py] = wire
            patch = bool(prop.get("x-acp-patch"))
            if prop.get("x-acp-same-kind"):
                self.problem(
                    name,
                    fptr + "/x-acp-same-kind",
                    "x-acp-same-kind belongs on an alias definition",
                    "define the array as a named alias with the marker and refer to it",
                )
            if patch and not texpr.nullable:
                self.problem(
                    name,
                    fptr + "/x-acp-patch",
                    "a patch field must admit null (null clears the value)",
                    'make the type nullable, e.g. "type": ["string", "null"]',
                )
            if patch and wire in required:
                self.problem(
                    name,
                    fptr + "/x-acp-patch",
                    "a patch field cannot be required (omitted means unchanged)",
                    "drop it from required",
                )
            skip = prop.get("x-acp-invalid-items") == "skip"
            if skip and texpr.kind != "array":
                self.problem(
                    name,
                    fptr + "/x-acp-invalid-items",
                    "x-acp-invalid-items applies to arrays only",
                    "remove the marker or make the property an array",
                )
            omit = prop.get("x-acp-on-error") == "omit"
            on_error_default = prop.get("x-acp-on-error") == "default"
            if on_error_default and (texpr.kind != "array" or texpr.nullable or wire not in required):
                self.problem(
                    name,
                    fptr + "/x-acp-on-error",
                    '"x-acp-on-error": "default" applies to required, non-nullable arrays only '
                    "(a malformed value reads as the empty array)",
                    'use "omit" on an optional property, or make the property a required array',
                )
            if omit and wire in required:
                self.problem(
                    name,
                    fptr + "/x-acp-on-error",
                    "a required property cannot be omitted on error (a malformed value is treated as omitted)",
                    "drop it from required or remove the marker",
                )
            fields.append(
                Field(
                    wire,
                    py,
                    texpr,
                    wire in required,
                    prop.get("description", ""),
                    omit,
                    skip,
                    patch,
                    prop.get("default"),
                    "default" in prop,
                    prop.get("x-acp-stability", "stable"),
                    on_error_default=on_error_default,
                )
            )
        used: set[str] = set()
        for f in fields:
            used |= builtins_of(f.type)
            if isinstance(f.default, (list, dict)):
                used.add(type(f.default).__name__)
        for f in fields:
            if f.py_name in used:
                self.problem(
                    name,
                    ptr + pointer("properties", f.wire_name),
                    f"the attribute {f.py_name!r} would hide the builtin {f.py_name!r}, which the "
                    f"annotations of {name} use",
                    "rename the property, or give the values that need the builtin a named definition",
                )
        one_of = tuple(schema.get("x-acp-required-one-of", ()))
        for key in one_of:
            if key not in props or key in required:
                self.problem(
                    name,
                    ptr + "/x-acp-required-one-of",
                    f"{key!r} must be an optional property",
                    "list optional properties of this object, at least one of which must be present",
                )
        return ObjectType(name, schema.get("description", ""), tuple(fields), required_one_of=one_of)

    def build_union(self, name: str, schema: dict[str, Any], ptr: str) -> UnionType:
        spec = schema["x-acp-union"]
        branches = []
        for i, b in enumerate(schema["oneOf"]):
            branches.append((i, b["$ref"][len(REF_PREFIX) :]))
        tag = spec.get("tag")
        default = spec.get("default")
        presence = spec.get("presence")
        variants: list[Variant] = []
        seen_tags: dict[str, str] = {}
        names = [b for _, b in branches]
        if len(set(names)) != len(names):
            self.problem(name, ptr + "/oneOf", "the same branch is listed twice", "list each branch once")
        for i, branch in branches:
            bptr = ptr + f"/oneOf/{i}/$ref"
            target = self.loaded.definitions.get(branch)
            if target is None:
                self.problem(
                    name,
                    bptr,
                    f"$ref points to {branch!r}, which is not defined in {self.loaded.label}",
                    f"define {branch} or correct the name",
                )
                continue
            if "oneOf" in target and tag is not None:
                reported = len(self.problems)
                inner = self._inner_tag(branch, target, tag)
                if inner is None and len(self.problems) == reported:
                    self.problem(
                        name,
                        bptr,
                        f"branch {branch!r} is a union whose branches do not all declare "
                        f"the same const for the tag {tag!r}",
                        f"give every branch of {branch} the same {tag!r} const",
                    )
                if inner is None:
                    continue
                if inner in seen_tags:
                    self.problem(
                        name,
                        bptr,
                        f"tag value {inner!r} is used by both {seen_tags[inner]!r} and {branch!r}",
                        "give each branch its own tag value",
                    )
                seen_tags[inner] = branch
                variants.append(Variant(branch, inner))
                continue
            if "properties" not in target:
                self.problem(
                    name,
                    bptr,
                    f"branch {branch!r} is not an object definition",
                    "every union branch must be a named object definition (or a union tagged by another property)",
                )
                continue
            if tag is not None:
                tprop = target["properties"].get(tag)
                if tprop is None or "const" not in tprop:
                    if branch == default:
                        variants.append(Variant(branch, None))
                        continue
                    self.problem(
                        branch,
                        pointer("$defs", branch, "properties"),
                        f"branch of union {name!r} does not declare its tag {tag!r} as a const",
                        f'add "{tag}": {{"type": "string", "const": "<value>"}} and list {tag!r} in required',
                    )
                    continue
                value = tprop["const"]
                if not isinstance(value, str):
                    self.problem(
                        branch,
                        pointer("$defs", branch, "properties", tag, "const"),
                        "a union tag must be a string",
                        "use a string const",
                    )
                    continue
                if value.startswith(SENTINEL_PREFIX):
                    self.problem(
                        branch,
                        pointer("$defs", branch, "properties", tag, "const"),
                        f"the tag value {value!r} is reserved: the runtime's sentinel tags "
                        f"({', '.join(SENTINEL_TAGS)}) start with {SENTINEL_PREFIX!r}",
                        f"use a tag value that does not start with {SENTINEL_PREFIX!r}",
                    )
                    continue
                if tag not in target.get("required", []) and branch != default:
                    self.problem(
                        branch,
                        pointer("$defs", branch, "required"),
                        f"the tag {tag!r} must be required in branch {branch!r}",
                        f"add {tag!r} to required",
                    )
                if value in seen_tags:
                    self.problem(
                        name,
                        bptr,
                        f"tag value {value!r} is used by both {seen_tags[value]!r} and {branch!r}",
                        "give each branch its own tag value",
                    )
                seen_tags[value] = branch
                variants.append(Variant(branch, value))
            else:
                variants.append(Variant(branch, None))
        if default is not None and default not in names:
            self.problem(
                name,
                ptr + "/x-acp-union/default",
                f"default branch {default!r} is not one of the branches",
                "name one of the oneOf branches",
            )
        unknown_default = spec.get("unknown") == "default"
        if unknown_default and (default is None or schema.get("x-acp-open")):
            self.problem(
                name,
                ptr + "/x-acp-union/unknown",
                '"unknown": "default" needs a default branch and a closed union',
                "name a default branch, or drop x-acp-open (an open union keeps unknown tags as they are)",
            )
        if unknown_default and default is not None:
            dprop = self.loaded.definitions.get(default, {}).get("properties", {}).get(tag or "")
            if dprop is not None and "const" in dprop:
                self.problem(
                    default,
                    pointer("$defs", default, "properties", tag or "", "const"),
                    f"the default branch reads unknown {tag!r} values, so its tag cannot be a const",
                    f'declare {tag!r} as {{"type": "string"}} in {default}',
                )
        unknown_required = tuple(spec.get("unknownRequired", ()))
        if unknown_required and not schema.get("x-acp-open"):
            self.problem(
                name,
                ptr + "/x-acp-union/unknownRequired",
                "unknownRequired applies to open unions only",
                "add x-acp-open or drop unknownRequired",
            )
        pres: tuple[tuple[str, str], ...] | None = None
        if presence is not None:
            pres = tuple(presence.items())
            for key, branch in pres:
                if branch not in names:
                    self.problem(
                        name,
                        ptr + pointer("x-acp-union", "presence", key),
                        f"{branch!r} is not one of the branches",
                        "name one of the oneOf branches",
                    )
                else:
                    target = self.loaded.definitions.get(branch, {})
                    if key not in target.get("required", []):
                        self.problem(
                            name,
                            ptr + pointer("x-acp-union", "presence", key),
                            f"branch {branch!r} does not require {key!r}",
                            f"make {key!r} a required property of {branch}",
                        )
            missing = set(names) - {b for _, b in pres}
            if missing:
                self.problem(
                    name,
                    ptr + "/x-acp-union/presence",
                    f"branches without a key: {sorted(missing)}",
                    "give every branch a key that only it has",
                )
        return UnionType(
            name,
            schema.get("description", ""),
            tuple(variants),
            tag,
            pres,
            default,
            bool(schema.get("x-acp-open")),
            unknown_default=unknown_default,
            unknown_required=unknown_required,
            overlap_first=spec.get("overlap") == "first",
        )

    def _inner_tag(self, branch: str, target: dict[str, Any], tag: str) -> str | None:
        """The outer tag value shared by every branch of a nested union, or None.

        Each branch's const is checked as a direct branch's is (a string, not a
        sentinel): any other value is reported at its own pointer, and not hashed.
        """
        values: set[str] = set()
        for ref in target["oneOf"]:
            inner_name = ref.get("$ref", "")[len(REF_PREFIX) :]
            inner = self.loaded.definitions.get(inner_name, {})
            prop = inner.get("properties", {}).get(tag, {})
            if "const" not in prop or tag not in inner.get("required", []):
                return None
            value = prop["const"]
            where = pointer("$defs", inner_name, "properties", tag, "const")
            if not isinstance(value, str):
                self.problem(
                    inner_name,
                    where,
                    f"a union tag must be a string (in {inner_name!r}, a branch of {branch!r})",
                    "use a string const",
                )
                return None
            if value.startswith(SENTINEL_PREFIX):
                self.problem(
                    inner_name,
                    where,
                    f"the tag value {value!r} is reserved: the runtime's sentinel tags "
                    f"({', '.join(SENTINEL_TAGS)}) start with {SENTINEL_PREFIX!r}",
                    f"use a tag value that does not start with {SENTINEL_PREFIX!r}",
                )
                return None
            values.add(value)
        return values.pop() if len(values) == 1 else None

    # -- alias cycles

    def check_alias_cycles(self, types: dict[str, TypeDef]) -> None:
        for start in types:
            seen: list[str] = []
            name: str | None = start
            while name is not None:
                t = types.get(name)
                if not isinstance(t, AliasType) or t.type.kind != "ref":
                    break
                if name in seen:
                    if name == start:
                        self.problem(
                            start,
                            pointer("$defs", start, "$ref"),
                            f"alias cycle: {' -> '.join(seen + [name])}",
                            "an alias must end at a real type; break the cycle",
                        )
                    break
                seen.append(name)
                name = t.type.name

    # -- attribute spellings

    def check_spellings(self, types: dict[str, TypeDef]) -> None:
        """No attribute spelling of a property is another property's wire name in the same version.

        The wire entry points read an attribute spelling (``session_id``) as
        an unknown key, and then validate the message again with every key so
        spelled escaped, wherever it occurs (the runtime's slow path): a
        property whose wire name it is would be hidden from its model.
        """
        spelled: dict[str, tuple[str, str]] = {}
        for name in sorted(types):
            t = types[name]
            if isinstance(t, ObjectType):
                for f in t.fields:
                    if f.py_name != f.wire_name:
                        spelled.setdefault(f.py_name, (name, f.wire_name))
        for name in sorted(types):
            t = types[name]
            if not isinstance(t, ObjectType):
                continue
            for f in t.fields:
                if f.wire_name in spelled:
                    owner, wire = spelled[f.wire_name]
                    self.problem(
                        name,
                        pointer("$defs", name, "properties", f.wire_name),
                        f"the wire name {f.wire_name!r} is the Python attribute of {owner}'s {wire!r}: "
                        "read from the wire, a key spelled like an attribute is an unknown key, and the "
                        "runtime escapes it everywhere in the message, which would hide this property",
                        "rename one of them (no wire name of a version may be spelled like "
                        "the snake_case attribute of another property)",
                    )

    # -- the protocol table

    def build_protocol(
        self, types: dict[str, TypeDef], proto: Protocol
    ) -> tuple[tuple[Method, ...], tuple[Feature, ...]]:
        doc = self.loaded.protocol
        errors = {int(code) for code in doc["errors"]}
        for code in doc["errors"]:
            if not INT32[0] <= int(code) <= INT32[1]:
                self.problem(
                    None,
                    pointer("errors", code),
                    f"error code {code} does not fit in 32 bits",
                    f"use a code from {INT32[0]} to {INT32[1]} (JSON-RPC codes are small integers)",
                )
        methods = []
        error_constants = {str(e.get("name", "")).upper() for e in doc["errors"].values() if isinstance(e, dict)}
        constants: dict[str, list[str]] = {}
        for wire in sorted(doc["methods"]):
            constants.setdefault(constant_name(wire), []).append(wire)
        for const, wires in constants.items():
            for wire in wires:
                ptr, py = pointer("methods", wire), method_name(wire)
                if len(wires) > 1:
                    others = ", ".join(repr(w) for w in wires if w != wire)
                    self.problem(
                        None,
                        ptr,
                        f"methods {wire!r} and {others} {'both' if len(wires) == 2 else 'all'} "
                        f"become the constant {const} "
                        f"(and the stub {py})",
                        "rename the methods so that they differ in letters",
                    )
                elif const in RESERVED_METHOD_CONSTANTS or const in error_constants:
                    self.problem(
                        None,
                        ptr,
                        f"method {wire!r} becomes the constant {const}, a name methods.py already uses",
                        "rename the method",
                    )
                elif py in KEYWORDS:
                    self.problem(
                        None,
                        ptr,
                        f"method {wire!r} becomes the stub name {py!r}, which is a Python keyword",
                        f"rename the method (for example session/{py})",
                    )
        for wire, m in doc["methods"].items():
            ptr = pointer("methods", wire)
            if "notificationParams" in m and m["kind"] != "request":
                self.problem(
                    None,
                    ptr + "/notificationParams",
                    "only a request can also be sent as a notification",
                    "drop notificationParams, or make the method a request",
                )
            for part in ("params", "result", "notificationParams"):
                tname = m.get(part)
                if tname is None:
                    continue
                t = types.get(tname)
                if t is None:
                    self.problem(
                        None,
                        ptr + "/" + part,
                        f"{part} type {tname!r} is not defined",
                        f"define {tname} in an area file, or correct the name",
                    )
            for code in m["errors"]:
                if code not in errors:
                    self.problem(
                        None,
                        ptr + "/errors",
                        f"error code {code} is not declared",
                        f'declare "{code}" in the errors table of protocol.json',
                    )
            cap = tuple(m["capability"].split(".")) if m["capability"] else None
            if cap is not None and m["side"] in ("protocol", "proxy"):
                self.problem(
                    None,
                    ptr + "/capability",
                    f"{m['side']}-side methods cannot be gated by a capability",
                    "set capability to null",
                )
                cap = None
            method = Method(
                wire,
                m["side"],
                m["kind"],
                m["params"],
                m["result"],
                cap,
                tuple(m["errors"]),
                m["stability"],
                m["description"],
                m.get("notificationParams"),
            )
            if cap is not None:
                self.check_path(proto, m["side"], cap, ptr + "/capability")
            methods.append(method)
        features = []
        for fname, f in doc["features"].items():
            cap = tuple(f["capability"].split("."))
            self.check_path(proto, f["side"], cap, pointer("features", fname, "capability"))
            features.append(Feature(fname, f["side"], cap, f["description"], f.get("stability", "stable")))
        return tuple(sorted(methods, key=lambda m: m.name)), tuple(sorted(features, key=lambda f: f.name))

    # -- stability

    def check_stability(self, types: dict[str, TypeDef], proto: Protocol) -> None:
        """The stable protocol must stand on its own: nothing stable may need something unstable."""

        def unstable(name: str) -> bool:
            t = types.get(name)
            return t is not None and t.stability == "unstable"

        for t in types.values():
            if t.stability == "unstable":
                continue
            if isinstance(t, ObjectType):
                for f in t.fields:
                    fptr = pointer("$defs", t.name, "properties", f.wire_name)
                    if f.unstable:
                        if f.required:
                            self.problem(
                                t.name,
                                fptr + "/x-acp-stability",
                                "an unstable property of a stable definition cannot be required",
                                "drop it from required, or mark the whole definition unstable",
                            )
                        continue
                    bad = [r for r in f.type.refs() if unstable(r)]
                    if bad:
                        self.problem(
                            t.name,
                            fptr,
                            f"stable property refers to the unstable definition {bad[0]!r}",
                            'mark the property "x-acp-stability": "unstable", or make the target stable',
                        )
            elif isinstance(t, AliasType):
                bad = [r for r in t.type.refs() if unstable(r)]
                if bad:
                    self.problem(
                        t.name,
                        pointer("$defs", t.name),
                        f"stable alias refers to the unstable definition {bad[0]!r}",
                        'mark the alias "x-acp-stability": "unstable", or make the target stable',
                    )
            elif isinstance(t, UnionType):
                if t.variants and all(unstable(v.name) for v in t.variants):
                    self.problem(
                        t.name,
                        pointer("$defs", t.name, "oneOf"),
                        "every branch of this stable union is unstable, so the stable protocol has none",
                        'mark the union "x-acp-stability": "unstable"',
                    )
                if t.default is not None and unstable(t.default):
                    self.problem(
                        t.name,
                        pointer("$defs", t.name, "x-acp-union", "default"),
                        "the default branch of a stable union cannot be unstable",
                        "choose a stable default",
                    )
        for m in proto.methods:
            ptr = pointer("methods", m.name)
            if m.stability == "unstable":
                continue
            for part, tname in (
                ("params", m.params),
                ("result", m.result),
                ("notificationParams", m.notification_params),
            ):
                if tname is not None and unstable(tname):
                    self.problem(
                        None,
                        ptr + "/" + part,
                        f"{m.stability} method uses the unstable type {tname!r}",
                        'set "stability": "unstable" on the method, or make the type stable',
                    )
            self._check_stable_path(proto, m.side, m.capability, ptr + "/capability", m.stability)
        for feat in proto.features:
            if feat.stability != "unstable":
                self._check_stable_path(
                    proto, feat.side, feat.capability, pointer("features", feat.name, "capability"), feat.stability
                )

    def _check_stable_path(self, proto: Protocol, side: str, path: tuple[str, ...] | None, ptr: str, what: str) -> None:
        if not path or side == "protocol":
            return
        try:
            walked = proto.resolve_path(side, path)
        except KeyError:
            return  # reported by check_path
        for f in walked:
            if f.unstable or (
                f.type.kind == "ref"
                and f.type.name
                and proto.has_type(f.type.name)
                and proto.type(f.type.name).stability == "unstable"
            ):
                self.problem(
                    None,
                    ptr,
                    f"a {what} entry is gated by {'.'.join(path)!r}, which passes through the unstable field {f.wire_name!r}",
                    'set "stability": "unstable" on the entry, or make the capability stable',
                )
                return

    def check_path(self, proto: Protocol, side: str, path: tuple[str, ...], ptr: str) -> None:
        root = proto.capability_root(side)
        if not proto.has_type(root):
            return
        try:
            proto.resolve_path(side, path)
        except KeyError as exc:
            where = "initialize response" if side == "agent" else "initialize request"
            self.problem(
                None,
                ptr,
                f"capability path {'.'.join(path)!r} does not exist: no {exc.args[0]!r} in the {where} ({root})",
                "use a dotted path of wire names that exists in the capability types",
            )


def _runtime_names() -> frozenset[str]:
    """The public module-level names of the runtime modules a version package re-exports or its models import."""
    import ast
    from pathlib import Path

    names: set[str] = set()
    for module in ("_runtime", "_jsonrpc", "_errors"):
        tree = ast.parse((Path(__file__).resolve().parent.parent / "runtime" / f"{module}.py").read_text("utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    return frozenset(n for n in names if not n.startswith("_"))


# Definition names become module-level names; these would shadow what the generated
# modules import or export (models.py and the version package, whose other names
# tests/test_generator_inputs.py compares with this list), or are not valid class names at all:
# the runtime's own names, read from its source, and those of typing, pydantic and the
# version templates.
RESERVED_NAMES = (
    frozenset(n for n in KEYWORDS if n[:1].isupper())
    | _runtime_names()
    | frozenset(
        {
            # what the generated models import from typing and pydantic
            "Annotated",
            "Any",
            "ClassVar",
            "Literal",
            "Union",
            "Optional",
            "TYPE_CHECKING",
            "TypeAliasType",
            "Field",
            "Discriminator",
            "Tag",
            "OnErrorOmit",
            "SerializeAsAny",
            "AfterValidator",
            "BaseModel",
            "ConfigDict",
            "TypeAdapter",
            "ValidationError",
            # what the version templates define beside the models
            "Agent",
            "Client",
            "Proxy",
            "AgentPeer",
            "ClientPeer",
            "METHODS",
            "FEATURES",
            "ERRORS",
            "VERSION",
            "STATUS",
            "BATCHES",
            "SessionState",
        }
    )
)
# Module-level names of <v>/methods.py that a method constant must not take.
RESERVED_METHOD_CONSTANTS = frozenset(
    {
        "METHODS",
        "ERRORS",
        # JSON-RPC's own error codes, defined beside the method constants (the
        # version's own error names are checked against its error table)
        "PARSE_ERROR",
        "INVALID_REQUEST",
        "METHOD_NOT_FOUND",
        "INVALID_PARAMS",
        "INTERNAL_ERROR",
    }
)
# The runtime's sentinel tags (acp_types._runtime.UNKNOWN_TAG / DEFAULT_TAG): a
# branch tagged with one would be routed as the unknown or the default branch.
SENTINEL_TAGS = ("__acp_unknown__", "__acp_default__")
SENTINEL_PREFIX = "__acp_"
INT32 = (-(2**31), 2**31 - 1)
# The builtins each JSON type is annotated with in the models.
_BUILTINS_OF = {"string": {"str"}, "integer": {"int"}, "number": {"int", "float"}, "boolean": {"bool"}}


def builtins_of(texpr: TypeExpr) -> set[str]:
    """The Python builtins the model annotation of ``texpr`` names (``list[str]`` -> list, str)."""
    out: set[str] = set()
    node: TypeExpr | None = texpr
    while node is not None:
        if node.kind == "scalar":
            for part in (node.name or "").split(" | "):
                out |= _BUILTINS_OF.get(part, set())
        elif node.kind == "array":
            out.add("list")
        elif node.kind == "map":
            out |= {"dict", "str"}
        node = node.items
    return out


@cache
def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be used, or None.

    The models check patterns with pydantic-core, whose regex engine is Rust's
    ``regex`` crate (no lookaround, no backreferences); the bundled schema is
    checked by jsonschema with Python's ``re``. A pattern must compile in both.
    """
    from pydantic_core import SchemaError as CoreSchemaError
    from pydantic_core import SchemaValidator, core_schema

    try:
        SchemaValidator(core_schema.str_schema(pattern=pattern))
    except CoreSchemaError as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        detail = next((line for line in lines if line.startswith("error:")), lines[-1] if lines else "")
        return f"the models' regex engine (Rust regex, in pydantic-core) refuses it ({detail[:200]})"
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"Python's re, which checks the bundled schema, refuses it ({exc})"
    return None


def build_protocol(loaded: LoadedVersion) -> Protocol:
    """Check a loaded version semantically and build its intermediate model."""
    b = _Builder(loaded)
    doc = loaded.protocol
    types: dict[str, TypeDef] = {}
    for name in sorted(loaded.definitions):
        t = b.build_type(name, loaded.definitions[name])
        if t is not None:
            types[name] = t
    b.check_alias_cycles(types)
    b.check_spellings(types)
    for part in ("request", "response"):
        tname = doc["initialize"][part]
        if not isinstance(types.get(tname), ObjectType):
            b.problem(
                None,
                f"/initialize/{part}",
                f"initialize {part} type {tname!r} is not an object definition",
                f"define {tname} as an object",
            )
    for name in types:
        if name in RESERVED_NAMES:
            b.problem(
                name,
                pointer("$defs", name),
                f"{name!r} is a Python keyword or a name the generated modules import",
                f"rename it (for example {name}Type); reserved: {', '.join(sorted(RESERVED_NAMES))}",
            )
    lowered: dict[str, str] = {}
    for name in types:
        key = name.lower()
        if key in lowered:
            b.problem(
                name,
                pointer("$defs", name),
                f"{name!r} and {lowered[key]!r} differ only in case",
                "rename one (they would collide on case-insensitive file systems and in docs)",
            )
        lowered[key] = name
    proto = Protocol(
        version=doc["version"],
        protocol_version=doc["protocolVersion"],
        status=doc["status"],
        batches=doc.get("batches", False),
        description=doc["description"],
        source=loaded.label,
        digest=loaded.digest,
        init_request=doc["initialize"]["request"],
        init_response=doc["initialize"]["response"],
        errors=tuple(
            sorted(
                (ErrorCode(int(c), e["name"], e["description"]) for c, e in doc["errors"].items()), key=lambda e: e.code
            )
        ),
        methods=(),
        features=(),
        types=tuple(types[n] for n in sorted(types)),
        bundle={},
    )
    methods, features = b.build_protocol(types, proto)
    b.check_stability(types, replace(proto, methods=methods, features=features))
    if b.problems:
        raise SchemaError(b.problems)
    proto = replace(proto, methods=methods, features=features)
    return replace(
        proto, bundle=bundle_schema(loaded, proto), stable_bundle=bundle_schema(loaded, proto, stable_only=True)
    )


def bundle_schema(loaded: LoadedVersion, proto: Protocol, stable_only: bool = False) -> dict[str, Any]:
    """The single-document schema shipped as acp_types/<version>/schema.json.

    Definitions keep their canonical form and markers; each union also gets the
    JSON Schema that dispatches on its tag the way the models do, so jsonschema
    and the models agree on what is valid.

    ``stable_only`` builds ``schema.stable.json``: definitions, properties and
    union branches marked unstable are left out, and the method table holds
    only ``stable`` methods (the semantic checks guarantee nothing left refers
    to what was removed).
    """
    defs: dict[str, Any] = {}
    dropped = {t.name for t in proto.types if t.stability == "unstable"} if stable_only else set()
    for t in proto.types:
        if t.name in dropped:
            continue
        schema = dict(loaded.definitions[t.name])
        if stable_only and isinstance(t, ObjectType) and any(f.unstable for f in t.fields):
            schema["properties"] = {
                k: v for k, v in schema["properties"].items() if v.get("x-acp-stability") != "unstable"
            }
        if isinstance(t, UnionType):
            if stable_only:
                t = replace(t, variants=tuple(v for v in t.variants if v.name not in dropped))
                schema["oneOf"] = [b for b in schema["oneOf"] if b["$ref"][len(REF_PREFIX) :] not in dropped]
            schema = _compile_union(t, schema)
        elif isinstance(t, ObjectType) and t.required_one_of:
            schema["anyOf"] = [{"required": [k]} for k in t.required_one_of]
        elif isinstance(t, AliasType) and t.same_kind and t.type.items is not None:
            items = proto.type(t.type.items.name or "")
            if isinstance(items, UnionType):
                schema["allOf"] = [{"anyOf": [{"items": {"$ref": REF_PREFIX + v.name}} for v in items.variants]}]
        elif isinstance(t, EnumType) and t.open:
            values = schema.pop("enum")
            schema.pop("type", None)
            schema["anyOf"] = [{"type": "string", "enum": values}, {"type": "string"}]
        defs[t.name] = schema
    doc = loaded.protocol
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:acp-types:schema:{proto.version}" + (":stable" if stable_only else ""),
        "description": doc["description"],
        "x-acp-version": {
            "version": proto.version,
            "protocolVersion": proto.protocol_version,
            "status": proto.status,
            "batches": proto.batches,
            "initialize": doc["initialize"],
        },
        "x-acp-errors": doc["errors"],
        "x-acp-methods": {
            m: doc["methods"][m]
            for m in sorted(doc["methods"])
            if not stable_only or doc["methods"][m]["stability"] == "stable"
        },
        "x-acp-features": {
            f: doc["features"][f]
            for f in sorted(doc["features"])
            if not stable_only or doc["features"][f].get("stability", "stable") == "stable"
        },
        "$defs": defs,
    }


def _compile_union(u: UnionType, schema: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in schema.items() if k != "oneOf"}
    rules: list[dict[str, Any]] = []
    if u.tag is not None:
        tag = u.tag
        known = [v.tag for v in u.variants if v.tag is not None]
        for v in u.variants:
            if v.tag is None:
                continue
            rules.append(
                {
                    "if": {"properties": {tag: {"const": v.tag}}, "required": [tag]},
                    "then": {"$ref": REF_PREFIX + v.name},
                }
            )
        if u.default is not None:
            rules.append({"if": {"not": {"required": [tag]}}, "then": {"$ref": REF_PREFIX + u.default}})
        else:
            out["required"] = [tag]
        unknown_tag = {"required": [tag], "not": {"properties": {tag: {"enum": known}}}}
        if u.unknown_default and u.default is not None:
            rules.append({"if": unknown_tag, "then": {"$ref": REF_PREFIX + u.default}})
        if u.unknown_required:
            rules.append({"if": unknown_tag, "then": {"required": list(u.unknown_required)}})
        tag_schema: dict[str, Any] = {"type": "string"}
        if not u.open and not u.unknown_default:
            tag_schema = {"enum": known}
        out.update({"type": "object", "properties": {tag: tag_schema}})
    else:
        assert u.presence is not None
        keys = [k for k, _ in u.presence]
        for i, (key, branch) in enumerate(u.presence):
            # overlap "first": a key chooses its branch unless an earlier key is present too
            others = keys[:i] if u.overlap_first else [k for k in keys if k != key]
            cond: dict[str, Any] = {"required": [key]}
            if others:
                cond = {"required": [key], "not": {"anyOf": [{"required": [o]} for o in others]}}
            rules.append({"if": cond, "then": {"$ref": REF_PREFIX + branch}})
        present = [{"required": [k]} for k in keys]
        out.update({"type": "object", "anyOf" if u.overlap_first else "oneOf": present})
    out["allOf"] = rules
    return out
