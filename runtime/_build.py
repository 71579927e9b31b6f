"""When and how the models' validators and serializers are built.

The models are created with ``defer_build``: importing a version creates 200-odd
classes but builds no validator, so the import stays cheap. A class is
completed the first time it is needed (a message of its type, a value of its
type written back), through :meth:`AcpModel.model_rebuild`, which calls
:func:`complete` here.

:func:`complete` does what pydantic's own completion does for a model class
(generate its core schema, build its validator and serializer, set its
signature), but builds the validator with pydantic-core directly instead of
through pydantic's plugin hook: that hook imports ``importlib.metadata`` and
scans every installed distribution for ``pydantic`` entry points the first
time any validator is built, which was most of the cost of the first message
after import. Consequently pydantic plugins (an observability tool
installed in the environment, say) do not wrap these models' validators; the
user's own models are untouched, and nothing in the process's environment or
in pydantic's state changes.

It uses pydantic's schema generation (``pydantic._internal``, the same calls
pydantic's ``model_rebuild`` makes, pinned in requirements.txt). When that is
not available or not applicable (another pydantic, a model that is not
complete), :func:`complete` returns ``False`` and the caller falls back to
pydantic's own ``model_rebuild``, so the worst case is the old speed, never
a different result.

Hand-written: the source is runtime/_build.py, which the generator copies into
the package unchanged.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import Any

from pydantic_core import SchemaSerializer, SchemaValidator

from ._runtime import model_nodes

_LOCK = threading.RLock()

_FOUND: dict[Any, Any] = {}
"""Core schemas of classes not completed yet, as they appeared inside a completed class's schema.

pydantic generates the schema of every model a class contains; a value
written back by its own class (``SerializeAsAny``) then needs each of those
classes completed too, and their schemas are already here.
"""


def complete(cls: Any) -> bool:
    """Complete the model class ``cls`` without pydantic's plugin lookup; ``False`` when it cannot here.

    On ``False`` nothing about ``cls`` has changed.
    """
    try:
        from pydantic._internal._config import ConfigWrapper
        from pydantic._internal._generate_schema import GenerateSchema
        from pydantic._internal._model_construction import unpack_lenient_weakvaluedict
        from pydantic._internal._namespace_utils import NsResolver
        from pydantic._internal._signature import generate_pydantic_signature
        from pydantic._internal._utils import LazyClassAttribute
    except ImportError:  # a pydantic whose internals moved: use its own model_rebuild
        return False
    with _LOCK:
        if cls.__pydantic_complete__:
            return True
        if (
            not cls.__pydantic_fields_complete__
            or cls.__pydantic_decorators__.computed_fields
            or cls.__pydantic_generic_metadata__["origin"] is not None
            or any(f.deprecated is not None for f in cls.__pydantic_fields__.values())
        ):
            return False
        try:
            config = ConfigWrapper(cls.model_config, check=False)
            parent = unpack_lenient_weakvaluedict(cls.__pydantic_parent_namespace__) or {}
            schema = _FOUND.pop(cls, None)
            if schema is None:
                generate = GenerateSchema(config, NsResolver(parent_namespace=parent))
                schema = generate.clean_schema(generate.generate_schema(cls))
            core_config = config.core_config(title=cls.__name__)
            validator = SchemaValidator(schema, core_config)
            serializer = SchemaSerializer(schema, core_config)
        except Exception:  # pydantic's own path raises the error the user should see
            return False
        cls.__pydantic_core_schema__ = schema
        cls.__pydantic_validator__ = validator
        cls.__pydantic_serializer__ = serializer
        cls.__signature__ = LazyClassAttribute(
            "__signature__",
            partial(
                generate_pydantic_signature,
                init=cls.__init__,
                fields=cls.__pydantic_fields__,
                validate_by_alias=config.validate_by_alias,
                extra=config.extra,
            ),
        )
        cls.__pydantic_complete__ = True
        _note_contained(schema)
        hook = getattr(cls, "__pydantic_on_complete__", None)
        if hook is not None:
            hook()
        return True


def _note_contained(schema: Any) -> None:
    """Keep the schema of each incomplete model class inside ``schema`` for when that class completes."""
    definitions = schema.get("definitions") if schema.get("type") == "definitions" else None
    for node in model_nodes(schema):
        contained = node["cls"]
        if not contained.__dict__.get("__pydantic_complete__") and contained not in _FOUND:
            # a definition-ref inside it points into the outer schema's definitions
            _FOUND[contained] = (
                node
                if definitions is None
                else {"type": "definitions", "schema": node, "definitions": definitions}
            )
