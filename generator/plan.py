"""The models' plan: the intermediate model lowered to what each generated definition is.

``plan_models(proto)`` turns a :class:`~generator.model.Protocol` into a
:class:`ModulePlan`: for every definition its class or alias name, and for
every property the attribute name, the annotation, the default, the
description and the wire rules the runtime enforces (tolerant markers,
not-null rule, discriminators). Every performance and wire-rule choice of the
models is made here, once; the renderer (``generator/render/models.py``) and
its templates only print what the plan says.

Annotations and defaults are Python source built from the model: names are
checked identifiers, and every literal taken from the schema (tags, enum
values, defaults, constants, patterns) is made with ``repr``, so schema text
is never spliced into code unquoted.

Order: definitions come out dependencies first. Starting from the definition
names in alphabetical order, each one is preceded by the definitions it names
that are not out yet (in the order it names them), so a reader meets every
name before its use and the order depends on nothing but the schema. A
reference back into a definition still being laid out (a recursive type) is a
forward reference: the whole annotation that holds one is written as a string
(``"Annotated[SelfRef | None, NOT_NULL]"``; quoting the name alone would make
``"SelfRef" | None`` a ``TypeError``), which pydantic evaluates in the module's
namespace when it builds the model on first use, after the module has run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Union

from generator.model import AliasType, EnumType, Field, ObjectType, Protocol, TypeDef, TypeExpr, UnionType

RUNTIME = "acp_types._runtime"
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# JSON Schema constraint -> pydantic Field keyword (format is dropped, see _constraint_args).
_CONSTRAINT_ARGS = {
    "minimum": "ge",
    "maximum": "le",
    "pattern": "pattern",
    "minLength": "min_length",
    "maxLength": "max_length",
    "minItems": "min_length",
    "maxItems": "max_length",
}
_SCALAR = {"string": "str", "integer": "JsonInt", "number": "int | float", "boolean": "bool"}


class PlanError(Exception):
    """The model holds something the plan cannot express: a bug in the generator's checks."""


@dataclass(frozen=True)
class FieldPlan:
    """One property of an object definition, as its attribute is written."""

    name: str
    """The attribute name (generator.naming.field_name of the wire name)."""
    wire_name: str
    annotation: str
    """Python source of the annotation, alias, constraints and markers included."""
    default: str | None
    """Python source of the default; None for a required property."""
    description: str
    required: bool
    omit_on_error: bool
    """x-acp-on-error: omit: a malformed value is treated as omitted (the default is read)."""
    skip_invalid_items: bool
    """x-acp-invalid-items: skip: invalid items of the array are dropped."""
    not_null: bool
    """Optional but the schema does not admit null: the attribute reads None when omitted, a wire null is invalid."""
    tag_default: str | None = None
    """Python source of the one value of a required single-value property (a union branch's tag): the
    constructor fills it in when it is left out, while on the wire the property stays required."""
    default_on_error: bool = False
    """x-acp-on-error: default (a required array): a malformed value reads as ``[]``, the field stays required."""


@dataclass(frozen=True)
class ClassPlan:
    """An object definition: one ``AcpModel`` subclass."""

    name: str
    description: str
    fields: tuple[FieldPlan, ...]
    attribute_spellings: tuple[str, ...]
    """Attribute names that differ from their wire names: as wire keys they are unknown keys (runtime slow path)."""
    forward_ref: bool
    """The class holds a forward reference (a quoted annotation, resolved when pydantic first builds it)."""
    kind: str = "class"
    required_one_of: tuple[str, ...] = ()
    """x-acp-required-one-of: attribute names of which at least one must be present (an after-validator)."""

    @property
    def multiline_description(self) -> bool:
        """The description spans lines: its docstring is written as one escaped literal, so
        ``__doc__`` holds the description verbatim (an indented block would not, before 3.13)."""
        return "\n" in self.description.strip() and any(f.description.strip() for f in self.fields)

    @property
    def tags(self) -> tuple[FieldPlan, ...]:
        """The fields the constructor fills in with their one value when left out."""
        return tuple(f for f in self.fields if f.tag_default is not None)

    @property
    def docstring(self) -> str:
        """The class docstring: the type's description, then one line per attribute (what ``help()`` shows)."""
        parts = [self.description.strip()] if self.description.strip() else []
        lines = [f"    {f.name}: {' '.join(f.description.split())}" for f in self.fields if f.description.strip()]
        if lines:
            parts.append("Attributes:\n" + "\n".join(lines))
        return "\n\n".join(parts)


