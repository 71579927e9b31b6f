"""Pydantic models of one version: the plan, printed by datamodel-code-generator.

The plan (``generator/plan.py``) decides everything about each definition.
Here each planned definition becomes one of datamodel-code-generator's own
model objects (a pydantic v2 ``BaseModel`` or a ``TypeAliasType`` alias),
which renders itself through our overrides in ``templates/dcg``; those
templates read the plan only. The module is the header, the plan's imports
and the definitions in the plan's order.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from generator.model import Protocol
from generator.plan import AliasPlan, ClassPlan, DefinitionPlan, ModulePlan, plan_models
from generator.render.templated import docstring

# Standard library first, then third-party, then the package's own runtime.
_IMPORT_GROUPS = {"typing": 0, "acp_types._runtime": 2}
TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "templates" / "dcg"


def _dcg_model(d: DefinitionPlan) -> Any:
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
        fields: list[Any] = [
            DataModelField(name=f.name, data_type=DataType(type=f.annotation), required=f.required, alias=None)
            for f in d.fields
        ]
        return BaseModel(reference=reference, fields=fields, custom_template_dir=TEMPLATE_DIR,
                         extra_template_data=data, base_classes=[])
    assert isinstance(d, AliasPlan)
    field = DataModelField(data_type=DataType(type=d.annotation), required=True)
    return TypeAliasTypeBackport(reference=reference, fields=[field], custom_template_dir=TEMPLATE_DIR,
                                 extra_template_data=data)


def render_plan(plan: ModulePlan, header: str) -> str:
    """The text of ``acp_types/<version>/models.py`` for ``plan`` (not yet formatted by black)."""
    parts = [header, ""]
    for module, names in sorted(plan.imports, key=lambda item: (_IMPORT_GROUPS.get(item[0], 1), item[0])):
        parts.append(f"from {module} import {', '.join(names)}")
    for d in plan.definitions:
        parts += ["", "", str(_dcg_model(d).render(class_name=d.name))]
    if plan.rebuild:
        parts += ["", ""] + [f"{name}.model_rebuild()" for name in plan.rebuild]
    return "\n".join(parts) + "\n"


def render_models(proto: Protocol, header: str) -> str:
    """The text of ``acp_types/<version>/models.py`` (not yet formatted by black)."""
    return render_plan(plan_models(proto), header)
