"""Read a published ACP reference schema into the intermediate model, and compare it with ours.

The reference (``schema.json`` plus ``meta.json`` of one protocol version, as
agentclientprotocol/agent-client-protocol publishes them) is plain JSON Schema
written by a Rust schema generator: unions are ``anyOf`` lists whose branches
wrap a definition in ``allOf`` and add the tag, open unions and enums end in a
catch-all branch titled ``other``, methods are marked with ``x-method`` and
``x-side``, and the receiver's tolerance with ``x-deserialize-default-on-error``
and ``x-deserialize-skip-invalid-items``. This module translates it into our
canonical format (docs/SCHEMA_FORMAT.md) and builds a :class:`Protocol` with
the same checks as ours, so ``generator.diff`` can compare the two.

What the reference does not carry (capability gates, error lists, features,
the error table) is taken from the canonical side, so it compares equal; the
comparison is about messages on the wire. Stability is read from the reference
when it is the unstable one (``schema.unstable.json`` + ``meta.unstable.json``):
what it has beyond the stable pair beside it (methods, definitions, properties,
features whose capability only it has) is unstable, the rest stable.
"""

from __future__ import annotations

import argparse
import fnmatch
import itertools
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

import jsonschema

from generator.diff import rules
from generator.diff.command import FAIL_LEVELS
from generator.diff.compare import Change, compare
from generator.diff.report import breaks, counts
from generator.diff.rules import LEVEL_TITLES, LEVELS
from generator.errors import Problem, SchemaError, UsageError, pointer
from generator.loader import LoadedVersion, load_version, meta_problems, parse_json
from generator.model import Protocol, UnionType, build_protocol
from generator.render.templated import md_cell
from generator.sources import DirSource, read_bounded

REF = "#/$defs/"
# how many definitions deep anyOf scopes may nest (the published schemas: two or three): bounds the reader's stack
MAX_SCOPE_DEPTH = 64
# The JSON-RPC envelopes: our runtime models them (acp_types._jsonrpc), not the schema.
ENVELOPE = re.compile(r"^(Agent|Client|ProtocolLevel|Ext|Proxy)(Request|Response|Notification)$")
# `format` values that name the Rust type behind a number, not a wire format
RUST_FORMATS = frozenset(
    {"int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float", "double"}
)
UNSIGNED_BITS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}
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
_SIDES = {"agentMethods": "agent", "clientMethods": "client", "protocolMethods": "protocol", "proxyMethods": "proxy"}
# Rules about names only: they change generated code, never a message.
NAMING_RULES = frozenset(
    r.id for r in (rules.TYPE_ADDED, rules.TYPE_REMOVED, rules.TYPE_RENAMED, rules.TYPE_ANNOTATION_CHANGED)
)


# Every keyword the translator reads (or knows to carry no wire rule: annotations); any other one in a
# reference is reported as unsupported by name, so nothing in a new publication is dropped unseen.
_READ_KEYWORDS = frozenset(
    {
        "$ref",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "type",
        "const",
        "properties",
        "required",
        "items",
        "additionalProperties",
        "default",
        "discriminator",
        "x-method",
        "x-side",
        "x-deserialize-default-on-error",
        "x-deserialize-skip-invalid-items",
        "x-deserialize-default-on-null",
        *_CONSTRAINTS,
    }
)
# unevaluatedProperties: true is JSON Schema's default; contentEncoding is an annotation in 2020-12
_ANNOTATIONS = frozenset(
    {"title", "description", "contentEncoding", "x-docs-ignore", "examples", "deprecated", "$comment"}
)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "unevaluatedProperties")


def _audit(node: Any, ptr: str, out: list[tuple[str, str]]) -> None:
    """(pointer, what) for every keyword of a schema node and its sub-schemas that is not read."""
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        where = ptr + pointer(key)
        if key == "properties" and isinstance(value, dict):
            for name, sub in value.items():
                _audit(sub, where + pointer(name), out)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            for i, sub in enumerate(value):
                _audit(sub, f"{where}/{i}", out)
        elif key == "unevaluatedProperties" and value is True:
            continue
        elif key in _SCHEMA_VALUES:
            _audit(value, where, out)
        elif key not in _READ_KEYWORDS and key not in _ANNOTATIONS:
            out.append((where, f"the keyword `{key}` is not read"))


