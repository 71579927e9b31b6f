"""Runtime support shared by every version of acp_types.

The generated models build on what is here: the common base class, the
field markers the models' plan uses (tolerant fields, not-null, the key check
of unknown keys), the discriminators that pick an open union's branch by its
tag, and the method table types.

Hand-written: the source is runtime/_runtime.py, which the generator copies
into the package unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from copy import copy
from dataclasses import dataclass
from functools import cache, partial
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Generic, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, ValidationError
from pydantic_core import CoreSchema, PydanticCustomError, SchemaValidator, core_schema, to_json
from pydantic_core.core_schema import ValidatorFunctionWrapHandler
from typing_extensions import Self, TypeAliasType, TypeVar

from acp_types import _wire
from acp_types._protocol import FeatureSide, Kind, Side, Stability

UNKNOWN_TAG = "__acp_unknown__"
"""The tag under which an open union's slow path keeps a branch it does not know."""

DEFAULT_TAG = "__acp_default__"
"""A reserved tag: no branch carries it (an untagged default branch goes by its class name), and a
wire tag equal to it, like one equal to :data:`UNKNOWN_TAG`, is refused rather than routed."""

_MISSING = object()
_SENTINEL_TAGS = frozenset({UNKNOWN_TAG, DEFAULT_TAG})


class _SlowPath(threading.local):
    """Set while validating when a message needs the slow path (see :class:`WireKey`).

    Only a key check sets it, and an entry point that finds it set clears it
    (on the error path too), so the happy path reads it once and never writes
    it. A flag left set by a validation outside the entry points (a user's
    ``TypeAdapter``) only sends the next message through the slow path, which
    gives a message without such a key the same result.
    """

    needed = False


_SLOW = _SlowPath()


class _OwnSchemas(threading.local):
    """How deep this thread is in acp_types' own schema generation (see :func:`own_schemas`)."""

    depth = 0


_OWN = _OwnSchemas()


@contextmanager
def own_schemas() -> Iterator[None]:
    """Mark schema generation run by acp_types itself (completing a class, an envelope's schema).

    Inside it, :meth:`AcpModel.__get_pydantic_core_schema__` gives pydantic's
    own schema: the precise errors of a ``TypeAdapter`` are only for one made
    by a user.
    """
    _OWN.depth += 1
    try:
        yield
    finally:
        _OWN.depth -= 1


_FAST_VALIDATORS: dict[type, SchemaValidator] = {}
"""Each completed model class's own validator, set when it is completed (``__pydantic_on_complete__``).

The entry points read it here: a class attribute of a pydantic model goes
through its metaclass's ``__getattr__`` hook, about 0.3 µs a read against
0.04 µs for this lookup."""


class WireKey:
    """Key marker of ``__pydantic_extra__``: the attribute spellings that are not wire names.

    Only unknown keys reach this check. A key of ``names`` (wire ``meta``
    beside the field ``_meta``) marks the message for the slow path: pydantic
    counts every unknown key as "set", so the attribute of that spelling would
    look set and be written back as ``null``. The entry points (the models'
    ``model_validate`` / ``model_validate_json``, ``parse_params``,
    ``parse_result``, ``parse_message``) then validate that message again with
    :func:`slow_validator`, which un-sets such fields. The happy path, with no
    such key, makes no Python call at all.
    """

    def __init__(self, *names: str) -> None:
        self.names = frozenset(names)

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.no_info_after_validator_function(_KeyCheck(self.names), handler(source))


class _KeyCheck:
    """The check :class:`WireKey` puts on unknown keys: flags a key of ``names`` for the slow path.

    A small callable object rather than a closure, so that a core schema holding
    it can be stored at generation time and rebuilt (``acp_types._build``), and
    two checks of the same names compare equal.
    """

    __slots__ = ("names",)

    # pydantic-core names a function validator by its function's ``__name__``
    # (else its repr): the same name as the closure it replaces
    __name__ = "check"

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def __call__(self, key: str) -> str:
        if key in self.names:
            _SLOW.needed = True
        return key

    def __eq__(self, other: object) -> bool:
        return type(other) is _KeyCheck and other.names == self.names

    def __hash__(self) -> int:
        return hash(self.names)

    def __reduce__(self) -> tuple[Any, ...]:
        # sorted: a frozenset pickles in hash order, which changes from run to run
        return (_key_check, tuple(sorted(self.names)))

    def __repr__(self) -> str:
        return f"_KeyCheck({sorted(self.names)!r})"


def _key_check(*names: str) -> _KeyCheck:
    return _KeyCheck(frozenset(names))


class _OmitOnError:
    """Field marker of ``x-acp-on-error: omit``: a malformed value is treated as omitted.

    pydantic-core drops the field natively (``on_error="omit"``), so it is
    not counted as set and is not written back; the attribute then reads the
    default, which :class:`AcpModel` keeps on the class for these fields.
    """

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.with_default_schema(handler(source), on_error="omit")

    def __repr__(self) -> str:
        return "OMIT_ON_ERROR"


OMIT_ON_ERROR = _OmitOnError()
"""The one instance of the omit-on-error field marker."""


