"""Pydantic models of one version: the plan, printed by datamodel-code-generator.

The plan (``generator/plan.py``) decides everything about each definition.
Here each planned definition becomes one of datamodel-code-generator's own
model objects (a pydantic v2 ``BaseModel`` or a ``TypeAliasType`` alias),
which renders itself through our overrides in ``templates/dcg``; those
templates read the plan only. The module is the header, the plan's imports
and the definitions in the plan's order.

Shared annotations: an annotation that several classes of the module use
(the ``_meta`` field's, the key check of the same unknown-key spellings...)
is built once, as a module-level name placed before the first class that
uses it, and the classes name it (:func:`shared_annotations`). The objects
are the same ones the inline annotations would build, so pydantic sees the
same fields; the import builds far fewer typing objects and ``Field()``
infos. The name is made from the annotation's text alone, so a definition
that is identical in two versions prints identically in both.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from generator.model import Protocol
from generator.plan import AliasPlan, ClassPlan, DefinitionPlan, FieldPlan, ModulePlan, plan_models
from generator.render.templated import docstring

# Standard library first, then third-party, then the package's own runtime.
_IMPORT_GROUPS = {"typing": 0, "acp_types._runtime": 2}
TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "templates" / "dcg"

SHARED_PREFIX = "_A_"
"""Names of shared annotations start with this (models.py has no other name of this form)."""
_WORD = re.compile(r"[A-Za-z0-9]+")
_NOISE = {"Annotated", "Field", "alias", "dict", "Any"}


def extra_annotation(plan: ClassPlan) -> str | None:
    """The annotation of the class's ``__pydantic_extra__`` (the key check of its unknown keys), if it has one."""
    if not plan.attribute_spellings:
        return None
    return f"dict[Annotated[str, WireKey({', '.join(repr(name) for name in plan.attribute_spellings)})], Any]"


def _runtime_annotations(d: DefinitionPlan) -> list[str]:
    """The annotations a class body evaluates when the module runs (a tag field's ``else:`` branch only)."""
    if not isinstance(d, ClassPlan) or d.forward_ref:  # a quoted annotation stays with its class
        return []
    extra = extra_annotation(d)
    return ([extra] if extra else []) + [f.annotation for f in d.fields]


def shared_name(annotation: str) -> str:
    """The module-level name of a shared annotation: a few of its words and a digest of its text."""
    words = [w for w in _WORD.findall(annotation) if w not in _NOISE]
    stem = "_".join(words)[:32].strip("_")
    return f"{SHARED_PREFIX}{stem}_{hashlib.sha256(annotation.encode()).hexdigest()[:6]}"


def shared_annotations(plan: ModulePlan) -> dict[str, str]:
    """Annotation source -> module-level name, for every annotation that more than one field evaluates."""
    counts = Counter(a for d in plan.definitions for a in _runtime_annotations(d) if not a.isidentifier())
    taken = {d.name for d in plan.definitions} | {n for _, names in plan.imports for n in names}
    shared: dict[str, str] = {}
    for annotation in sorted(a for a, n in counts.items() if n > 1):
        name = shared_name(annotation)
        if name in taken:  # a definition spelled like one: keep the annotation inline
            continue
        taken.add(name)
        shared[annotation] = name
    return shared


def _dcg_model(d: DefinitionPlan, shared: dict[str, str]) -> Any:
    """datamodel-code-generator's model object for one planned definition."""
    from datamodel_code_generator.model.pydantic_v2 import BaseModel
    from datamodel_code_generator.model.pydantic_v2.base_model import DataModelField
    from datamodel_code_generator.model.type_alias import TypeAliasTypeBackport
    from datamodel_code_generator.reference import Reference
    from datamodel_code_generator.types import DataType

    data: defaultdict[str, dict[str, Any]] = defaultdict(dict)
    data[d.name] = {"plan": d, "doc": docstring, "py": repr}
    reference = Reference(path=f"#/$defs/{d.name}", original_name=d.name, name=d.name)
    if isinstance(d, ClassPlan):
        names = shared if not d.forward_ref else {}
        extra = extra_annotation(d)

        def annotation(f: FieldPlan) -> str:
            return names.get(f.annotation, f.annotation)

        data[d.name].update(extra=extra and names.get(extra, extra), annotation=annotation)
        fields: list[Any] = [
            DataModelField(name=f.name, data_type=DataType(type=f.annotation), required=f.required, alias=None)
            for f in d.fields
        ]
        return BaseModel(
            reference=reference,
            fields=fields,
            custom_template_dir=TEMPLATE_DIR,
            extra_template_data=data,
            base_classes=[],
        )
    assert isinstance(d, AliasPlan)
    field = DataModelField(data_type=DataType(type=d.annotation), required=True)
    return TypeAliasTypeBackport(
        reference=reference, fields=[field], custom_template_dir=TEMPLATE_DIR, extra_template_data=data
    )


def render_plan(plan: ModulePlan, header: str) -> str:
    """The text of ``acp_types/<version>/models.py`` for ``plan`` (not yet formatted by black)."""
    parts = [header, ""]
    for module, names in sorted(plan.imports, key=lambda item: (_IMPORT_GROUPS.get(item[0], 1), item[0])):
        parts.append(f"from {module} import {', '.join(names)}")
    shared = shared_annotations(plan)
    defined: set[str] = set()
    for d in plan.definitions:
        new = [a for a in dict.fromkeys(_runtime_annotations(d)) if a in shared and a not in defined]
        if new:
            lines = [f"{shared[a]} = {a}" for a in new]
            if not defined:
                lines.insert(0, "# Annotations several classes use, each built once (see generator/render/models.py).")
            parts += ["", ""] + lines
            defined.update(new)
        parts += ["", "", str(_dcg_model(d, shared).render(class_name=d.name))]
    return "\n".join(parts) + "\n"


def render_models(proto: Protocol, header: str) -> str:
    """The text of ``acp_types/<version>/models.py`` (not yet formatted by black)."""
    return render_plan(plan_models(proto), header)