def _pascal(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", text) if part)


# ---------------------------------------------------------------- locating and parsing


UNSTABLE_SCHEMA, UNSTABLE_META = "schema.unstable.json", "meta.unstable.json"


@dataclass(frozen=True)
class Located:
    """The files of one reference: the schema and its meta (None: the schema's x-method annotations name the
    methods), and for an unstable one the stable pair beside it."""

    schema: Path
    meta: Path | None
    stable: tuple[Path, Path | None] | None = None  # set when ``schema`` is the unstable schema

    @property
    def unstable(self) -> bool:
        return self.stable is not None


def _meta_beside(schema: Path, name: str) -> Path | None:
    meta = schema.parent / name
    return meta if meta.is_file() else None


def locate(path: Path, unstable: bool = False) -> Located:
    """The files of a reference: a folder holding them, or the schema file itself.

    A stable reference is ``schema.json``, with ``meta.json`` beside it when there is one. An unstable one
    (``unstable``, or the path is a ``schema.unstable.json``) is ``schema.unstable.json`` (and
    ``meta.unstable.json``) read against the stable ``schema.json`` (and ``meta.json``) beside it, which tells
    what is unstable: what only the unstable schema has. Without a meta file, the methods are the schema's
    ``x-method`` / ``x-side`` annotations (the published packages ship no meta file).
    """
    if not path.is_dir() and path.name == UNSTABLE_SCHEMA:
        unstable = True
    names = (UNSTABLE_SCHEMA, UNSTABLE_META) if unstable else ("schema.json", "meta.json")
    schema = path / names[0] if path.is_dir() else path
    if not schema.is_file():
        raise UsageError(f"{path}: no reference schema here (expected a folder with {names[0]}, or the file)")
    meta = _meta_beside(schema, names[1])
    if not unstable:
        return Located(schema, meta)
    stable = schema.parent / "schema.json"
    if not stable.is_file() or stable.resolve() == schema.resolve():
        raise UsageError(
            f"{stable}: an unstable reference is read against the stable {stable.name} beside it, "
            "which tells what is unstable; pass the published folder as it is"
        )
    stable_meta = _meta_beside(stable, "meta.json")
    if (meta is None) != (stable_meta is None):
        present, absent = (meta, "meta.json") if stable_meta is None else (stable_meta, UNSTABLE_META)
        raise UsageError(
            f"{schema.parent / absent}: is missing while {present} is there; an unstable reference "
            "is read with both meta files or with neither (then from the x-method annotations)"
        )
    return Located(schema, meta, (stable, stable_meta))


def _read(path: Path) -> tuple[Any, bytes]:
    try:
        data = read_bounded(path)  # refuses a file too large to be a schema before reading it
    except OSError as exc:
        raise UsageError(f"{path}: cannot be read ({exc.strerror})") from None
    return parse_json(data, str(path)), data


# ---------------------------------------------------------------- translation


class _Translator:
    """Reference definitions -> canonical definitions (our format), with every problem collected."""

    def __init__(self, defs: dict[str, Any], label: str):
        self.src = {n: d for n, d in defs.items() if not ENVELOPE.match(n)}
        self.label = label
        self.out: dict[str, dict[str, Any]] = {}
        self.problems: list[Problem] = []
        self.uses: Counter[str] = Counter()
        self.nested: list[tuple[str, str, Any]] = []
        # (definition, pointer, what): constructs read as well as our format allows, reported by name
        self.unsupported: list[tuple[str, str, str]] = []
        # open union -> the keys of which an unknown variant must carry at least one
        self.unknown_one_of: dict[str, list[str]] = {}
        # definitions whose scopes are being merged: one met again is a cycle at one instance location
        self._flattening: list[str] = []
        # each definition's scopes are merged once: shared ones (A -> B, C -> D) cost no more than a chain
        self._flat: dict[tuple[str, str], tuple[dict[str, Any], list[str], list[list[str]]]] = {}
        self._count(self.src)
        # how many unions have a branch of each tag value: a branch is named after its value alone only when
        # no other union has that value, so the names do not depend on the order definitions are read in
        self.tag_values: Counter[str] = Counter()
        for d in self.src.values():
            branches = (d.get("anyOf") or d.get("oneOf")) if isinstance(d, dict) else None
            if isinstance(branches, list) and (tag := _tag_of(branches)) is not None:
                self.tag_values.update(
                    {
                        _pascal(str(b["properties"][tag]["const"]))
                        for b in branches
                        if isinstance(b, dict)
                        and isinstance(b.get("properties"), dict)
                        and isinstance(b["properties"].get(tag), dict)
                        and "const" in b["properties"][tag]
                    }
                )

    def _count(self, node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(REF):
                self.uses[ref[len(REF) :]] += 1
            for value in node.values():
                self._count(value)
        elif isinstance(node, list):
            for value in node:
                self._count(value)

    def problem(self, ptr: str, message: str, hint: str) -> None:
        self.problems.append(Problem(self.label, ptr, message, hint))

    def target(self, ref: Any, ptr: str) -> str | None:
        if not isinstance(ref, str) or not ref.startswith(REF) or ref[len(REF) :] not in self.src:
            self.problem(
                ptr,
                f"$ref {ref!r} does not point to a definition of this schema",
                "the reference must be one self-contained schema.json",
            )
            return None
        if not isinstance(self.src[ref[len(REF) :]], dict):
            return None  # `true`, `false`...: refused once, at the definition itself (run)
        return ref[len(REF) :]

    def run(self) -> dict[str, dict[str, Any]]:
        for name in sorted(self.src):
            found: list[tuple[str, str]] = []
            _audit(self.src[name], pointer("$defs", name), found)
            self.unsupported += [(name, where, what) for where, what in found]
        for name in sorted(self.src):
            d = self.src[name]
            if not isinstance(d, dict):
                self.problem(pointer("$defs", name), "a definition must be an object", "fix the reference file")
                continue
            if name not in self.out:
                self.definition(name, d)
        for union, tag, value in self.nested:
            for ref in self.out.get(union, {}).get("oneOf", []):
                branch = self.out.get(ref["$ref"][len(REF) :], {})
                if "properties" in branch:
                    branch["properties"] = {tag: {"type": "string", "const": value}, **branch["properties"]}
                    branch["required"] = [tag] + [r for r in branch.get("required", []) if r != tag]
        return self.out

    # -- definitions

    def definition(self, name: str, d: dict[str, Any]) -> None:
        ptr = pointer("$defs", name)
        desc = d.get("description", "") or name
        key = "anyOf" if "anyOf" in d else "oneOf" if "oneOf" in d else None
        branches = d.get(key) if key else None
        if isinstance(branches, list) and branches and "properties" not in d:
            if all(isinstance(b, dict) and ("const" in b or _is_catch_all_scalar(b)) for b in branches):
                self.out[name] = self.enum(name, desc, branches, ptr + "/" + str(key))
            elif all(isinstance(b, dict) and not _structured(b) for b in branches):
                self.out[name] = self.scalar_union(name, desc, branches, ptr + "/" + str(key))
            else:
                self.union(name, desc, branches, {}, [], ptr + "/" + str(key))
        elif isinstance(branches, list) and branches and _tag_of(branches):
            self.union(name, desc, branches, d.get("properties", {}), d.get("required", []), ptr + "/" + str(key))
        elif "properties" in d:
            props, required, any_of = self.flat(name, ptr)
            self.out[name] = self.object(desc, props, required, any_of, ptr)
        elif d.get("type") == "object" and "items" not in d:
            extra = d.get("additionalProperties", True)
            value = True if extra in (True, None) else self.prop(extra, False, ptr + "/additionalProperties")
            self.out[name] = {"description": desc, "type": "object", "additionalProperties": value}
        else:
            schema = self.prop(d, False, ptr)
            schema["description"] = desc
            self.out[name] = schema

    def enum(self, name: str, desc: str, branches: list[dict[str, Any]], ptr: str) -> dict[str, Any]:
        values = [b["const"] for b in branches if "const" in b]
        catch_all = any("const" not in b for b in branches)
        if all(isinstance(v, str) for v in values):
            out: dict[str, Any] = {"description": desc, "type": "string", "enum": values}
            if catch_all:
                out["x-acp-open"] = True
            return out
        kinds = sorted({str(b["type"]) for b in branches if isinstance(b.get("type"), str)})
        if len(kinds) == 1 and kinds[0] in ("integer", "number"):
            # our format has no numeric enums: a closed set of numbers reads as the number type
            return {"description": desc, "type": kinds[0]}
        self.problem(ptr, f"{name}: a set of constants of mixed types", "only string or numeric constants are read")
        return {"description": desc}

    def scalar_union(self, name: str, desc: str, branches: list[dict[str, Any]], ptr: str) -> dict[str, Any]:
        types: list[str] = []
        items: list[dict[str, Any]] = []
        nullable = False
        for i, b in enumerate(branches):
            t = b.get("type")
            for one in [t] if isinstance(t, str) else t or []:
                if one == "null":
                    nullable = True
                elif one not in types:
                    types.append(one)
            if "items" in b:
                items.append(self.prop(b["items"], False, f"{ptr}/{i}/items"))
        if types == ["array"] and len(items) > 1 and len({json.dumps(x, sort_keys=True) for x in items}) > 1:
            return self.arrays_of_one_kind(name, desc, items, ptr, nullable)
        out: dict[str, Any] = {"description": desc, "type": types + (["null"] if nullable else [])}
        if len(out["type"]) == 1:
            out["type"] = out["type"][0]
        if items:
            out["items"] = items[0]
        return out

    def arrays_of_one_kind(
        self, name: str, desc: str, items: list[dict[str, Any]], ptr: str, nullable: bool
    ) -> dict[str, Any]:
        """``anyOf`` of arrays of different definitions: an array whose items are all of one branch."""
        refs = [x.get("$ref", "")[len(REF) :] for x in items]
        if not all(isinstance(self.src.get(r), dict) for r in refs):
            self.problem(ptr, f"{name}: arrays of one kind must each hold a named definition", "fix the reference")
            return {"description": desc}
        item_name = f"{name}Item"
        self.out[item_name] = self.presence_union(
            item_name, f"One entry of {name}.", [(r, list(self.src[r].get("required", []))) for r in refs], ptr
        )
        out: dict[str, Any] = {
            "description": desc,
            "type": ["array", "null"] if nullable else "array",
            "items": {"$ref": REF + item_name},
            "x-acp-same-kind": True,
        }
        return out

    def presence_union(self, name: str, desc: str, branches: list[tuple[str, list[str]]], ptr: str) -> dict[str, Any]:
        """Untagged branches (name, required keys) told apart by a required key only each one has; the first
        listed wins."""
        presence: dict[str, str] = {}
        for b, req in branches:
            others = set().union(*(set(r) for o, r in branches if o != b))
            own = [key for key in req if key not in others]  # in the order the branch lists them
            if not own:
                self.problem(
                    ptr,
                    f"{name}: branch {b!r} has no required key of its own to be told apart by",
                    "this shape of untagged union is not understood",
                )
                continue
            presence[own[0]] = b
        return {
            "description": desc,
            "oneOf": [{"$ref": REF + b} for b, _ in branches],
            "x-acp-union": {"presence": presence, "overlap": "first"},
        }

    def flat_inline(self, b: dict[str, Any], ptr: str) -> tuple[dict[str, Any], list[str], list[list[str]]]:
        """An inline object branch's properties and required keys."""
        req = [r for r in b.get("required", []) if isinstance(r, str)]
        props = {k: self.prop(v, k in req, ptr + pointer("properties", k)) for k, v in b["properties"].items()}
        return props, req, []

    def flat(self, name: str, ptr: str) -> tuple[dict[str, Any], list[str], list[list[str]]]:
        """A definition's properties with its own untagged ``anyOf`` scopes merged in as optional."""
        d = self.src[name]
        if (name, ptr) not in self._flat and not self._flattening:
            self._flattening.append(name)
            try:
                return self.flat(name, ptr)
            finally:
                self._flattening.pop()
        if (name, ptr) not in self._flat:
            props: dict[str, Any] = {
                k: self.prop(v, k in d.get("required", []), ptr + pointer("properties", k))
                for k, v in d.get("properties", {}).items()
            }
            keys = self.scopes(name, d, ptr, props)
            self._flat[name, ptr] = (props, list(d.get("required", [])), [keys] if keys else [])
        props, required, one_of = self._flat[name, ptr]
        return dict(props), list(required), [list(keys) for keys in one_of]

    def scopes(self, name: str, node: dict[str, Any], ptr: str, props: dict[str, Any]) -> list[str]:
        """The keys of ``node``'s untagged alternatives (``anyOf``: at least one of them; what our
        x-acp-required-one-of says), their properties merged into ``props`` as optional.

        A ``oneOf`` of them also forbids carrying two at once, which our format cannot say: it is read as
        ``anyOf`` and reported as unsupported by name.
        """
        keys: list[str] = []
        for word in ("anyOf", "oneOf"):
            alternatives = node.get(word)
            if not isinstance(alternatives, list) or _tag_of(alternatives):
                continue
            for i, b in enumerate(alternatives):
                refs = (
                    [x.get("$ref") for x in b.get("allOf", [])] + ([b["$ref"]] if "$ref" in b else [])
                    if isinstance(b, dict)
                    else [None]
                )
                for ref in refs:
                    t = self.target(ref, f"{ptr}/{word}/{i}")
                    if t is None:
                        continue
                    if t in self._flattening:
                        cycle = " -> ".join([*self._flattening[self._flattening.index(t) :], t])
                        self.problem(
                            f"{ptr}/{word}/{i}",
                            f"{name}: its {word} comes back to {t} at the same place of the message ({cycle}); "
                            "JSON Schema leaves such a loop undefined",
                            "reach the definition again through a property (one level deeper), not through anyOf",
                        )
                        continue
                    if len(self._flattening) >= MAX_SCOPE_DEPTH:
                        self.problem(
                            f"{ptr}/{word}/{i}",
                            f"{name}: anyOf scopes nested more than {MAX_SCOPE_DEPTH} definitions deep",
                            "a published schema nests them two or three deep; flatten the chain",
                        )
                        continue
                    self._flattening.append(t)
                    try:
                        sub, sub_req, _ = self.flat(t, pointer("$defs", t))
                    finally:
                        self._flattening.pop()
                    for k, v in sub.items():
                        props.setdefault(k, v)
                    keys.extend(k for k in sub_req if k not in keys)
            if word == "oneOf" and keys:
                self.unsupported.append(
                    (
                        name,
                        f"{ptr}/oneOf",
                        f"`{name}` must carry exactly one of {keys} "
                        "(a oneOf of alternatives); our format says at least one "
                        "(x-acp-required-one-of), so an object with several is read, not refused",
                    )
                )
        return keys

    def object(
        self, desc: str, props: dict[str, Any], required: list[str], one_of: list[list[str]], ptr: str
    ) -> dict[str, Any]:
        out: dict[str, Any] = {"description": desc, "type": "object", "properties": props}
        if required:
            out["required"] = [r for r in required if r in props]
        if one_of:
            out["x-acp-required-one-of"] = one_of[0]
        return out

    def union(
        self, name: str, desc: str, branches: list[Any], common: dict[str, Any], common_req: list[str], ptr: str
    ) -> None:
        tag = _tag_of(branches)
        if tag is None:
            if any(_any_value(b) for b in branches):
                # a branch that takes any value (ErrorData's "Other"): the union accepts every JSON value,
                # and the named branches only document the shapes ACP defines
                self.out[name] = {"description": desc}
                return
            refs: list[tuple[str, list[str]]] = []
            for i, b in enumerate(branches):
                if isinstance(b, dict) and "properties" in b and "$ref" not in b and "allOf" not in b:
                    # an inline branch: named after the union and its title
                    bname = name + _pascal(str(b.get("title") or i))
                    props, req, _ = self.flat_inline(b, f"{ptr}/{i}")
                    self.out[bname] = self.object(str(b.get("description") or bname), props, req, [], f"{ptr}/{i}")
                    refs.append((bname, req))
                    continue
                one = (
                    [x.get("$ref") for x in b.get("allOf", [])] + ([b["$ref"]] if "$ref" in b else [])
                    if isinstance(b, dict)
                    else []
                )
                if len(one) != 1:
                    self.problem(
                        f"{ptr}/{i}",
                        f"{name}: an untagged branch must be one definition or an inline object, not {_describe(b)}",
                        "this shape of untagged union is not understood",
                    )
                    continue
                t = self.target(one[0], f"{ptr}/{i}")
                if t is not None:
                    refs.append((t, list(self.src[t].get("required", []))))
            if common:
                self.problem(ptr, f"{name}: an object with untagged alternatives at the top", "not understood")
            if len(refs) == 1:
                # one untagged alternative: the definition stands for that one
                self.out[name] = {"description": desc, "$ref": REF + refs[0][0]}
                return
            self.out[name] = self.presence_union(name, desc, refs, ptr)
            return
        variants: list[str] = []
        default: str | None = None
        reads_unknown = False
        open_union = False
        unknown_required: list[str] = []
        for i, b in enumerate(branches):
            bptr = f"{ptr}/{i}"
            if not isinstance(b, dict):
                self.problem(bptr, "a union branch must be an object", "fix the reference")
                continue
            props = b.get("properties", {})
            tprop = props.get(tag, {})
            if "not" in b or (b.get("title") == "other" and "const" not in tprop):
                # the catch-all branch: an unknown tag still carries what the union requires of every variant
                # (its own required keys) and what this branch requires beyond the tag
                open_union = True
                unknown_required = [r for r in dict.fromkeys([*common_req, *b.get("required", [])]) if r != tag]
                unknown_one_of = self.scopes(name, b, bptr, {})
                if unknown_one_of:
                    self.unknown_one_of[name] = unknown_one_of
                continue
            refs = [x.get("$ref") for x in b.get("allOf", []) if "$ref" in x] + ([b["$ref"]] if "$ref" in b else [])
            targets = [t for t in (self.target(r, bptr) for r in refs) if t is not None]
            value = tprop.get("const")
            inner = self.src.get(targets[0], {}) if len(targets) == 1 else {}
            if (
                value is not None
                and not common
                and not (set(props) - {tag})
                and "properties" not in inner
                and isinstance(inner.get("anyOf"), list)
                and _tag_of(inner["anyOf"])
            ):
                # a branch that is itself a union tagged by another property: each of its
                # branches carries this union's tag too
                self.nested.append((targets[0], tag, value))
                variants.append(targets[0])
                continue
            merged: dict[str, Any] = {
                k: self.prop(v, k in common_req, ptr + pointer("properties", k)) for k, v in common.items()
            }
            req = [r for r in common_req]
            one_of: list[list[str]] = []
            for t in targets:
                sub, sub_req, sub_one = self.flat(t, pointer("$defs", t))
                merged.update(sub)
                req += [r for r in sub_req if r not in req]
                one_of += sub_one
            own = {k: v for k, v in props.items() if k != tag}
            for k, v in own.items():
                merged[k] = self.prop(v, k in b.get("required", []), bptr + pointer("properties", k))
            req += [r for r in b.get("required", []) if r != tag and r not in req]
            reuse = len(targets) == 1 and self.uses[targets[0]] == 1
            if value is None:
                # The untagged default branch. When it does not declare the tag, an object with any
                # other tag value fits it too (an unknown tag reads as the default): written as an
                # optional string tag, the way our format says it.
                label = str(b.get("title") or (targets[0] if targets else "default"))
                bname = targets[0] if reuse else name + _pascal(label)
                default = bname
                reads_unknown = tag not in merged
                if reads_unknown:
                    merged[tag] = {"type": "string"}
            else:
                merged = {tag: {"type": "string", "const": value}, **{k: v for k, v in merged.items() if k != tag}}
                req = [tag] + [r for r in req if r != tag]
                if reuse:
                    bname = targets[0]
                elif (
                    self.tag_values[_pascal(str(value))] == 1
                    and _pascal(str(value)) not in self.src
                    and _pascal(str(value)) not in self.out
                ):
                    bname = _pascal(str(value))
                else:
                    bname = name + _pascal(str(value))
            self.out[bname] = self.object(str(b.get("description", "")) or bname, merged, req, one_of, bptr)
            variants.append(bname)
        if open_union and default is not None and reads_unknown:
            self.out[default]["properties"].pop(tag, None)  # an open union keeps unknown tags apart
        spec: dict[str, Any] = {"tag": tag}
        if default is not None:
            spec["default"] = default
            if not open_union and reads_unknown:
                spec["unknown"] = "default"
        if open_union and unknown_required:
            spec["unknownRequired"] = unknown_required
        out: dict[str, Any] = {"description": desc, "oneOf": [{"$ref": REF + v} for v in variants], "x-acp-union": spec}
        if open_union:
            out["x-acp-open"] = True
        self.out[name] = out

    # -- property schemas

    def prop(self, p: Any, required: bool, ptr: str) -> dict[str, Any]:
        if (
            ptr.endswith("/properties/_meta")
            and isinstance(p, dict)
            and p.get("additionalProperties") is True
            and p.get("type") == ["object", "null"]
        ):
            # every `_meta` has the same shape: our schemas name it Meta
            self.out.setdefault(
                "Meta",
                {
                    "description": "Metadata reserved for extensions.",
                    "type": ["object", "null"],
                    "additionalProperties": True,
                },
            )
            meta: dict[str, Any] = {"$ref": REF + "Meta"}
            if p.get("x-deserialize-default-on-error") is True:
                meta["x-acp-on-error"] = "omit"
            return meta
        if not isinstance(p, dict):
            self.problem(ptr, "a property schema must be an object", "fix the reference")
            return {}
        out: dict[str, Any] = {}
        all_of = p.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            out.update(self.prop(all_of[0], required, ptr + "/allOf/0"))
        elif "$ref" in p:
            t = self.target(p["$ref"], ptr + "/$ref")
            out["$ref"] = REF + (t or "Missing")
        elif isinstance(p.get("anyOf"), list):
            rest = [b for b in p["anyOf"] if not (isinstance(b, dict) and b.get("type") == "null")]
            if len(rest) == 1 and len(p["anyOf"]) == 2:
                inner = self.prop(rest[0], required, ptr + "/anyOf/0")
                if "$ref" in inner and _takes_any(self.src.get(inner["$ref"][len(REF) :])):
                    out["$ref"] = inner["$ref"]  # it takes null already
                elif "$ref" in inner:
                    out["anyOf"] = [{"$ref": inner["$ref"]}, {"type": "null"}]
                else:
                    t = inner.get("type")
                    inner["type"] = [*([t] if isinstance(t, str) else t or []), "null"]
                    out.update(inner)
            else:
                self.problem(ptr, "an inline union inside a property", "name the union as a definition")
        else:
            for key in ("type", "const"):
                if key in p:
                    out[key] = p[key]
            for key in _CONSTRAINTS:
                if key in p and not (key == "format" and p[key] in RUST_FORMATS):
                    out[key] = p[key]
            bits = UNSIGNED_BITS.get(str(p.get("format")))
            if bits is not None and "maximum" not in p:
                out["maximum"] = 2**bits - 1  # what the Rust type can hold
            if "items" in p:
                out["items"] = self.prop(p["items"], False, ptr + "/items")
            if "additionalProperties" in p:
                extra = p["additionalProperties"]
                out["additionalProperties"] = (
                    True if extra is True else self.prop(extra, False, ptr + "/additionalProperties")
                )
            elif out.get("type") == "object" or (isinstance(out.get("type"), list) and "object" in out["type"]):
                out["additionalProperties"] = True
        if "default" in p:
            out["default"] = p["default"]
        t = out.get("type")
        is_array = t == "array"  # required and non-null: what "default" applies to
        any_array = is_array or (isinstance(t, list) and "array" in t)
        if p.get("x-deserialize-default-on-error") is True:
            if not required:
                out["x-acp-on-error"] = "omit"
            elif is_array:
                out["x-acp-on-error"] = "default"
        if p.get("x-deserialize-default-on-null") is True and p.get("x-deserialize-default-on-error") is not True:
            # null read as the default value (an empty list or map), and nothing else forgiven: our markers
            # forgive every invalid value or none
            self.unsupported.append(
                (
                    _location(ptr),
                    ptr,
                    "a null value is read as the default "
                    "(x-deserialize-default-on-null), which no marker of our format says",
                )
            )
        if p.get("x-deserialize-skip-invalid-items") is True and any_array:
            out["x-acp-invalid-items"] = "skip"
        return out


def _is_catch_all_scalar(b: dict[str, Any]) -> bool:
    return b.get("type") == "string" and "const" not in b and "properties" not in b and "enum" not in b


def _location(ptr: str) -> str:
    """``/$defs/Name/properties/key`` -> ``Name.key`` (how the diff names a field), else the definition."""
    parts = ptr.split("/")
    if len(parts) == 5 and parts[3] == "properties":
        return f"{parts[2]}.{parts[4]}".replace("~1", "/").replace("~0", "~")
    return parts[2].replace("~1", "/").replace("~0", "~")


def _takes_any(d: Any) -> bool:
    """A definition that accepts every JSON value: no constraint at all, or a union with an any-value branch."""
    if _any_value(d):
        return True
    branches = d.get("anyOf") if isinstance(d, dict) else None
    return isinstance(branches, list) and "properties" not in d and any(_any_value(b) for b in branches)


def _any_value(b: Any) -> bool:
    """A schema that takes any JSON value: nothing but a title or a description."""
    return isinstance(b, dict) and set(b) <= {"title", "description"}


def _describe(node: Any) -> str:
    """A schema's shape in a few words, for a message naming what is not understood."""
    if not isinstance(node, dict):
        return f"a {type(node).__name__}"
    keys = sorted(k for k in node if k not in ("title", "description"))
    return "a schema with " + ", ".join(keys) if keys else "an empty schema"


def _structured(b: dict[str, Any]) -> bool:
    return any(k in b for k in ("properties", "allOf", "$ref", "not", "anyOf", "oneOf"))


def _tag_of(branches: list[Any]) -> str | None:
    """The property that carries a ``const`` in the most branches: the union's tag."""
    counts: Counter[str] = Counter()
    for b in branches:
        if isinstance(b, dict):
            for key, prop in b.get("properties", {}).items():
                if isinstance(prop, dict) and "const" in prop:
                    counts[key] += 1
    if not counts:
        return None
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def _rename(node: Any, names: dict[str, str]) -> Any:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value[len(REF) :] in names:
                out[key] = REF + names[value[len(REF) :]]
            elif key == "x-acp-union" and isinstance(value, dict):
                spec = dict(value)
                if spec.get("default") in names:
                    spec["default"] = names[spec["default"]]
                if isinstance(spec.get("presence"), dict):
                    spec["presence"] = {k: names.get(v, v) for k, v in spec["presence"].items()}
                out[key] = spec
            else:
                out[key] = _rename(value, names)
        return out
    if isinstance(node, list):
        return [_rename(v, names) for v in node]
    return node


# ---------------------------------------------------------------- the protocol table


def _walk(defs: dict[str, Any], root: str, path: tuple[str, ...]) -> bool:
    current: str | None = root
    for segment in path:
        d = defs.get(current or "", {})
        prop = d.get("properties", {}).get(segment)
        if prop is None:
            return False
        ref = prop.get("$ref") or next((b.get("$ref") for b in prop.get("anyOf", []) if "$ref" in b), None)
        current = ref[len(REF) :] if isinstance(ref, str) else None
    return True


@dataclass
class _Pair:
    """One schema (and meta) read and translated."""

    translator: _Translator
    defs: dict[str, dict[str, Any]]
    meta: dict[str, Any]
    files: dict[str, bytes]
    meta_label: str  # where a method's problem is reported: the meta file, or the schema when annotated
    method_ptr: dict[str, str]  # wire name -> pointer of its entry in ``meta_label``
    other_sides: dict[str, tuple[str, str]]  # wire name -> (x-side, pointer): sides our format has no place for


def _annotated_meta(
    defs: dict[str, Any], version: str, label: str
) -> tuple[dict[str, Any], dict[str, str], dict[str, tuple[str, str]], list[Problem]]:
    """The method tables a meta file would hold, from the definitions' ``x-method`` / ``x-side``.

    ``x-side`` names the side that handles the method (agent, client, protocol for both, or proxy for the
    proxy chains' methods between a conductor and its proxies); a method any other side handles is
    returned apart, to be reported as unsupported.
    """
    meta: dict[str, Any] = {"version": int(version[1:]), **{group: {} for group in _SIDES}}
    groups = {side: group for group, side in _SIDES.items()}
    ptrs: dict[str, str] = {}
    others: dict[str, tuple[str, str]] = {}
    problems: list[Problem] = []
    for name in sorted(defs):
        d = defs[name]
        if not isinstance(d, dict) or ("x-method" not in d and "x-side" not in d):
            continue
        wire, side, ptr = d.get("x-method"), d.get("x-side"), pointer("$defs", name)
        if not isinstance(wire, str) or not isinstance(side, str):
            problems.append(
                Problem(
                    label,
                    ptr,
                    "x-method and x-side come together, each a string",
                    "mark a method's definitions with both",
                )
            )
        elif side in groups:
            meta[groups[side]][wire] = wire
            ptrs.setdefault(wire, ptr)
        else:
            others.setdefault(wire, (side, ptr))
    return meta, ptrs, others, problems


def _read_pair(schema_path: Path, meta_path: Path | None, version: str, check: bool = True) -> _Pair:
    """One schema (and meta) pair, checked and translated; without a meta file, from the annotations."""
    schema, schema_bytes = _read(schema_path)
    label = str(schema_path)
    if not isinstance(schema, dict) or not isinstance(schema.get("$defs"), dict):
        raise SchemaError(
            [
                Problem(
                    label,
                    "",
                    "a reference schema holds its definitions under $defs",
                    f"pass the published {schema_path.name}",
                )
            ]
        )
    files = {schema_path.name: schema_bytes}
    others: dict[str, tuple[str, str]] = {}
    if meta_path is None:
        meta, ptrs, others, problems = _annotated_meta(schema["$defs"], version, label)
        if problems:
            raise SchemaError(problems)
        meta_label = label
    else:
        meta, meta_bytes = _read(meta_path)
        meta_label = str(meta_path)
        files[meta_path.name] = meta_bytes
        if (
            not isinstance(meta, dict)
            or not isinstance(meta.get("version"), int)
            or not any(isinstance(meta.get(k), dict) for k in _SIDES)
            or not all(
                isinstance(table, dict) and all(isinstance(w, str) for w in table.values())
                for table in (meta.get(k, {}) for k in _SIDES)
            )
        ):
            raise SchemaError(
                [
                    Problem(
                        meta_label,
                        "",
                        f"{meta_path.name} needs an integer version and method "
                        "tables (agentMethods, clientMethods, protocolMethods) of method names",
                        f"pass the published {meta_path.name}",
                    )
                ]
            )
        if f"v{meta['version']}" != version:
            raise UsageError(
                f"{meta_label}: this reference is protocol version {meta['version']}, "
                f"not {version}; pass --version v{meta['version']}"
            )
        ptrs = {
            str(wire): pointer(group, key) for group in _SIDES for key, wire in sorted((meta.get(group) or {}).items())
        }
    _check_json_schema(schema, label)
    t = _Translator(schema["$defs"], label)
    defs = t.run()
    if check and t.problems:
        raise SchemaError(t.problems)
    return _Pair(t, defs, meta, files, meta_label, ptrs, others)


_MAX_SCHEMA_PROBLEMS = 50  # a reference wrong everywhere is reported by its first problems, at bounded cost


def _check_json_schema(schema: dict[str, Any], label: str) -> None:
    """Refuse a reference that is not JSON Schema (``"properties": []``, ``"required": 5``...): the
    translator reads keywords by their JSON Schema meaning, so each must have its JSON Schema type."""
    validator = jsonschema.Draft202012Validator(jsonschema.Draft202012Validator.META_SCHEMA)
    problems = []
    for error in itertools.islice(validator.iter_errors(schema), _MAX_SCHEMA_PROBLEMS):
        best = jsonschema.exceptions.best_match([error])
        message = best.message if len(best.message) <= 300 else best.message[:300] + "..."
        problems.append(
            Problem(
                label,
                pointer(*best.absolute_path),
                f"not valid JSON Schema 2020-12 ({best.validator}): {message}",
                "a reference schema must be JSON Schema; fix or re-download the file",
            )
        )
    if not problems:
        problems = _boolean_schemas(schema, label)
    if problems:
        raise SchemaError(problems)


# where a subschema goes, by how it is held (JSON Schema 2020-12's applicators)
_SUB_MAPS = ("properties", "patternProperties", "dependentSchemas")
_SUB_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUB_ONE = ("items", "not", "contains", "if", "then", "else", "propertyNames", "unevaluatedItems")


def _boolean_schemas(schema: dict[str, Any], label: str) -> list[Problem]:
    """The boolean subschemas (``true``, ``false``): valid JSON Schema the reader does not take except as
    ``additionalProperties``/``unevaluatedProperties`` (the published schemas' only use) and refuses as a
    definition (run); each is reported by its pointer (the first few), without recursion."""
    found: list[Problem] = []
    stack: list[tuple[Any, str]] = [(d, pointer("$defs", n)) for n, d in sorted(schema["$defs"].items())]
    while stack and len(found) < _MAX_SCHEMA_PROBLEMS:
        node, ptr = stack.pop()
        if not isinstance(node, dict):
            continue
        subs = [
            (v, ptr + pointer(k, key)) for k in _SUB_MAPS if isinstance(node.get(k), dict) for key, v in node[k].items()
        ]
        subs += [
            (v, ptr + pointer(k, i)) for k in _SUB_LISTS if isinstance(node.get(k), list) for i, v in enumerate(node[k])
        ]
        subs += [(node[k], ptr + pointer(k)) for k in _SUB_ONE if k in node]
        for sub, where in subs:
            if isinstance(sub, bool):
                found.append(
                    Problem(
                        label,
                        where,
                        f"a boolean schema ({str(sub).lower()}) is not read here",
                        "write {} for true; a published schema has none here",
                    )
                )
            else:
                stack.append((sub, where))
    return found


def _wire_names(meta: dict[str, Any]) -> set[str]:
    return {str(wire) for group in _SIDES for wire in (meta.get(group) or {}).values()}


def _mark_unstable(defs: dict[str, dict[str, Any]], stable: dict[str, dict[str, Any]]) -> None:
    """Mark ``x-acp-stability: unstable`` what only the unstable reference has: definitions, and properties
    of definitions the stable one has too (a new union branch is a definition of its own)."""
    for name, d in defs.items():
        base = stable.get(name)
        if base is None:
            d["x-acp-stability"] = "unstable"
        elif isinstance(d.get("properties"), dict):
            known = base.get("properties") or {}
            for key, prop in d["properties"].items():
                if key not in known and isinstance(prop, dict):
                    prop["x-acp-stability"] = "unstable"


def read_reference(
    path: Path, version: str, canonical: Protocol, names: dict[str, str] | None = None, unstable: bool = False
) -> Protocol:
    """The reference schema at ``path`` as a :class:`Protocol`, in our names (``names``: reference -> ours).

    With ``unstable`` (or ``path`` naming a ``schema.unstable.json``) the unstable reference is read, and
    what it has beyond the stable reference beside it is marked unstable: methods, definitions, properties.
    """
    return load_reference(path, version, canonical, names, unstable).protocol


@dataclass(frozen=True)
class Reference:
    """A reference read: its protocol, and what in it our format cannot express, as changes to report."""

    protocol: Protocol
    unsupported: tuple[Change, ...]


def load_reference(
    path: Path, version: str, canonical: Protocol, names: dict[str, str] | None = None, unstable: bool = False
) -> Reference:
    """:func:`read_reference`, with the constructs it could not translate listed as changes."""
    where = locate(path, unstable)
    pair = _read_pair(where.schema, where.meta, version, check=False)
    t, defs, meta, label, meta_label = pair.translator, pair.defs, pair.meta, str(where.schema), pair.meta_label
    by_method: dict[str, list[str]] = {}
    for name, d in sorted(t.src.items()):
        if isinstance(d, dict) and isinstance(d.get("x-method"), str):
            by_method.setdefault(d["x-method"], []).append(name)
    given = dict(names or {})
    names = {k: v for k, v in given.items() if k in defs}
    targets = Counter(names.values())
    clashes = sorted((k, v) for k, v in names.items() if (v in defs and v not in names) or targets[v] > 1)
    if clashes:
        raise UsageError(
            "; ".join(
                f"a naming entry of the differences file maps the reference's {k!r} to "
                f"{v!r}, which the reference {label} "
                + ("also gives another of its names" if targets[v] > 1 else "defines itself")
                for k, v in clashes
            )
            + ": drop or update the entry (one reference definition per name of ours)"
        )
    if names:
        defs = {names.get(n, n): _rename(d, names) for n, d in defs.items()}
    stable_methods: set[str] | None = None
    stable_defs: dict[str, dict[str, Any]] = defs
    files = dict(pair.files)
    if where.stable is not None:
        base = _read_pair(*where.stable, version)
        # the stable file names its inline branches by itself (one may be `Cancelled` there and
        # `RequestPermissionOutcomeCancelled` here, where another branch is `Cancelled` too)
        stable_defs = {given.get(n, n): d for n, d in base.defs.items()}
        stable_methods = _wire_names(base.meta) | set(base.other_sides)
        _mark_unstable(defs, stable_defs)
        files.update(base.files)
    methods: dict[str, Any] = {}
    sides: dict[str, set[str]] = {}
    for group, side in _SIDES.items():
        for wire in (meta.get(group) or {}).values():
            sides.setdefault(str(wire), set()).add(side)
    for group, side in _SIDES.items():
        for key, wire in sorted((meta.get(group) or {}).items()):
            ptr = pair.method_ptr.get(str(wire), pointer(group, key))
            # listed for both sides: either may handle it
            handler = "protocol" if {"agent", "client"} <= sides.get(wire, set()) else side
            if wire in methods:
                continue
            found = [names.get(n, n) for n in by_method.get(wire, [])]
            results = [n for n in found if n.endswith("Response")]
            params = [n for n in found if not n.endswith("Response")]
            notification: list[str] = []
            if len(params) > 1 and results:
                # a method sent both as a request and as a notification: the request form has the result
                notification = [n for n in params if n.endswith("Notification")]
                params = [n for n in params if n.endswith("Request")] or params
            if len(params) != 1 or len(results) > 1 or len(notification) > 1:
                t.problems.append(
                    Problem(
                        meta_label,
                        ptr,
                        f"method {wire!r}: expected one params definition "
                        f"and at most one result marked x-method, found {found or 'none'}",
                        "mark the method's definitions with x-method",
                    )
                )
                continue
            ours = canonical.method(wire)
            cap = ours.capability if ours and handler != "protocol" else None
            root = canonical.init_response if handler == "agent" else canonical.init_request
            if cap is not None and not _walk(defs, root, cap):
                cap = None
            methods[wire] = {
                "side": handler,
                "kind": "request" if results else "notification",
                "params": params[0],
                "result": results[0] if results else None,
                "capability": ".".join(cap) if cap else None,
                "errors": list(ours.errors) if ours else [],
                "stability": _method_stability(wire, ours.stability if ours else None, canonical, stable_methods),
                "description": ours.description if ours else wire,
            }
            if notification:
                methods[wire]["notificationParams"] = notification[0]
    if t.problems:
        raise SchemaError(t.problems)
    init = methods.get("initialize")
    if init is None or init["result"] is None:
        raise SchemaError(
            [
                Problem(
                    meta_label, "", "the reference has no initialize request with a result", "pass a complete reference"
                )
            ]
        )
    features = {}
    for f in canonical.features:
        root = canonical.init_response if f.side == "agent" else canonical.init_request
        if _walk(defs, root, f.capability):
            features[f.name] = {"side": f.side, "capability": ".".join(f.capability), "description": f.description}
            if where.unstable and not _walk(stable_defs, root, f.capability):
                features[f.name]["stability"] = "unstable"
    doc = {
        "version": version,
        "protocolVersion": meta["version"],
        "status": canonical.status,
        "batches": canonical.batches,
        "description": f"reference schema {label}",
        "initialize": {"request": init["params"], "response": init["result"]},
        "errors": {str(e.code): {"name": e.name, "description": e.description} for e in canonical.errors},
        "methods": methods,
        "features": features,
    }
    loaded = LoadedVersion(label=label, protocol=doc, definitions=defs, def_files={n: label for n in defs}, files=files)
    unsupported = [
        _unsupported(
            "method",
            wire,
            f"method `{wire}` is handled by the `{side}` side (x-side at "
            f"{label}#{ptr}), which our format has no place for (agent, client, protocol, proxy)",
        )
        for wire, (side, ptr) in sorted(pair.other_sides.items())
    ]
    unsupported += [
        _unsupported("type", names.get(n, n), f"{message} ({label}#{ptr})") for n, ptr, message in t.unsupported
    ]
    protocol = build_protocol(loaded)
    one_of = {names.get(n, n): tuple(keys) for n, keys in t.unknown_one_of.items()}
    if one_of:
        protocol = replace(
            protocol,
            types=tuple(
                replace(x, unknown_required_one_of=one_of[x.name])
                if isinstance(x, UnionType) and x.name in one_of
                else x
                for x in protocol.types
            ),
        )
    return Reference(protocol, tuple(unsupported))


def _unsupported(scope: str, location: str, message: str) -> Change:
    r = rules.REFERENCE_UNSUPPORTED
    return Change(r.id, r.level, r.axis, scope, location, message)


def _method_stability(wire: str, ours: str | None, canonical: Protocol, stable_methods: set[str] | None) -> str:
    """A reference method's stability: against an unstable reference, unstable when only the unstable meta
    lists it; a proposal or draft of ours keeps its stability (the reference has no such level)."""
    if stable_methods is not None:
        if wire not in stable_methods:
            return "unstable"
        return ours if ours in ("proposal", "draft") else "stable"
    return ours if ours else ("stable" if canonical.status == "stable" else "draft")


# ---------------------------------------------------------------- deliberate differences


@dataclass(frozen=True)
class Deliberate:
    """One entry of schema/differences.json."""

    id: str
    versions: tuple[str, ...]
    kind: str
    locations: tuple[str, ...]
    rules: tuple[str, ...]
    names: tuple[tuple[str, str], ...]
    reason: str
    source: str

    def explains(self, version: str, rule: str, location: str) -> bool:
        if version not in self.versions or not self.locations:
            return False
        if self.rules and not any(fnmatch.fnmatchcase(rule, r) for r in self.rules):
            return False
        return any(fnmatch.fnmatchcase(location, pattern) for pattern in self.locations)


def load_differences(path: Path) -> list[Deliberate]:
    """The deliberate differences, checked against their meta-schema; a missing file means none."""
    if not path.is_file():
        return []
    doc, _ = _read(path)
    problems = meta_problems(doc, "differences", str(path))
    if problems:
        raise SchemaError(problems)
    out = []
    ids: set[str] = set()
    for i, e in enumerate(doc["differences"]):
        if e["id"] in ids:
            raise SchemaError(
                [
                    Problem(
                        str(path),
                        pointer("differences", i, "id"),
                        f"id {e['id']!r} appears twice",
                        "give every entry its own id",
                    )
                ]
            )
        ids.add(e["id"])
        out.append(
            Deliberate(
                e["id"],
                tuple(e["versions"]),
                e["kind"],
                tuple(e.get("locations", ())),
                tuple(e.get("rules", ())),
                tuple(sorted(e.get("names", {}).items())),
                e["reason"],
                e["source"],
            )
        )
    return out


def names_for(entries: list[Deliberate], version: str) -> dict[str, str]:
    """Reference name -> our name, from the naming entries of ``version``."""
    return {ref: ours for e in entries if version in e.versions for ref, ours in e.names}


# ---------------------------------------------------------------- the command


@dataclass(frozen=True)
class Finding:
    """One change from our canonical schema to the reference, and the entry that explains it, if any."""

    change: Change
    deliberate: Deliberate | None

    @property
    def naming(self) -> bool:
        return self.change.rule_id in NAMING_RULES

    @property
    def unstable(self) -> bool:
        """The change touches only our unstable surface (x-acp-stability), which a stable reference leaves out."""
        return self.change.unstable


def findings(
    canonical: Protocol,
    reference: Protocol,
    entries: list[Deliberate],
    against_unstable: bool = False,
    unsupported: tuple[Change, ...] = (),
) -> list[Finding]:
    """Every change from ours to the reference with the entry explaining it. Against an unstable reference
    the unstable surface is compared like the rest, so no change counts as "unstable only". ``unsupported``
    (what the reader could not express) is listed among them."""
    out = []
    for c in sorted([*compare(canonical, reference), *unsupported], key=Change.sort_key):
        if against_unstable and c.unstable:
            c = replace(c, unstable=False)
        entry = next((e for e in entries if e.explains(canonical.version, c.rule_id, c.location)), None)
        out.append(Finding(c, entry))
    return out


def _fails(found: list[Finding], fail_on: str | None) -> bool:
    if fail_on is None:
        return False
    levels = FAIL_LEVELS[fail_on]
    return any(
        f.deliberate is None and not f.naming and not f.unstable and (levels is None or f.change.level in levels)
        for f in found
    )


def _groups(found: list[Finding]) -> tuple[list[Finding], list[Finding], list[Finding], list[Finding]]:
    """Unexplained, deliberate, naming only, and unstable only (listed apart, never failing --fail-on)."""
    open_ = [f for f in found if f.deliberate is None and not f.naming and not f.unstable]
    deliberate = [f for f in found if f.deliberate is not None]
    naming = [f for f in found if f.deliberate is None and f.naming and not f.unstable]
    unstable = [f for f in found if f.deliberate is None and f.unstable]
    return open_, deliberate, naming, unstable


# how a pairing of peers reads here: the reference is the "new" side of the comparison, ours the "old"
_SIDES_NAMED = ("the reference", "ours")


def _breaks(c: Change) -> str:
    text = breaks(c, _SIDES_NAMED)
    return f"breaks {text}" if text else ""


def _line(f: Finding) -> str:
    c = f.change
    ctx = "; ".join(
        x for x in (c.level, c.direction or "", _breaks(c), f"entry {f.deliberate.id}" if f.deliberate else "") if x
    )
    return f"{c.location}: {c.message} [{c.rule_id}; {ctx}]"


def text_report(
    canonical: Protocol, reference: Protocol, found: list[Finding], differences: str = "schema/differences.json"
) -> str:
    open_, deliberate, naming, unstable = _groups(found)
    lines = [
        f"{canonical.source} ({canonical.version}) -> reference {reference.source}",
        "(each change reads as going from our canonical schema to the reference)",
        f"{len(open_)} unexplained difference{'s' if len(open_) != 1 else ''}"
        f" ({', '.join(f'{n} {lvl}' for lvl, n in counts([f.change for f in open_]).items() if n) or 'none'}), "
        f"{len(deliberate)} deliberate, {len(naming)} naming only, {len(unstable)} unstable only",
    ]
    for title, group in (
        ("DIFFERENCES", open_),
        (f"DELIBERATE ({differences})", deliberate),
        ("NAMING ONLY (generated code, not the wire)", naming),
        ("UNSTABLE ONLY (our unstable surface, x-acp-stability)", unstable),
    ):
        if not group:
            continue
        lines += ["", f"{title} ({len(group)})"]
        for level in LEVELS:
            sub = [f for f in group if f.change.level == level]
            if sub:
                lines.append(f"  {LEVEL_TITLES[level].lower()} ({len(sub)})")
                lines += [f"    {_line(f)}" for f in sub]
    return "\n".join(lines) + "\n"


def markdown_report(canonical: Protocol, reference: Protocol, found: list[Finding]) -> str:
    open_, deliberate, naming, unstable = _groups(found)
    lines = [
        f"# `{canonical.source}` compared with the reference `{reference.source}`",
        "",
        f"{len(open_)} unexplained, {len(deliberate)} deliberate, {len(naming)} naming only, "
        f"{len(unstable)} unstable only.",
        "",
    ]
    for title, group in (
        ("Differences", open_),
        ("Deliberate", deliberate),
        ("Naming only", naming),
        ("Unstable only", unstable),
    ):
        if not group:
            continue
        lines += [
            f"## {title} ({len(group)})",
            "",
            "| level | location | change | breaks | rule | entry |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for f in group:
            c = f.change
            lines.append(
                f"| {c.level} | `{md_cell(c.location)}` | {md_cell(c.message)} | "
                f"{md_cell(breaks(c, _SIDES_NAMED))} | `{c.rule_id}` | "
                f"{f.deliberate.id if f.deliberate else ''} |"
            )
        lines.append("")
    return "\n".join(lines)


def json_report(canonical: Protocol, reference: Protocol, found: list[Finding]) -> str:
    open_, deliberate, naming, unstable = _groups(found)
    doc = {
        "format": 1,
        "canonical": canonical.source,
        "reference": reference.source,
        "version": canonical.version,
        "counts": {
            "unexplained": counts([f.change for f in open_]),
            "deliberate": len(deliberate),
            "naming": len(naming),
            "unstable": len(unstable),
        },
        "changes": [
            {**f.change.to_json(), "deliberate": f.deliberate.id if f.deliberate else None, "naming": f.naming}
            for f in found
        ],
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Exit 0, or 1 when an unexplained difference at the --fail-on level is found; bad input raises (exit 2)."""
    out = out or sys.stdout
    version = args.version_name
    if not re.fullmatch(r"v[1-9][0-9]*", version):
        raise UsageError(f"--version {version!r}: a version is named v1, v2, ... (a folder of {args.schema})")
    folder = args.schema / version
    if not folder.is_dir():
        raise UsageError(f"{folder}: no canonical schema folder for {version}")
    try:
        label = folder.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        label = str(folder)
    canonical = build_protocol(load_version(DirSource(folder, label)))
    diff_file = args.differences if args.differences is not None else args.schema / "differences.json"
    if args.differences is not None and not diff_file.is_file():
        raise UsageError(f"{diff_file}: no such differences file")
    entries = load_differences(diff_file)
    unstable = locate(args.reference, getattr(args, "unstable", False)).unstable
    read = load_reference(args.reference, version, canonical, names_for(entries, version), unstable)
    reference = read.protocol
    found = findings(canonical, reference, entries, against_unstable=unstable, unsupported=read.unsupported)
    if args.format == "json":
        text = json_report(canonical, reference, found)
    elif args.format == "markdown":
        text = markdown_report(canonical, reference, found)
    else:
        text = text_report(canonical, reference, found, str(diff_file))
    out.write(text)
    return 1 if _fails(found, args.fail_on) else 0