class AcpModel(BaseModel):
    """Base of every generated model.

    Validation is strict, as JSON Schema is: ``"1"`` is not an integer and
    ``1`` is not a string. Attributes are snake_case while the wire names are
    the aliases. Constructing a model in code accepts either name:
    ``SessionInfo(session_id=..., cwd=...)`` or ``SessionInfo(sessionId=...)``.
    The wire entry points (``parse_params``, ``parse_result``,
    ``parse_message``) read wire names only, so a key spelled like an
    attribute (``meta``, ``updated_at``) is an unknown key like any other:
    kept, and written back unchanged. To do the same with pydantic's own
    methods, pass ``by_name=False`` (``Model.model_validate(data, by_name=False)``).
    Use :meth:`to_wire` / :meth:`to_json` to write a message back: they keep
    omitted fields omitted, so an omitted patch field and an explicit ``null``
    stay different.

    Every wire rule runs inside pydantic-core (tolerant fields, skip-invalid
    items, union tags, not-null). The Python steps left: the slow path of a
    key spelled like an attribute (:class:`WireKey`), the check of a native
    union's fallback branch when its tag lookup failed (:data:`FAST_UNION`),
    and, for a rejected message, validating it again in the precise form
    (:func:`precise_validator`), whose errors are raised.
    """

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        strict=True,
        defer_build=True,
    )

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        own = cls.__dict__.get("__annotations__", {})
        inherited = False
        for name, info in list(cls.__pydantic_fields__.items()):
            if name not in own:
                # A subclass (yours) that does not declare a tolerant field
                # again: pydantic collected it from the base's annotation and
                # the class default set below, which loses the base's alias,
                # so the base's own field is taken instead.
                base = next((b.__dict__["__pydantic_fields__"][name] for b in cls.__mro__[1:]
                             if name in b.__dict__.get("__pydantic_fields__", {})), None)
                if base is not None and any(isinstance(m, _OmitOnError) for m in base.metadata):
                    cls.__pydantic_fields__[name] = info = copy(base)
                    inherited = True
            # A tolerant field dropped on error is absent from the instance; the
            # attribute then reads the class's default, as if it were omitted.
            if any(isinstance(m, _OmitOnError) for m in info.metadata):
                type.__setattr__(cls, name, info.default)
        if inherited and cls.__pydantic_complete__:  # built at creation (defer_build off): build it again
            cls.model_rebuild(force=True)

    @classmethod
    def model_validate(
        cls,
        obj: Any,
        *,
        strict: bool | None = None,
        extra: Literal["allow", "ignore", "forbid"] | None = None,
        from_attributes: bool | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        fast = _FAST_VALIDATORS.get(cls)
        if fast is None:  # not completed or not validated with yet, or completed without our hook
            fast = _fast(cls)
        try:
            if strict is None and extra is None and from_attributes is None and context is None and by_alias is None:
                # the common call, kept to the one option pydantic-core is given (each costs)
                model = fast.validate_python(obj, by_name=by_name)
            else:
                model = fast.validate_python(
                    obj, strict=strict, extra=extra, from_attributes=from_attributes,
                    context=context, by_alias=by_alias, by_name=by_name,
                )
        except ValidationError:
            # the native unions' errors name every alternative: the precise form's say what is wrong
            return _again(  # type: ignore[no-any-return]
                precise_validator(cls).validate_python, obj, strict=strict, extra=extra,
                from_attributes=from_attributes, context=context, by_alias=by_alias, by_name=by_name,
            )
        if _SLOW.needed:
            return _again(  # type: ignore[no-any-return]
                slow_validator(cls).validate_python, obj, strict=strict, extra=extra,
                from_attributes=from_attributes, context=context, by_alias=by_alias, by_name=by_name,
            )
        return model  # type: ignore[no-any-return]

    @classmethod
    def model_validate_json(
        cls,
        json_data: str | bytes | bytearray,
        *,
        strict: bool | None = None,
        extra: Literal["allow", "ignore", "forbid"] | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        fast = _FAST_VALIDATORS.get(cls)
        if fast is None:  # not completed or not validated with yet, or completed without our hook
            fast = _fast(cls)
        try:
            if strict is None and extra is None and context is None and by_alias is None:
                model = fast.validate_json(json_data, by_name=by_name)
            else:
                model = fast.validate_json(
                    json_data, strict=strict, extra=extra, context=context, by_alias=by_alias, by_name=by_name
                )
        except ValidationError:
            return _again(  # type: ignore[no-any-return]
                precise_validator(cls).validate_json, json_data,
                strict=strict, extra=extra, context=context, by_alias=by_alias, by_name=by_name,
            )
        if _SLOW.needed:
            return _again(  # type: ignore[no-any-return]
                slow_validator(cls).validate_json, json_data,
                strict=strict, extra=extra, context=context, by_alias=by_alias, by_name=by_name,
            )
        return model  # type: ignore[no-any-return]

    @classmethod
    def model_rebuild(
        cls,
        *,
        force: bool = False,
        raise_errors: bool = True,
        _parent_namespace_depth: int = 2,
        _types_namespace: Any = None,
    ) -> bool | None:
        """Complete the class (validator, serializer) on first use, without pydantic's plugin lookup (see ``_build``)."""
        if not force and _types_namespace is None and not cls.__pydantic_complete__:
            if _build.complete(cls):
                return True
        try:
            with own_schemas():
                return super().model_rebuild(
                    force=force,
                    raise_errors=raise_errors,
                    # one frame more than pydantic counts: this override's own
                    _parent_namespace_depth=_parent_namespace_depth + 1 if _parent_namespace_depth > 0 else 0,
                    _types_namespace=_types_namespace,
                )
        finally:
            # a forced rebuild of a complete class does not call __pydantic_on_complete__:
            # its new validator is adopted here, so no entry point reads the one before
            _adopt_validator(cls)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler, /) -> CoreSchema:
        """pydantic's schema of the class; for a user's ``TypeAdapter`` of it, one that gives the precise errors.

        ``TypeAdapter(Model)`` of a completed class takes the class's own
        validator (:class:`_ModelValidator`), whose errors name only the
        branch a union's tag chose. Of a class not completed yet, pydantic
        makes the adapter's validator itself, from what this returns: the class
        is completed first (from the store), and the fields, when rejected, are
        validated again in the precise form (:func:`precise_validator`), so the
        adapter reports the same errors whichever came first. The same holds
        for a type that holds the class at its top (``TypeAdapter(list[Model])``).
        Anywhere else, pydantic's own schema: acp_types' own schema generation
        (:func:`own_schemas`), a class being created, and a model of yours that
        holds this one (its rejected unions report every alternative they tried).
        """
        if source is not cls or _OWN.depth or "__pydantic_core_schema__" not in cls.__dict__ or not _at_top(handler):
            return handler(source)
        if not cls.__pydantic_complete__:
            cls.model_rebuild(raise_errors=False)
        schema = handler(source)
        if not (cls.__pydantic_complete__ and schema.get("type") == "model" and schema.get("cls") is cls):
            return schema
        return {
            **schema,
            "schema": core_schema.with_info_wrap_validator_function(_precise_on_rejection(cls), schema["schema"]),
        }

    @classmethod
    def __pydantic_on_complete__(cls) -> None:
        super().__pydantic_on_complete__()
        _adopt_validator(cls)

    # (attribute, wire name, value) of each tag field: required on the wire, filled in by the
    # constructor. A dunder name, which pydantic leaves alone in a class body, so a tagged class
    # assigns it with no annotation and pydantic has nothing to evaluate or record for it (about
    # 5 M instructions of v1's import, by valgrind); the annotation is for type checkers.
    if TYPE_CHECKING:
        __acp_tags__: ClassVar[tuple[tuple[str, str, Any], ...]]
    __acp_tags__ = ()

    def __init__(self, /, **data: Any) -> None:
        # A required single-value field (a union branch's tag) is filled in
        # when constructing in code, so it counts as set and to_wire writes it;
        # validation of wire data does not run this, so there it stays required.
        for attr, wire, value in type(self).__acp_tags__:
            if attr not in data and wire not in data:
                data[attr] = value
        super().__init__(**data)

    # pydantic calls a model's own __init__ from model_validate too unless it
    # is marked as the base one; this one only adds to construction in code.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready wire form: wire names, unset fields left out (``model_dump``, straight to the serializer)."""
        return self.__pydantic_serializer__.to_python(  # type: ignore[no-any-return]
            self, mode="json", by_alias=True, exclude_unset=True
        )

    def to_json(self) -> str:
        """The wire form as compact JSON text (``model_dump_json``, straight to the serializer)."""
        return self.__pydantic_serializer__.to_json(
            self, by_alias=True, exclude_unset=True
        ).decode()



def _at_top(handler: GetCoreSchemaHandler) -> bool:
    """Whether the schema being made is not inside a model or ``TypedDict`` (pydantic's own stack of them)."""
    try:
        return handler._generate_schema.model_type_stack.get() is None  # type: ignore[attr-defined]
    except AttributeError:  # pydantic's internals moved: pydantic's own schema
        return False


def _precise_on_rejection(cls: type[BaseModel]) -> core_schema.WithInfoWrapValidatorFunction:
    """A wrap validator of ``cls``'s fields whose rejection raises the precise form's errors instead."""

    def validate(value: Any, handler: ValidatorFunctionWrapHandler, info: core_schema.ValidationInfo) -> Any:
        try:
            return handler(value)
        except ValidationError as rejected:
            precise = precise_validator(cls)
            try:
                if info.mode == "json":
                    precise.validate_json(to_json(value), context=info.context)
                else:
                    precise.validate_python(value, context=info.context)
            except ValidationError as exc:
                raise exc from None
            raise rejected from None  # the precise form accepts it (a caller's strictness): the first errors stand

    return validate


def _adopt_validator(cls: type[BaseModel]) -> None:
    """Make the class's newly built validator the one every entry point uses.

    ``model_validate*`` read the fast validator from ``_FAST_VALIDATORS``;
    every other entry point (construction, ``TypeAdapter(Model)``) reads
    ``__pydantic_validator__``, which becomes a :class:`_ModelValidator`: the
    same fast validator, with the precise form's errors on a rejection.
    """
    validator = cls.__dict__.get("__pydantic_validator__")
    if type(validator) is _ModelValidator:
        if object.__getattribute__(validator, "_make") is not None:
            # not built yet (acp_types._build builds it on first use): _fast records it then
            # (asked before reading it: the AttributeError of a slot not set is a tenth of completing a class)
            _FAST_VALIDATORS.pop(cls, None)
        else:  # (no ``_make`` left: ``fast`` is there, see _ModelValidator)
            _FAST_VALIDATORS[cls] = object.__getattribute__(validator, "fast")
    elif isinstance(validator, SchemaValidator):
        type.__setattr__(cls, "__pydantic_validator__", _ModelValidator(validator, cls))
        _FAST_VALIDATORS[cls] = validator
    else:
        _FAST_VALIDATORS.pop(cls, None)


def _unset_attribute_spellings(data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """Slow path, per model: validate, then un-set fields whose only trace was an unknown key of their spelling."""
    model = handler(data)
    extra = model.__pydantic_extra__
    if extra and isinstance(data, Mapping):
        known = type(model).__pydantic_fields__
        for key in extra:
            field = known.get(key)
            if (
                field is not None
                and field.alias not in (None, key)
                and field.alias not in data
            ):
                model.__pydantic_fields_set__.discard(key)
    return model


def _slow_schema(node: Any) -> Any:
    """``node`` for the slow path: every model wrapped by :func:`_unset_attribute_spellings`, keys not checked."""
    if isinstance(node, list):
        return [_slow_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {
        k: v if k == "metadata" else _slow_schema(v)
        for k, v in node.items()
        if k != "extras_keys_schema"
    }
    if out.get("type") == "model":
        ref = out.pop("ref", None)
        wrapped: dict[str, Any] = {
            "type": "function-wrap",
            "function": {"type": "no-info", "function": _unset_attribute_spellings},
            "schema": out,
        }
        if ref is not None:
            wrapped["ref"] = ref
        return wrapped
    return out


@cache
def slow_validator(tp: Any) -> SchemaValidator:
    """The validator of the slow path for ``tp`` (a model class or a union alias), built on first need."""
    return own_validator(_slow_schema(core_schema_of(tp)))


def own_validator(schema: Any, classes: Iterable[Any] | None = None) -> SchemaValidator:
    """A validator of ``schema`` that uses it all, nested models included.

    pydantic-core reuses a complete model class's own validator for a nested
    model schema; a changed copy of a schema (the slow path, the entry points'
    bounded reports) needs its own, so the classes read as incomplete while
    it is built. ``classes``: those of the schema's model nodes, when known
    already (a stored schema lists them), instead of walking the schema.
    """
    classes = _model_classes(schema) if classes is None else set(classes)
    # only the classes that read as complete need hiding (on a first message, the message's own class alone)
    complete = {cls: cls.__dict__.get("__pydantic_complete__") for cls in classes if cls.__pydantic_complete__}
    try:
        for cls in complete:
            type.__setattr__(cls, "__pydantic_complete__", False)
        return SchemaValidator(schema)
    finally:
        for cls, value in complete.items():
            if value is None:
                type.__delattr__(cls, "__pydantic_complete__")
            else:
                type.__setattr__(cls, "__pydantic_complete__", value)


def model_nodes(schema: Any) -> Iterator[dict[str, Any]]:
    """Every model schema (``"type": "model"``) in the core schema ``schema`` (a loop, not a recursion: it runs on the first message)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "model":
                yield node
            stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, (dict, list)))


def _model_classes(schema: Any) -> set[Any]:
    """The classes of every model schema in ``schema``."""
    return {node["cls"] for node in model_nodes(schema)}


def _fast(cls: type[BaseModel]) -> Any:
    """The fast validator of ``cls`` (its own, or the one inside :class:`_ModelValidator`).

    A deferred class is completed first; the validator inside a :class:`_ModelValidator` is built on its first use
    (``acp_types._build``), and from then on the entry points find it in
    ``_FAST_VALIDATORS`` without the class attribute read.
    """
    if not cls.__pydantic_complete__:
        cls.model_rebuild()  # what the deferred class's placeholder validator would do on its first use
    validator: Any = cls.__pydantic_validator__
    if type(validator) is not _ModelValidator:
        return validator
    fast = validator.fast
    if cls.__dict__.get("__pydantic_validator__") is validator:
        _FAST_VALIDATORS[cls] = fast
    return fast


class _ModelValidator:
    """A model class's ``__pydantic_validator__``: its own validator, with the precise form's errors.

    The happy path is the class's own (native) validator and nothing else.
    When it rejects the input, the input is validated again by
    :func:`precise_validator`, whose errors are raised: the native unions
    (:data:`FAST_UNION`) would report every alternative they tried.
    """

    __slots__ = ("cls", "fast", "_make")

    def __init__(
        self,
        fast: SchemaValidator | None,
        cls: type[BaseModel],
        make: Callable[[], SchemaValidator] | None = None,
    ) -> None:
        """``fast``, or ``make`` to build it on first use (``acp_types._build``: writing a value back needs none).

        ``_make`` is ``None`` once ``fast`` is there (built, or given).
        """
        if fast is not None:
            self.fast = fast
        self.cls = cls
        self._make = make if fast is None else None

    def validate_python(self, input: Any, **kwargs: Any) -> Any:
        try:
            return self.fast.validate_python(input, **kwargs)
        except ValidationError:
            return precise_validator(self.cls).validate_python(input, **kwargs)

    def validate_json(self, input: Any, **kwargs: Any) -> Any:
        try:
            return self.fast.validate_json(input, **kwargs)
        except ValidationError:
            return precise_validator(self.cls).validate_json(input, **kwargs)

    def validate_strings(self, input: Any, **kwargs: Any) -> Any:
        try:
            return self.fast.validate_strings(input, **kwargs)
        except ValidationError:
            return precise_validator(self.cls).validate_strings(input, **kwargs)

    def __getattr__(self, name: str) -> Any:
        # reached only for what the slots do not hold: ``fast`` before it is built, or the validator's own attributes
        if name == "fast":
            make = object.__getattribute__(self, "_make")
            if make is None:
                raise AttributeError(name)
            fast = make()
            self.fast = fast
            self._make = None
            return fast
        if name in _ModelValidator.__slots__ or (name.startswith("__") and name.endswith("__")):
            # no dunder of its own: pydantic-core asks for ``__pydantic_schema_validator__`` while
            # building any validator that holds this class, which must not build this one
            raise AttributeError(name)
        return getattr(self.fast, name)


def core_schema_of(tp: Any) -> Any:
    """The core schema of ``tp`` (a model class, built if deferred, or any other type)."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if not isinstance(tp.__pydantic_core_schema__, dict):  # deferred, not built yet
            tp.model_rebuild()
        return tp.__pydantic_core_schema__
    from pydantic import TypeAdapter  # noqa: PLC0415

    with own_schemas():
        return TypeAdapter(tp).core_schema


def precise_schema(node: Any, memo: dict[int, Any] | None = None) -> Any:
    """A copy of ``node`` in which every native union is its precise form (its ``acp_precise`` metadata).

    The precise form is the tag lookup by :func:`tag_discriminator`: one
    Python call per union, and errors that name only the branch the tag
    chose. Shared subtrees stay shared (``memo``); metadata is not copied.
    """
    if memo is None:
        memo = {}
    if isinstance(node, (list, tuple)):
        return type(node)(precise_schema(v, memo) for v in node)
    if not isinstance(node, dict):
        return node
    done = memo.get(id(node))
    if done is not None:
        return done
    meta = node.get("metadata")
    if isinstance(meta, dict) and "acp_precise" in meta:
        out = dict(precise_schema(meta["acp_precise"], memo))
        for key in ("ref", "serialization"):
            if key in node:
                out[key] = node[key]
    else:
        out = {k: v if k == "metadata" else precise_schema(v, memo) for k, v in node.items()}
    memo[id(node)] = out
    return out


@cache
def precise_validator(tp: Any) -> SchemaValidator:
    """The validator of ``tp`` with every native union in its precise form, built on first need (an error)."""
    return own_validator(precise_schema(core_schema_of(tp)))


class UnknownVariant(AcpModel):
    """A branch of an open (v2) union that this version does not know.

    Every field is kept as it came (see ``model_extra``) and written back
    unchanged, so a proxy loses nothing.
    """

    def tag(self, name: str) -> Any:
        """The value of the tag property ``name`` (for example ``"sessionUpdate"``)."""
        return (self.model_extra or {}).get(name)


def tag_discriminator(
    wire: str,
    attr: str,
    known: frozenset[str],
    *,
    open: bool,
    default: str | None,
    unknown_default: bool = False,
    unknown_required: tuple[str, ...] = (),
) -> Callable[[Any], str | None]:
    """Pick a tagged union's branch by looking its tag up, never by trying branches.

    Returns the pydantic tag of the branch: the tag value itself for a known
    branch, ``default`` (the default branch's class name) when the tag is absent
    and the union has an untagged default branch, :data:`UNKNOWN_TAG` for an unknown tag of an open
    union. ``None`` (no tag) and an unknown tag of a closed union become
    validation errors in pydantic.

    Schema hooks (``x-acp-union``): ``unknown_default`` reads an unknown tag
    of a closed union as the default branch (``"unknown": "default"``);
    ``unknown_required`` lists the wire keys an unknown variant of an open
    union must carry (``"unknownRequired"``), and one missing is an error.
    """

    def discriminate(value: Any) -> str | None:
        if type(value) is dict or isinstance(value, Mapping):
            tag = value.get(wire, _MISSING)
        elif isinstance(value, UnknownVariant):
            return UNKNOWN_TAG
        else:
            tag = getattr(value, attr, None)
            if tag is None:
                tag = _MISSING
        if tag is _MISSING:
            return default
        if not isinstance(tag, str):
            return None
        if tag in known:
            return tag
        if unknown_default and tag not in _SENTINEL_TAGS:
            return default
        if open:
            if unknown_required and isinstance(value, Mapping):
                if any(key not in value for key in unknown_required):
                    return None
            return UNKNOWN_TAG
        # a closed union's unknown tag fails in pydantic; the sentinels are
        # pydantic tags of this runtime, never tag values of the wire
        return None if tag in _SENTINEL_TAGS else tag

    _TAG_UNIONS[discriminate] = _TagUnion(wire, attr, known, open, default)
    return discriminate


class _TagUnion:
    """What :func:`tag_discriminator` was made with, for the native form of its union.

    A plain record, not a dataclass: ``@dataclass`` compiles its methods while
    the module loads (about 4 M instructions, half a percent of a version's
    import, by valgrind), and nothing compares, hashes or prints these.
    """

    __slots__ = ("wire", "attr", "known", "open", "default")

    def __init__(self, wire: str, attr: str, known: frozenset[str], open: bool, default: str | None) -> None:
        self.wire = wire
        self.attr = attr
        self.known = known
        self.open = open
        self.default = default


_TAG_UNIONS: dict[Callable[[Any], str | None], _TagUnion] = {}


def _only(discriminate: Callable[[Any], str | None], tag: str, value: Any) -> Any:
    """A native union's fallback branch takes only what the precise lookup gives it."""
    if discriminate(value) != tag:
        raise PydanticCustomError("acp_union_fallback", "not this branch")
    return value


def _only_absent(wire: str, discriminate: Callable[[Any], str | None], tag: str, value: Any) -> Any:
    """:func:`_only` for a default branch: an object without the tag is the default branch's at once."""
    if type(value) is dict and wire not in value:
        return value
    return _only(discriminate, tag, value)


def _refuse_tag(value: Any) -> Any:
    raise PydanticCustomError("acp_union_fallback", "not this branch")


def _tag_absent(handler: GetCoreSchemaHandler, branch: Any, wire: str) -> Any:
    """A copy of the default branch's model schema that takes only an object without the tag ``wire``, or None.

    Only for a branch that declares the tag as an optional field (v1's
    ``AuthMethodAgent``, ``McpServerStdio``): the copy's field refuses any
    value, so an object that carries the tag fails here and goes on to the
    fallback's Python check, while one without it is read by pydantic-core
    alone, with the same result as the branch itself (the field then takes
    its default, as it does in the branch). Any other shape: None (the Python
    check alone, as before).
    """
    try:
        model = handler.resolve_ref_schema(branch)
    except LookupError:  # a class still being built (recursive)
        return None
    fields_schema = model.get("schema") if model.get("type") == "model" else None
    if not isinstance(fields_schema, dict) or fields_schema.get("type") != "model-fields":
        return None
    fields = dict(fields_schema["fields"])
    for name, field in fields.items():
        if field.get("validation_alias", name) != wire:
            continue
        inner = field.get("schema")
        if not isinstance(inner, dict) or inner.get("type") != "default":
            return None  # a required tag: not a default branch
        never = core_schema.no_info_plain_validator_function(_refuse_tag)
        fields[name] = {**field, "schema": {**inner, "schema": never}}
        copy = {k: v for k, v in model.items() if k not in ("ref", "metadata")}
        copy["schema"] = {**fields_schema, "fields": fields}
        return copy
    return None


class _NativeTags:
    """The native form of a :func:`tag_discriminator` union (made by :func:`_fast_twin`).

    A left-to-right union of pydantic-core's own tag lookup over the known
    tags and, for an open union or one with a default branch, a fallback
    that validates the unknown variant or the default branch and takes only
    what the precise lookup (``discriminate``) routes to it. Both forms
    accept the same input with the same result; the fallback's Python check
    runs only when the tag lookup failed (an unknown or absent tag, or an
    error). The precise form is kept in the node's metadata
    (``acp_precise``): errors are reported by it (:func:`precise_schema`).
    """

    def __init__(self, discriminate: Callable[[Any], str | None]) -> None:
        self.discriminate = discriminate
        self.spec = _TAG_UNIONS[discriminate]

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        schema: Any = handler(source)
        options = schema["choices"] if schema.get("type") == "union" else [schema]
        choices: dict[Any, Any] = {}
        for option in options:
            choice = option[0] if isinstance(option, tuple) else option
            choices[choice["metadata"]["pydantic_internal_union_tag_key"]] = choice
        spec = self.spec
        precise = core_schema.tagged_union_schema(choices, self.discriminate)
        key: Any = spec.wire if spec.attr == spec.wire else [[spec.wire], [spec.attr]]
        known = {tag: choice for tag, choice in choices.items() if tag in spec.known}
        native: list[Any] = [
            core_schema.tagged_union_schema(known, key, strict=False, from_attributes=True)
        ]
        if spec.open:
            check = partial(_only, self.discriminate, UNKNOWN_TAG)
            native.append(core_schema.no_info_before_validator_function(check, choices[UNKNOWN_TAG]))
        if spec.default is not None:
            # an absent tag means the default branch (tag_discriminator's first rule): natively,
            # when the default branch declares the tag as a field; its other rules in Python
            absent = _tag_absent(handler, choices[spec.default], spec.wire)
            if absent is not None:
                native.append(absent)
            check = partial(_only_absent, spec.wire, self.discriminate, spec.default)
            native.append(core_schema.no_info_before_validator_function(check, choices[spec.default]))
        return core_schema.union_schema(
            native, mode="left_to_right", metadata={"acp_precise": precise}
        )


_ANNOTATED: Any = Annotated  # subscripted with built tuples, not as a type expression
_ALIAS: Any = TypeAliasType
_UNION: Any = Union  # noqa: UP007 (built at runtime, 3.10 needs Union)


@cache
def _fast_twin(alias: Any) -> Any:
    """The union alias ``alias`` with its tag looked up natively (:class:`_NativeTags`), or None."""
    from pydantic import Discriminator  # noqa: PLC0415

    value = getattr(alias, "__value__", None)
    if get_origin(value) is not Annotated:
        return None
    union, *meta = get_args(value)
    found = [
        m for m in meta if isinstance(m, Discriminator) and m.discriminator in _TAG_UNIONS
    ]
    if len(found) != 1:
        return None
    branches = []
    for branch in get_args(union):
        inner, *tags = get_args(branch)
        if _fast_twin(inner) is not None:  # a nested union: its own native form
            inner = _ANNOTATED[inner, FAST_UNION]
        args = (inner, *tags)
        branches.append(_ANNOTATED[args])
    native = _NativeTags(found[0].discriminator)  # type: ignore[arg-type]
    args = (_UNION[tuple(branches)], *[native if m is found[0] else m for m in meta])
    return _ALIAS(alias.__name__, _ANNOTATED[args])


class _FastUnion:
    """Type marker of a union alias read by a model field: validated in its native form.

    The plan puts it on every reference from a model to a union
    (``Annotated[ContentBlock, FAST_UNION]``). An open union or one with a
    default branch then has its tag looked up by pydantic-core itself
    (:class:`_NativeTags`), with no Python call on the happy path; any other
    union (closed and native already, or by key presence) is read unchanged. The alias itself keeps its
    precise form, so ``TypeAdapter(ContentBlock)`` and any model of the
    user's that names it are as before. A rejected message's errors come
    from the precise form (:class:`_ModelValidator`, the entry points).
    """

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        twin = _fast_twin(source)
        return handler(source if twin is None else twin)

    def __repr__(self) -> str:
        return "FAST_UNION"


FAST_UNION = _FastUnion()
"""The one instance of the native-union marker, used by the generated models."""


def presence_discriminator(
    keys: Mapping[str, str], *, first: bool = False
) -> Callable[[Any], str | None]:
    """Pick a branch by which one of ``keys`` (wire name -> branch tag) the object has.

    Exactly one of the keys must be present; otherwise it is a validation error.
    With ``first`` (schema hook ``"overlap": "first"``) several may be present
    and the first listed one chooses.
    """

    def discriminate(value: Any) -> str | None:
        if isinstance(value, Mapping):
            found = [tag for key, tag in keys.items() if key in value]
        else:
            found = [tag for tag in keys.values() if type(value).__name__ == tag]
        if first:
            return found[0] if found else None
        return found[0] if len(found) == 1 else None

    return discriminate


def required_one_of(*names: str) -> Callable[[Any], Any]:
    """The after-validator of ``x-acp-required-one-of``: at least one of the attributes ``names`` is present.

    The generator attaches it (``model_validator(mode="after")``) only to the
    classes whose schema has the marker, so no other model pays for it. A
    field counts as present when it holds a value, or when it was set to
    ``null`` under its own name; an unknown key spelled like the attribute
    (kept in ``__pydantic_extra__``) does not count, as it is no wire name.
    """

    def check(model: Any) -> Any:
        extra = model.__pydantic_extra__ or {}
        fields_set = model.__pydantic_fields_set__
        for name in names:
            if getattr(model, name, None) is not None or (
                name in fields_set and name not in extra
            ):
                return model
        raise ValueError(f"at least one of {', '.join(names)} must be present")

    return check


def same_kind(items: list[Any]) -> list[Any]:
    """After-validator of ``x-acp-same-kind``: every item of the array is of one union branch."""
    if len({type(item) for item in items}) > 1:
        raise ValueError(
            "every item must be of the same kind (do not mix the union's branches)"
        )
    return items


def _default_on_error(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    try:
        return handler(value)
    except ValidationError:
        return []


class _DefaultOnError:
    """Field marker of ``x-acp-on-error: default`` (required arrays): a malformed value reads as ``[]``.

    A wrap validator on this field's own core schema only, so the field stays
    required (a missing key is still an error) and no other field pays for it.
    The empty list counts as set and is written back.
    """

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.no_info_wrap_validator_function(
            _default_on_error, handler(source)
        )

    def __repr__(self) -> str:
        return "DEFAULT_ON_ERROR"


DEFAULT_ON_ERROR = _DefaultOnError()
"""The one instance of the default-on-error field marker."""


class _NotNull:
    """Field marker: an optional property whose schema does not admit ``null``.

    The attribute is typed ``X | None`` because it is ``None`` when the
    property is omitted, but an explicit ``null`` on the wire is invalid, as
    in the JSON Schema (and, on a tolerant ``omit`` field, treated as omitted).
    The marker only removes ``None`` from what the validator accepts; it adds
    no Python call at validation time.
    """

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        schema = handler(source)
        if schema.get("type") != "nullable":
            raise TypeError(
                f"NOT_NULL applies to an optional (X | None) field, not {source!r}"
            )
        return schema["schema"]  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return "NOT_NULL"


NOT_NULL = _NotNull()
"""The one instance of the not-null field marker, used by the generated models."""


class UnknownMethodError(LookupError):
    """The method is not part of this protocol version and is not an extension method.

    Extension methods (names starting with ``_``) are never unknown: their
    payloads pass through unchanged. A method that is not a string is unknown.
    """

    def __init__(self, method: Any, version: str):
        self.method = method
        self.version = version
        super().__init__(f"{method!r} is not a method of ACP {version}")


class NotARequestError(ValueError):
    """A result was given for a notification, which has none."""


# Bound to BaseModel (and defaulting to it) rather than Any: a class of a
# BaseModel subclass is hashable to a type checker, which the cached
# validator lookups need, where ``type[Any]`` is not.
_P = TypeVar("_P", bound=BaseModel, default=BaseModel)
_R = TypeVar("_R", bound=BaseModel, default=BaseModel)


@dataclass(frozen=True)
class MethodSpec(Generic[_P, _R]):
    """One row of a version's method table, generic in its params type and its result type.

    ``params`` and ``result`` are the generated types (a model class, or a
    union alias, a ``TypeAliasType``, for the few payloads that are unions);
    ``result`` is ``None`` for a notification. The generated tables give
    each row its types (``MethodSpec[NewSessionRequest, NewSessionResponse]``;
    a union payload's type is the union, a notification's result type is
    ``Never``, since it has none), so ``validate_params`` and
    ``validate_result`` are typed per method. A bare ``MethodSpec`` is
    ``MethodSpec[BaseModel, BaseModel]``.
    ``capability`` is the path of wire names to the
    capability that gates the method, ``None`` when it is baseline.
    ``handler`` is the attribute a connection calls on its handler object
    for the method (the same name as the stub in ``Agent`` / ``Client``).
    """

    name: str
    params: type[_P] | TypeAliasType
    result: type[_R] | TypeAliasType | None
    side: Side
    kind: Kind
    capability: tuple[str, ...] | None
    errors: tuple[int, ...]
    stability: Stability
    description: str
    handler: str = ""
    """The name of the handler method a connection calls for it (see ``acp_types.connection``)."""
    notification_params: Any = None
    """For a request that may also be sent as a notification (``mcp/message``): the params type then."""

    def validate_params(self, params: Any) -> _P:
        """Validate ``params`` as this method's params type and return the model.

        The payload is first read as JSON within the parser's limits
        (``acp_types._wire``); beyond them, the ``ValidationError`` says where.
        """
        model: _P = _validator(self.params)(wire_payload(params, self.params))
        return model

    def validate_notification_params(self, params: Any) -> Any:
        """Validate the params of this method sent as a notification (``notification_params``, else ``params``)."""
        tp = (
            self.notification_params
            if self.notification_params is not None
            else self.params
        )
        return _validator(tp)(wire_payload(params, tp))

    def validate_result(self, result: Any) -> _R:
        """Validate ``result`` as this method's result type; raise NotARequestError for a notification."""
        if self.result is None:
            raise NotARequestError(f"{self.name!r} is a notification and has no result")
        model: _R = _validator(self.result)(wire_payload(result, self.result))
        return model


@cache
def _validator(tp: Any) -> Callable[[Any], Any]:
    # strict=True at the call, not only in the models' config: a union
    # payload's TypeAdapter (lax by default) can be the first to build a
    # branch model, and what it builds inline (type aliases such as
    # RequestId) would otherwise be lax in that adapter alone, so the
    # result would depend on which entry point ran first. The validator is
    # the type's own schema with error reports bounded (see _validators).
    # After it, the slow path of a key spelled like an attribute (see WireKey).
    # A rejected payload is validated again by the precise form (see
    # FAST_UNION), whose errors are raised.
    bounded = _validators.bind(tp)
    slow = _SLOW

    def validate(data: Any) -> Any:
        # the happy path: one call of the validator, one read of the flag
        try:
            value = bounded(data)
        except ValidationError:
            slow.needed = False
            return _validate_json_numbers(partial(_payload, bounded, tp), data)
        if slow.needed:
            return _again(slow_validator(tp).validate_python, data, strict=True, by_name=False)
        return value

    return validate


def _payload(bounded: Callable[[Any], Any], tp: Any, data: Any) -> Any:
    """One try of a payload the entry point's validator rejected (or its integral floats made integers)."""
    try:
        value = bounded(data)
    except ValidationError:
        return _again(_validators.bind(tp, precise=True), data)
    if _SLOW.needed:
        return _again(slow_validator(tp).validate_python, data, strict=True, by_name=False)
    return value


def _again(validate: Callable[..., Any], data: Any, **options: Any) -> Any:
    """An entry point's cold path: ``data`` validated again (the precise form after a rejection, or the slow path).

    The slow-path flag a first validation set is cleared first, and whatever
    this validation sets is cleared too, error or not, so no flag outlives
    the entry point.
    """
    _SLOW.needed = False
    try:
        return validate(data, **options)
    finally:
        _SLOW.needed = False


def _validate_json_numbers(base: Callable[[Any], Any], data: Any) -> Any:
    """``base(data)``, reading an integral float (``1.0``) as an integer where one is expected.

    JSON Schema counts ``1.0`` as an integer, the strict models do not: when
    validation fails on such a number, the number (and only it: the float
    object the error names) is read as an ``int`` and the payload validated
    again. The happy path never gets here (the entry point's validator calls
    it only after a rejection); data elsewhere keeps its notation.
    """
    for _ in range(4):
        try:
            return base(data)
        except ValidationError as exc:
            fixed = _integral_floats_as_ints(data, exc)
            if fixed is None:
                raise
            data = fixed
    return base(data)


def _has_integral_float(value: Any) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is float:
            if v.is_integer():
                return True
        elif t is dict:
            stack.extend(v.values())
        elif t is list:
            stack.extend(v)
    return False


def _integral_floats_as_ints(data: Any, exc: ValidationError) -> Any:
    if not _has_integral_float(data):
        return None
    targets = {
        id(e["input"])
        for e in exc.errors(include_url=False, include_context=False)
        if e["type"] == "int_type"
        and type(e["input"]) is float
        and e["input"].is_integer()
    }
    if not targets:
        return None

    def swap(v: Any) -> Any:
        t = type(v)
        if t is float:
            return int(v) if id(v) in targets else v
        if t is dict:
            out = {k: swap(x) for k, x in v.items()}
            return v if all(out[k] is x for k, x in v.items()) else out
        if t is list:
            new = [swap(x) for x in v]
            return v if all(a is b for a, b in zip(new, v, strict=True)) else new
        return v

    fixed = swap(data)
    return None if fixed is data else fixed


def wire_payload(value: Any, tp: Any) -> Any:
    """``value`` read as JSON within the parser's limits (integral floats as ints); else a ValidationError.

    ``tp`` names the type in the error. The input is never changed.
    """
    try:
        return _wire.check_value(value, 1)
    except _wire.JsonLimitError as exc:
        title = tp if isinstance(tp, str) else getattr(tp, "__name__", None) or str(tp)
        raise ValidationError.from_exception_data(
            title,
            [
                {
                    "type": PydanticCustomError(
                        "json_limit", "{reason}", {"reason": exc.reason}
                    ),
                    "loc": exc.path,
                    "input": value,
                }
            ],
        ) from None


@dataclass(frozen=True)
class FeatureSpec:
    """An optional ability that is advertised by a capability but is not a method."""

    name: str
    side: FeatureSide
    capability: tuple[str, ...]
    description: str
    stability: Stability = "stable"


def is_extension(method: str) -> bool:
    """Extension methods and notifications start with an underscore."""
    return method.startswith("_")


def lookup(
    table: Mapping[str, MethodSpec], method: Any, version: str
) -> MethodSpec | None:
    """The row of ``method`` (``None`` for an extension method); UnknownMethodError for anything else.

    A ``method`` that is not a string is unknown too.
    """
    if type(method) is not str:
        # a method name read from an untrusted message may be anything
        raise UnknownMethodError(method, version)
    spec = table.get(method)
    if spec is None and not is_extension(method):
        raise UnknownMethodError(method, version)
    return spec


def advertised(message: Any, path: tuple[str, ...]) -> bool:
    """Whether an initialize message advertises the capability at ``path``.

    A capability is advertised when its value is present and neither ``null``
    nor ``false``: v1 booleans (``true``) and objects, v2 ``{}`` markers.
    """
    value = message.to_wire() if isinstance(message, AcpModel) else message
    for segment in path:
        if not isinstance(value, Mapping):
            return False
        value = value.get(segment)
    return value is not None and value is not False


# The store and the bounded validators, which every first message needs: loaded
# with the models, they are no part of its cost. Last, as they import from here.
from . import _build, _validators  # noqa: E402
