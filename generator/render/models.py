"""Pydantic models of one version, through datamodel-code-generator.

datamodel-code-generator reads the bundled definitions; our templates in
``templates/dcg`` override its model and alias templates, and everything ACP
adds (discriminators, open unions and enums, tolerant receivers) reaches them
as extra template data computed here from the intermediate model. Every Python
literal in that data is made with ``repr``, so schema text never becomes code.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from generator.model import AliasType, EnumType, ObjectType, Protocol, TypeExpr, UnionType
from generator.render.templated import docstring

TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "templates" / "dcg"
RUNTIME = "acp_types._runtime"


def _dcg_input(proto: Protocol) -> dict[str, Any]:
    """The definitions as datamodel-code-generator should see them."""
    defs = {}
    for t in proto.types:
        schema = proto.bundle["$defs"][t.name]
        if isinstance(t, UnionType):
            schema = {"description": t.description, "oneOf": [{"$ref": f"#/$defs/{v.name}"} for v in t.variants]}
        elif isinstance(t, ObjectType) and t.required_one_of:
            schema = {k: v for k, v in schema.items() if k != "anyOf"}  # the hook checks it (acp_required_one_of)
        elif isinstance(t, AliasType) and t.same_kind:
            schema = {k: v for k, v in schema.items() if k != "allOf"}  # the hook checks it (acp_same_kind)
        defs[t.name] = _strip_markers(schema)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": defs}


def _strip_markers(node: Any) -> Any:
    """Drop what the models must not act on.

    ``x-acp-*`` markers reach the templates as extra data instead. ``format``
    goes because a model that parsed a URI or a date into an object would not
    write the same text back; a ``number`` also accepts an integer as itself,
    so ``1`` is not written back as ``1.0``.
    """
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key.startswith("x-acp-") or key == "format":
                continue
            if key in ("properties", "$defs"):
                out[key] = {name: _strip_markers(sub) for name, sub in value.items()}
            else:
                out[key] = _strip_markers(value)
        if out.get("type") == "number":
            out["type"] = ["integer", "number"]
        elif isinstance(out.get("type"), list) and "number" in out["type"] and "integer" not in out["type"]:
            out["type"] = ["integer", *out["type"]]
        return out
    if isinstance(node, list):
        return [_strip_markers(v) for v in node]
    return node


def _union_data(proto: Protocol, u: UnionType) -> dict[str, Any]:
    if u.presence is not None:
        keys = {key: branch for key, branch in u.presence}
        variants = [{"cls": v.name, "tag": repr(v.name)} for v in u.variants]
        first = ", first=True" if u.overlap_first else ""
        disc = f"presence_discriminator({keys!r}{first})"
    else:
        assert u.tag is not None
        variants = []
        default_tag = "None"  # Python source of the pydantic tag used when the tag is absent
        for v in u.variants:
            ptag = repr(v.tag) if v.tag is not None else "DEFAULT_TAG"
            if v.name == u.default:
                default_tag = ptag
            variants.append({"cls": v.name, "tag": ptag})
        known = sorted(v.tag for v in u.variants if v.tag is not None)
        tag_field = _tag_attr(proto, u)
        nested = any(not isinstance(proto.type(v.name), ObjectType) for v in u.variants)
        if not u.open and u.default is None and not nested:
            # A closed union whose branches all carry their tag: pydantic-core
            # looks the tag up itself, with no Python call per message.
            plain = [{"cls": v.name} for v in u.variants]
            return {"acp_union": {"variants": plain, "native": repr(tag_field)}}
        if u.open:
            variants.append({"cls": "UnknownVariant", "tag": "UNKNOWN_TAG"})
        hooks = ""  # the schema hooks of issue 12, written only when set so other unions render as before
        if u.unknown_default:
            hooks += ", unknown_default=True"
        if u.unknown_required:
            hooks += f", unknown_required={u.unknown_required!r}"
        disc = (
            f"tag_discriminator({u.tag!r}, {tag_field!r}, frozenset({known!r}), "
            f"open={u.open!r}, default={default_tag}{hooks})"
        )
    return {"acp_union": {"variants": variants, "discriminator": disc}}


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


def template_data(proto: Protocol) -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = {}
    for t in proto.types:
        indent = 4 if isinstance(t, ObjectType) else 0
        data[t.name] = {"acp_doc": docstring(t.description, indent) if t.description else ""}
        if isinstance(t, UnionType):
            data[t.name].update(_union_data(proto, t))
        elif isinstance(t, EnumType) and t.open:
            data[t.name].update({"acp_open_enum": {"literals": ", ".join(repr(v) for v in t.values)}})
        elif isinstance(t, AliasType) and t.same_kind:
            data[t.name]["acp_same_kind"] = True  # issue 12 hook: every item of one union branch
        elif isinstance(t, ObjectType):
            if t.required_one_of:  # issue 12 hook: at least one of these wire keys
                data[t.name]["acp_required_one_of"] = repr(t.required_one_of)
            not_null = [f.py_name for f in t.fields if not f.required and not _admits_null(proto, f.type)]
            if not_null:
                data[t.name]["acp_not_null"] = not_null
            tolerant = [f for f in t.fields if f.tolerant]
            if tolerant:
                items = "".join(
                    f"TolerantField({f.wire_name!r}, {f.py_name!r}, {f.on_error_omit!r}, {f.skip_invalid_items!r}"
                    f"{', default_on_error=True' if f.on_error_default else ''}), "
                    for f in tolerant
                )
                data[t.name]["acp_tolerant"] = f"({items})"
    return data


def _imports(proto: Protocol) -> list[str]:
    need = set()
    for t in proto.types:
        if isinstance(t, UnionType):
            need |= {"typing.Union", "typing.Annotated", "pydantic.Tag", "pydantic.Discriminator"}
            need.add(f"{RUNTIME}.presence_discriminator" if t.presence is not None else f"{RUNTIME}.tag_discriminator")
            if t.open:
                need |= {f"{RUNTIME}.UnknownVariant", f"{RUNTIME}.UNKNOWN_TAG"}
            if any(v.tag is None for v in t.variants) and t.presence is None:
                need.add(f"{RUNTIME}.DEFAULT_TAG")
        elif isinstance(t, EnumType) and t.open:
            need |= {"typing.Union", "typing.Annotated", "typing.Literal", "pydantic.Field"}
        elif isinstance(t, AliasType) and t.same_kind:
            need |= {"typing.Annotated", "pydantic.AfterValidator", f"{RUNTIME}.same_kind"}
        elif isinstance(t, ObjectType):
            if t.required_one_of:
                need.add("typing.ClassVar")
            if any(f.tolerant for f in t.fields):
                need |= {"typing.ClassVar", f"{RUNTIME}.TolerantField"}
            if any(not f.required and not _admits_null(proto, f.type) for f in t.fields):
                need |= {"typing.Annotated", f"{RUNTIME}.NOT_NULL"}
    return sorted(need)


def field_aliases(proto: Protocol) -> dict[str, str]:
    """Wire name -> attribute name, one rule for every property (generator.naming)."""
    out: dict[str, str] = {}
    for t in proto.types:
        if isinstance(t, ObjectType):
            for f in t.fields:
                if f.py_name != f.wire_name:
                    out[f.wire_name] = f.py_name
    return dict(sorted(out.items()))


def render_models(proto: Protocol, header: str) -> str:
    """The text of ``acp_types/<version>/models.py`` (not yet formatted by black)."""
    from datamodel_code_generator import DataModelType, InputFileType, PythonVersion, generate
    from datamodel_code_generator.format import Formatter

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = generate(
            json.dumps(_dcg_input(proto)),
            input_file_type=InputFileType.JsonSchema,
            output_model_type=DataModelType.PydanticV2BaseModel,
            target_python_version=PythonVersion.PY_310,
            base_class=f"{RUNTIME}.AcpModel",
            custom_template_dir=TEMPLATE_DIR,
            extra_template_data=template_data(proto),
            additional_imports=_imports(proto),
            aliases=field_aliases(proto),
            snake_case_field=True,
            use_annotated=True,
            use_standard_collections=True,
            use_union_operator=True,
            use_type_alias=True,
            use_schema_description=True,
            use_field_description=True,
            use_double_quotes=True,
            enum_field_as_literal="all",
            skip_root_model=True,
            disable_timestamp=True,
            custom_file_header=header,
            disable_future_imports=True,
            formatters=[Formatter.ISORT],
        )
    assert isinstance(out, str)
    return out