@dataclass(frozen=True)
class AliasPlan:
    """A union, an enum or a plain alias: one ``TypeAliasType``."""

    name: str
    description: str
    annotation: str
    what: str
    """alias, enum, open-enum, union, open-union or presence-union."""
    kind: str = "alias"


DefinitionPlan = Union[ClassPlan, AliasPlan]  # noqa: UP007 (a runtime alias, 3.10 needs Union)


@dataclass(frozen=True)
class ModulePlan:
    version: str
    definitions: tuple[DefinitionPlan, ...]
    imports: tuple[tuple[str, tuple[str, ...]], ...]
    """(module, names) pairs, sorted."""

    def definition(self, name: str) -> DefinitionPlan:
        for d in self.definitions:
            if d.name == name:
                return d
        raise KeyError(name)


# ---------------------------------------------------------------- lowering


class _Planner:
    def __init__(self, proto: Protocol):
        self.proto = proto
        self.imports: dict[str, set[str]] = {}
        self.emitted: set[str] = set()
        self.active: set[str] = set()
        self.forward: set[str] = set()  # definitions that hold a forward reference
        self.quote = False  # the annotation being built holds a forward reference
        self.cyclic = _cyclic(proto)

    def need(self, module: str, *names: str) -> None:
        self.imports.setdefault(module, set()).update(names)

    # -- order

    def order(self) -> list[TypeDef]:
        out: list[TypeDef] = []
        done: set[str] = set()
        stack: set[str] = set()

        def visit(t: TypeDef) -> None:
            if t.name in done or t.name in stack:
                return
            stack.add(t.name)
            for name in _names_used(t):
                if self.proto.has_type(name):
                    visit(self.proto.type(name))
            stack.discard(t.name)
            done.add(t.name)
            out.append(t)

        for t in sorted(self.proto.types, key=lambda t: t.name):
            visit(t)
        return out

    # -- names and annotations

    def ref(self, name: str, holder: str) -> str:
        if not _IDENT.match(name):
            raise PlanError(f"{name!r} is not an identifier")
        if name not in self.emitted:
            self.forward.add(holder)
            self.quote = True
        return name

    def quoted(self, annotation: str) -> str:
        """``annotation``, written as a string if it holds a forward reference (then the flag is reset)."""
        if not self.quote:
            return annotation
        self.quote = False
        return repr(annotation)

    def annotation(self, texpr: TypeExpr, holder: str, *, skip_items: bool = False, top: bool = False) -> str:
        """The annotation of ``texpr``; constraints of nested expressions go into an inner ``Field``."""
        inner = self._bare(texpr, holder, skip_items)
        if not top:
            args = _constraint_args(texpr)
            if args:
                self.need("typing", "Annotated")
                self.need("pydantic", "Field")
                inner = f"Annotated[{inner}, Field({', '.join(args)})]"
        return inner

    def _bare(self, texpr: TypeExpr, holder: str, skip_items: bool = False) -> str:
        kind = texpr.kind
        if kind == "ref":
            text = self.ref(texpr.name or "", holder)
        elif kind == "scalar":
            names = (texpr.name or "").split(" | ")
            parts = []
            for n in names:
                if n == "array":
                    self.need("typing", "Annotated")
                    self.need(RUNTIME, "FAIL_FAST")
                    parts.append(
                        f"Annotated[list[{self.annotation(texpr.items, holder) if texpr.items else 'Any'}], FAIL_FAST]"
                    )
                    if texpr.items is None:
                        self.need("typing", "Any")
                else:
                    if n == "integer":
                        # JSON Schema counts 1.0 as an integer; strict pydantic does not
                        self.need(RUNTIME, "JsonInt")
                    parts.append(_SCALAR[n])
            text = " | ".join(parts)
        elif kind == "const":
            self.need("typing", "Literal")
            text = f"Literal[{texpr.const!r}]"
        elif kind == "array":
            item = self.annotation(texpr.items, holder) if texpr.items else "Any"
            if texpr.items is None:
                self.need("typing", "Any")
            if skip_items:
                self.need("pydantic", "OnErrorOmit")
                item = f"OnErrorOmit[{item}]"
            # an error report names the first invalid item only, so its size is bounded
            self.need("typing", "Annotated")
            self.need(RUNTIME, "FAIL_FAST")
            text = f"Annotated[list[{item}], FAIL_FAST]"
        elif kind == "map":
            if texpr.items is None:
                self.need("typing", "Any")
            self.need("typing", "Annotated")
            self.need(RUNTIME, "FAIL_FAST")
            text = f"Annotated[dict[str, {self.annotation(texpr.items, holder) if texpr.items else 'Any'}], FAIL_FAST]"
        elif kind == "null":
            return "None"
        else:
            self.need("typing", "Any")
            return "Any"
        return f"{text} | None" if texpr.nullable else text

    # -- definitions

    def plan_object(self, t: ObjectType) -> ClassPlan:
        fields = tuple(self.plan_field(t, f) for f in t.fields)
        spellings = tuple(sorted({f.py_name for f in t.fields if f.py_name != f.wire_name}))
        if spellings:
            self.need(RUNTIME, "WireKey")
            self.need("typing", "Annotated", "Any")
            self.need("pydantic", "Field")
        one_of: tuple[str, ...] = ()
        if t.required_one_of:
            by_wire = {f.wire_name: f.py_name for f in t.fields}
            one_of = tuple(by_wire[k] for k in t.required_one_of)
            self.need("pydantic", "model_validator")
            self.need(RUNTIME, "required_one_of")
        return ClassPlan(t.name, t.description, fields, spellings, t.name in self.forward, required_one_of=one_of)

    def plan_field(self, t: ObjectType, f: Field) -> FieldPlan:
        ann = self.annotation(f.type, t.name, skip_items=f.skip_invalid_items, top=True)
        not_null = False
        if not f.required:
            not_null = not _admits_null(self.proto, f.type)
            if f.type.kind != "any" and not ann.endswith("| None") and ann != "None":
                ann = f"{ann} | None"
        args = []
        if f.py_name != f.wire_name:
            args.append(f"alias={f.wire_name!r}")
        args += _constraint_args(f.type)
        extras = []
        if args:
            self.need("pydantic", "Field")
            extras.append(f"Field({', '.join(args)})")
        if not_null:
            self.need(RUNTIME, "NOT_NULL")
            extras.append("NOT_NULL")
        if f.on_error_omit:
            self.need(RUNTIME, "OMIT_ON_ERROR")
            extras.append("OMIT_ON_ERROR")
        if f.on_error_default:
            self.need(RUNTIME, "DEFAULT_ON_ERROR")
            extras.append("DEFAULT_ON_ERROR")
        if extras:
            self.need("typing", "Annotated")
            ann = f"Annotated[{ann}, {', '.join(extras)}]"
        default = None
        if not f.required:
            default = repr(f.default) if f.has_default else "None"
        tag_default = None
        if f.required and f.type.kind == "const" and not f.type.nullable:
            tag_default = repr(f.type.const)
            self.need("typing", "TYPE_CHECKING")
        return FieldPlan(
            f.py_name,
            f.wire_name,
            self.quoted(ann),
            default,
            f.description,
            f.required,
            f.on_error_omit,
            f.skip_invalid_items,
            not_null,
            tag_default,
            f.on_error_default,
        )

    def plan_union(self, u: UnionType) -> AliasPlan:
        self.need("typing", "Annotated", "Union")
        members = ", ".join(self.ref(v.name, u.name) for v in u.variants)
        if u.presence is not None:
            # Which key is present decides; exactly one must be. No tag to look up natively.
            # Written back by the value's own class, like every union: a branch
            # whose tolerant field was dropped would fail the branch check and
            # warn, then be written by inference.
            self.need("pydantic", "Discriminator", "Tag", "SerializeAsAny")
            self.need(RUNTIME, "presence_discriminator")
            keys = {key: branch for key, branch in u.presence}
            tagged = ", ".join(f"Annotated[{self.ref(v.name, u.name)}, Tag({v.name!r})]" for v in u.variants)
            first = ", first=True" if u.overlap_first else ""  # "overlap": "first"
            return AliasPlan(
                u.name,
                u.description,
                self.quoted(
                    f"Annotated[Union[{tagged}], Discriminator(presence_discriminator({keys!r}{first})), "
                    "SerializeAsAny()]"
                ),
                "presence-union",
            )
        assert u.tag is not None
        attr = _tag_attr(self.proto, u)
        self.need("pydantic", "SerializeAsAny")
        nested = any(not isinstance(self.proto.type(v.name), ObjectType) for v in u.variants)
        # pydantic drops a field-name discriminator from a union on a cycle of
        # definitions (reached again through a model it is still building) and
        # silently tries the branches in turn; a callable discriminator holds.
        if not u.open and u.default is None and not nested and u.name not in self.cyclic:
            # Every branch carries its tag: pydantic-core looks the tag up itself.
            self.need("pydantic", "Field")
            return AliasPlan(
                u.name,
                u.description,
                self.quoted(f"Annotated[Union[{members}], Field(discriminator={attr!r}), SerializeAsAny()]"),
                "union",
            )
        # Open unions, default branches and nested unions: the tag is looked up by
        # tag_discriminator (one Python call per union), never by trying branches.
        self.need("pydantic", "Discriminator", "Tag")
        self.need(RUNTIME, "tag_discriminator")
        branches: list[str] = []
        default_tag = "None"
        for v in u.variants:
            # An untagged default branch goes by its class name: that is what an
            # error's location shows, and no wire tag can reach it (the
            # discriminator returns only known wire tags, the default and the unknown tag).
            ptag = repr(v.tag) if v.tag is not None else repr(v.name)
            if v.name == u.default:
                default_tag = ptag
            branches.append(f"Annotated[{self.ref(v.name, u.name)}, Tag({ptag})]")
        if u.open:
            self.need(RUNTIME, "UnknownVariant", "UNKNOWN_TAG")
            branches.append("Annotated[UnknownVariant, Tag(UNKNOWN_TAG)]")
        known = sorted(v.tag for v in u.variants if v.tag is not None)
        hooks = ""  # x-acp-union "unknown" / "unknownRequired", written only when set
        if u.unknown_default:
            hooks += ", unknown_default=True"
        if u.unknown_required:
            hooks += f", unknown_required={u.unknown_required!r}"
        disc = (
            f"tag_discriminator({u.tag!r}, {attr!r}, frozenset({known!r}), "
            f"open={u.open!r}, default={default_tag}{hooks})"
        )
        return AliasPlan(
            u.name,
            u.description,
            self.quoted(f"Annotated[Union[{', '.join(branches)}], Discriminator({disc}), SerializeAsAny()]"),
            "open-union" if u.open else "union",
        )

    def plan_enum(self, e: EnumType) -> AliasPlan:
        self.need("typing", "Literal")
        literals = ", ".join(repr(v) for v in e.values)
        if not e.open:
            return AliasPlan(e.name, e.description, f"Literal[{literals}]", "enum")
        self.need("typing", "Annotated", "Union")
        self.need("pydantic", "Field")
        return AliasPlan(
            e.name,
            e.description,
            f'Annotated[Union[Literal[{literals}], str], Field(union_mode="left_to_right")]',
            "open-enum",
        )

    def plan_alias(self, a: AliasType) -> AliasPlan:
        ann = self.annotation(a.type, a.name, top=True)
        args = _constraint_args(a.type)
        if args:
            self.need("typing", "Annotated")
            self.need("pydantic", "Field")
            ann = f"Annotated[{ann}, Field({', '.join(args)})]"
        if a.same_kind:  # x-acp-same-kind: every item of one union branch
            self.need("typing", "Annotated")
            self.need("pydantic", "AfterValidator")
            self.need(RUNTIME, "same_kind")
            ann = f"Annotated[{ann}, AfterValidator(same_kind)]"
        return AliasPlan(a.name, a.description, self.quoted(ann), "alias")

    def plan(self) -> ModulePlan:
        out: list[DefinitionPlan] = []
        self.need(RUNTIME, "AcpModel")
        for t in self.order():
            if isinstance(t, ObjectType):
                d: DefinitionPlan = self.plan_object(t)
            elif isinstance(t, UnionType):
                d = self.plan_union(t)
            elif isinstance(t, EnumType):
                d = self.plan_enum(t)
            else:
                d = self.plan_alias(t)
            if not isinstance(d, ClassPlan):
                self.need("typing_extensions", "TypeAliasType")
            self.emitted.add(t.name)
            out.append(d)
        # Forward references found after a class was planned (cycles through aliases) still mark it.
        out = [replace(d, forward_ref=d.name in self.forward) if isinstance(d, ClassPlan) else d for d in out]
        imports = tuple((m, tuple(sorted(n))) for m, n in sorted(self.imports.items()))
        return ModulePlan(self.proto.version, tuple(out), imports)


