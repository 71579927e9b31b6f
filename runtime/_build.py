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

The core schema itself is not generated at run time when it can be helped:
the generator records every model class's schema on a fresh import of the
package it has just rendered (``generator/core_schemas.py``) into
``acp_types.<version>._core_schemas_<n>``, and :func:`complete` takes it from
there (:func:`stored`) when the installed pydantic and pydantic-core are the
versions recorded, loading only the one module that holds the class's entry.
So a first message generates no schema: it loads one entry, builds the
serializer of its class and the entry point's bounded validator, and nothing
else; the class's own validator is built on its first validation (writing a
value back needs none). Otherwise the schema is generated as before, with the
same result (tests/test_core_schemas.py compares every entry with pydantic's
schema of the class).

Hand-written: the source is runtime/_build.py, which the generator copies into
the package unchanged.
"""

from __future__ import annotations

import marshal
import sys
import threading
from functools import partial
from typing import Any

from pydantic_core import SchemaSerializer, SchemaValidator

from ._runtime import _key_check, _ModelValidator, model_nodes, own_schemas

_LOCK = threading.RLock()

_FOUND: dict[Any, Any] = {}
"""Core schemas of classes not completed yet, as they appeared inside a completed class's schema.

pydantic generates the schema of every model a class contains; a value
written back by its own class (``SerializeAsAny``) then needs each of those
classes completed too, and their schemas are already here. Each is kept as
``(node, definitions, validator needs, serializer needs)`` (see
:func:`_found_schemas`), made into schemas only when the class completes.
"""


def complete(cls: Any) -> bool:
    """Complete the model class ``cls`` without pydantic's plugin lookup; ``False`` when it cannot here.

    The core schema is, in this order: the one pydantic already generated for
    ``cls`` inside a completed class (:data:`_FOUND`), the one stored at
    generation time (:func:`stored`), or pydantic's schema generation run now.
    The serializer is built at once; the class's own validator on its first
    validation (a value written back needs none). On ``False`` nothing about
    ``cls`` has changed.
    """
    return _complete(cls)[0]


_INTERNALS: list[Any] = []
"""The parts of ``pydantic._internal`` that :func:`_complete` uses, once found."""


def _internals() -> Any:
    """``(ConfigWrapper, unpack_lenient_weakvaluedict, generate_pydantic_signature, LazyClassAttribute)``, or ``None``.

    ``None`` when this pydantic's internals are not where they were (then
    pydantic's own ``model_rebuild`` runs); looked up again each time until
    found, so that a test can hide them.
    """
    if _INTERNALS:
        return _INTERNALS[0]
    try:
        from pydantic._internal._config import ConfigWrapper
        from pydantic._internal._model_construction import unpack_lenient_weakvaluedict
        from pydantic._internal._signature import generate_pydantic_signature
        from pydantic._internal._utils import LazyClassAttribute
    except ImportError:  # a pydantic whose internals moved: use its own model_rebuild
        return None
    found = (ConfigWrapper, unpack_lenient_weakvaluedict, generate_pydantic_signature, LazyClassAttribute)
    _INTERNALS.append(found)
    return found


def _complete(cls: Any) -> tuple[bool, Any]:
    """:func:`complete`, and the stored bounded schema of ``cls`` when it was completed from its entry here."""
    internals = _internals()
    if internals is None:
        return False, None
    ConfigWrapper, unpack_lenient_weakvaluedict, generate_pydantic_signature, LazyClassAttribute = internals  # noqa: N806
    with _LOCK:
        if cls.__pydantic_complete__:
            return True, None
        found = _FOUND.get(cls)
        try:
            entry = _entry_of(cls) if found is None else None
        except Exception:  # a store that does not fit: as if there were none
            entry = None
        if entry is None and (found is None or found[2] is None) and not _completable(cls):
            # (the generator stores an entry, or a node's needs, only for a class it checked completable)
            return False, None
        bounded = None
        try:
            config, core_config = _configs(cls, ConfigWrapper)
            _FOUND.pop(cls, None)
            nodes = needs = None
            if found is not None:
                schema, written = _found_schemas(*found)
            else:
                if entry is not None:
                    schema, bounded, nodes, needs = entry
                else:
                    parent = unpack_lenient_weakvaluedict(cls.__pydantic_parent_namespace__) or {}
                    schema = generate_schema(cls, config, parent)
                written = (
                    schema if needs is None or schema.get("type") != "definitions"
                    else _with(schema["schema"], schema["definitions"], needs[0])
                )
            # the serializer gets only the definitions it reaches (pydantic-core builds every one it is given)
            serializer = SchemaSerializer(written, core_config)
        except Exception:  # pydantic's own path raises the error the user should see
            return False, None
        cls.__pydantic_core_schema__ = schema
        cls.__pydantic_validator__ = _ModelValidator(None, cls, partial(SchemaValidator, schema, core_config))
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
        if found is None:
            # a schema from _FOUND lies inside one noted already: every class in it is noted or complete
            _note_contained(schema, nodes, needs)
        hook = getattr(cls, "__pydantic_on_complete__", None)
        if hook is not None:
            hook()
        return True, bounded


_CONFIG: list[Any] = []
"""``(model_config, ConfigWrapper, core config)`` of the last class completed (every generated class has the same config)."""


def _configs(cls: Any, wrapper: Any) -> tuple[Any, Any]:
    """pydantic's ``ConfigWrapper`` of ``cls`` and the core config its completion gives pydantic-core.

    The same as ``ConfigWrapper(cls.model_config, check=False)`` and its
    ``core_config(title=cls.__name__)``, made once for equal configs: the
    core config differs only by its title, the class's name unless the
    config sets one.
    """
    model_config = cls.model_config
    if _CONFIG and _CONFIG[0] == model_config:
        _, config, core = _CONFIG
        core = dict(core)
        if not model_config.get("title"):
            core["title"] = cls.__name__
        return config, core
    config = wrapper(model_config, check=False)
    core = config.core_config(title=cls.__name__)
    _CONFIG[:] = [dict(model_config), config, core]
    return config, dict(core)


def _completable(cls: Any) -> bool:
    """Whether :func:`complete` may complete ``cls`` (else pydantic's own ``model_rebuild`` does)."""
    return bool(
        cls.__pydantic_fields_complete__
        and not cls.__pydantic_decorators__.computed_fields
        and cls.__pydantic_generic_metadata__["origin"] is None
        and all(f.deprecated is None for f in cls.__pydantic_fields__.values())
    )


def generate_schema(cls: Any, config: Any = None, parent: Any = None) -> Any:
    """The core schema of ``cls`` as pydantic generates it (what ``model_rebuild`` would make).

    The generator calls it too (``generator/core_schemas.py``), on a fresh
    import of the package, to store each class's schema.
    """
    from pydantic._internal._config import ConfigWrapper
    from pydantic._internal._generate_schema import GenerateSchema
    from pydantic._internal._namespace_utils import NsResolver

    if config is None:
        config = ConfigWrapper(cls.model_config, check=False)
    generate = GenerateSchema(config, NsResolver(parent_namespace=parent or {}))
    with own_schemas():
        return generate.clean_schema(generate.generate_schema(cls))


def type_schema(tp: Any) -> tuple[Any, Any] | None:
    """The core schema and core config of the type ``tp`` (an envelope ``TypedDict``), as ``TypeAdapter(tp)`` makes them.

    The model classes it holds are completed first (from the store), so
    pydantic reuses their schemas instead of generating them again, and
    nothing looks up pydantic's plugins. ``None`` when pydantic's internals
    are not the ones this uses: the caller then uses ``TypeAdapter``.
    """
    try:
        from pydantic._internal._config import ConfigWrapper
    except ImportError:
        return None
    from typing import get_type_hints

    from ._runtime import AcpModel

    try:
        hints = get_type_hints(tp)
    except Exception:  # an annotation that does not resolve: TypeAdapter says why
        return None
    for hint in hints.values():
        if isinstance(hint, type) and issubclass(hint, AcpModel) and not hint.__pydantic_complete__:
            hint.model_rebuild()
    config = ConfigWrapper(None)
    try:
        schema = generate_schema(tp, config, {})
    except Exception:
        return None
    return schema, config.core_config(None)


def _note_contained(schema: Any, nodes: Any = None, needs: Any = None) -> None:
    """Keep the schema of each incomplete model class inside ``schema`` for when that class completes.

    ``nodes``: the model nodes of ``schema`` when known already (a stored schema
    lists them); ``needs``: the stored entry's definitions needed by each node
    (``generator/core_schemas.py``'s ``definition_needs``), else every
    definition of ``schema`` is kept for each.
    """
    definitions = schema.get("definitions") if schema.get("type") == "definitions" else None
    if nodes is None:
        nodes = model_nodes(schema)
    each = needs[1] if needs is not None else None
    for i, node in enumerate(nodes):
        contained = node["cls"]
        if not contained.__dict__.get("__pydantic_complete__") and contained not in _FOUND:
            # a definition-ref inside it points into the outer schema's definitions
            wanted = (None, None) if each is None else each[i]
            if wanted is not None:  # (None: a class the generator found it may not complete: its own path)
                _FOUND[contained] = (node, definitions, *wanted)


def _found_schemas(node: Any, definitions: Any, validator: Any, serializer: Any) -> tuple[Any, Any]:
    """The class's own schema and its serializer's, from a node of :data:`_FOUND`."""
    if definitions is None:
        return node, node
    if validator is None:  # not from the store: every definition of the outer schema
        schema = {"type": "definitions", "schema": node, "definitions": definitions}
        return schema, schema
    schema = _with(node, definitions, validator)
    return schema, schema if serializer == validator else _with(node, definitions, serializer)


def _with(node: Any, definitions: list[Any] | None, wanted: tuple[int, ...]) -> Any:
    """``node`` with the definitions of indexes ``wanted`` (``node`` itself when it needs none)."""
    if not wanted or definitions is None:
        return node
    return {"type": "definitions", "schema": node, "definitions": [definitions[i] for i in wanted]}


# --------------------------------------------------------------------------- the stored schemas

STORE_MODULE = "_core_schemas"
"""The generated modules of each version package holding its stored core schemas (``acp_types.v1._core_schemas_0``, ...)."""

SHARDS = 64
"""How many modules a version's store is split into, so that a first message loads a small part of it.

Importing a store module costs about 0.09 ms and 2 µs a KB of its compiled
size; with 64, the first message's module is about a seventh of the version's
store (v1), with 16 it was a third.
"""

_NO_STORE: dict[str, bytes] = {}
_STORES: dict[str, dict[str, bytes]] = {}


def shard_of(key: str) -> int:
    """The store module that holds the entry ``key``: the same on every run and interpreter."""
    return sum(key.encode()) % SHARDS


def _store(module_name: str) -> dict[str, bytes] | None:
    """The ``SCHEMAS`` of one store module, or ``None``: missing, or made with another pydantic."""
    table = _STORES.get(module_name)
    if table is None:
        table = _NO_STORE
        try:
            from importlib import import_module

            import pydantic
            import pydantic_core

            module = import_module(module_name)
            if (module.PYDANTIC, module.PYDANTIC_CORE) == (pydantic.VERSION, pydantic_core.__version__):
                table = module.SCHEMAS
        except Exception:  # no store (a partial tree), or a damaged one: generate as before
            pass
        _STORES[module_name] = table
    return None if table is _NO_STORE else table


def stored(package: str, kind: str, name: str) -> Any:
    """The stored entry ``kind:name`` of the version package ``package`` (``"acp_types.v1"``), or ``None``.

    An entry is what the generator recorded on a fresh import of the package
    with the pydantic it pins (``generator/core_schemas.py``): for ``kind``
    ``"model"`` and ``name`` a class name, a tuple ``(schema, bounded,
    nodes, needs)``: the class's core schema; ``(copy, classes)``, the entry
    points' bounded copy of it (``acp_types._validators``) and the model
    classes in it, or ``None`` for a class that is no method's payload; the
    model nodes inside the schema; and which of the schema's definitions the
    class's serializer and each node's class need (a node's ``None``: a
    class to complete on its own path). ``None`` when there is
    no such entry or the installed pydantic or pydantic-core is not the one
    the store was made with: the caller then generates the schema as before.
    Each call builds the entry afresh, so the caller owns what it gets.
    """
    key = f"{kind}:{name}"
    table = _store(f"{package}.{STORE_MODULE}_{shard_of(key)}")
    text = None if table is None else table.get(key)
    if text is None:
        return None
    try:
        *entry, holes = marshal.loads(text)
        _fill(holes)
    except Exception:  # a store that does not fit this runtime: generate as before
        return None
    return tuple(entry)


def _fill(holes: Any) -> None:
    """Put back what a stored entry holds besides data.

    ``holes`` is ``(references, places)``: the references in an order where
    each one's parts come before it, a part named by its index in that
    order (:func:`references`); and ``places``, flat, ``container, key,
    index`` for each place a reference goes to.
    """
    program, places = holes
    found = references(program)
    it = iter(places)
    for container, key, i in zip(it, it, it, strict=True):
        container[key] = found[i]


def references(program: Any) -> list[Any]:
    """The objects the stored references ``program`` name (written by ``generator/core_schemas.py``'s ``reference``)."""
    found: list[Any] = []
    modules = sys.modules
    for ref in program:
        kind = ref[0]
        obj: Any
        if kind == "g":  # a module-level class or function, by module and qualified name
            module = modules.get(ref[1])
            if module is None:
                from importlib import import_module

                module = import_module(ref[1])
            name = ref[2]
            if "." in name:
                obj = module
                for part in name.split("."):
                    obj = getattr(obj, part)
            else:
                obj = getattr(module, name)
        elif kind == "m":  # a bound method (every model's JSON schema hook): of the object at index ref[1]
            obj = getattr(found[ref[1]], ref[2])
        elif kind == "k":  # WireKey's check of unknown keys
            obj = _key_check(*ref[1:])
        elif kind == "p":  # a functools.partial: function, arguments and keyword arguments by index
            obj = partial(found[ref[1]], *[found[i] for i in ref[2]], **{key: found[i] for key, i in ref[3]})
        elif kind == "d":  # plain data, as an argument of a partial
            obj = ref[1]
        elif kind == "a":  # the discriminator of a union alias
            obj = _alias_discriminator(ref[1], ref[2])
        elif kind == "v":  # a class's model validator
            obj = _class_validator(ref[1], ref[2], ref[3])
        else:
            raise ValueError(f"unknown reference {ref!r}")
        found.append(obj)
    return found


def _entry_of(cls: Any) -> Any:
    module = cls.__module__
    package, _, last = module.rpartition(".")
    if last != "models" or cls.__qualname__ != cls.__name__:
        return None
    entry = stored(package, "model", cls.__name__)
    if entry is None:
        return None
    schema = entry[0]
    root = schema["schema"] if schema.get("type") == "definitions" else schema
    # the entry of another class of that name (a stale store): not this one's
    return entry if root.get("cls") is cls else None


def bounded_validator(cls: Any) -> Any:
    """The entry points' validator of the payload class ``cls`` from its stored bounded schema, or ``None``.

    ``None`` when there is no such entry (then the caller bounds the class's
    schema itself, as before). A class completed here hands over the bounded
    copy loaded with its schema, which shares the nodes it leaves as they are
    with the class's own schema, and the validator is built at once, before
    anything else can see that schema; a class completed before loads its
    entry again.
    """
    from ._runtime import own_validator

    with _LOCK:
        bounded = None
        if not cls.__pydantic_complete__:
            done, bounded = _complete(cls)
            if not done:
                return None
        if bounded is None:
            entry = _entry_of(cls)
            bounded = None if entry is None else entry[1]
        if bounded is None:
            return None
        schema, classes = bounded
        return own_validator(schema, classes)


def _alias_discriminator(module: str, alias: str) -> Any:
    """The discriminator function of the union alias ``alias`` of ``module`` (for stored schemas)."""
    from pydantic import Discriminator

    value = getattr(sys.modules[module], alias).__value__
    (found,) = [m.discriminator for m in getattr(value, "__metadata__", ()) if isinstance(m, Discriminator)]
    return found


def _class_validator(module: str, name: str, attribute: str) -> Any:
    """The function of the model validator ``attribute`` of the class ``name`` of ``module`` (for stored schemas)."""
    cls = getattr(sys.modules[module], name)
    return cls.__pydantic_decorators__.model_validators[attribute].func