def _names_used(t: TypeDef) -> list[str]:
    if isinstance(t, ObjectType):
        return [name for f in t.fields for name in f.type.refs()]
    if isinstance(t, UnionType):
        return [v.name for v in t.variants] + ([t.default] if t.default else [])
    if isinstance(t, AliasType):
        return t.type.refs()
    return []


def _cyclic(proto: Protocol) -> frozenset[str]:
    """The definitions that lie on a cycle: each reaches itself through the names it uses."""
    uses = {t.name: [n for n in _names_used(t) if proto.has_type(n)] for t in proto.types}
    out = set()
    for start in uses:
        seen: set[str] = set()
        todo = list(uses[start])
        while todo:
            name = todo.pop()
            if name == start:
                out.add(start)
                break
            if name not in seen:
                seen.add(name)
                todo.extend(uses[name])
    return frozenset(out)


def _constraint_args(texpr: TypeExpr) -> list[str]:
    """pydantic ``Field`` keywords for the expression's own constraints.

    ``format`` goes: a model that parsed a URI or a date into an object would
    not write the same text back. ``uniqueItems`` is left to the JSON Schema.
    """
    return [f"{_CONSTRAINT_ARGS[k]}={v!r}" for k, v in texpr.constraints if k in _CONSTRAINT_ARGS]


def _tag_attr(proto: Protocol, u: UnionType) -> str:
    for v in u.variants:
        t = proto.type(v.name)
        if isinstance(t, ObjectType):
            f = t.field(u.tag or "")
            if f is not None:
                return f.py_name
    return u.tag or ""


def _admits_null(proto: Protocol, texpr: TypeExpr, seen: frozenset[str] = frozenset()) -> bool:
    """Whether a property type accepts ``null`` (nullable, any JSON value, or an alias of such)."""
    if texpr.nullable or texpr.kind in ("any", "null"):
        return True
    if texpr.kind == "ref" and texpr.name and texpr.name not in seen:
        target = proto.type(texpr.name)
        if isinstance(target, AliasType):
            return _admits_null(proto, target.type, seen | {texpr.name})
    return False


def plan_models(proto: Protocol) -> ModulePlan:
    """Lower one version's intermediate model to the plan of its ``models.py``."""
    return _Planner(proto).plan()


__all__ = ["AliasPlan", "ClassPlan", "DefinitionPlan", "FieldPlan", "ModulePlan", "PlanError", "plan_models"]
