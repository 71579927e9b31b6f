"""Runtime support shared by every version of acp_types: the model base, field markers, union tags, method tables.

The generated models build on what is here:

- :class:`AcpModel`, the base class (strict, wire names as aliases, built on
  first use so importing a version stays cheap);
- the field markers the plan puts on fields (:data:`OMIT_ON_ERROR`,
  :data:`DEFAULT_ON_ERROR`, :data:`NOT_NULL`, :data:`FAIL_FAST`,
  :class:`WireKey`) and
  :data:`JsonInt`, the integer of JSON Schema (``1.0`` is one);
- the discriminators of unions whose branch is picked by a tag that may be
  unknown or absent (:func:`tag_discriminator`) or by the keys present
  (:func:`presence_discriminator`);
- the method table (:class:`MethodSpec`) and the validation of a payload at a
  wire entry point (:func:`validate_payload`).

Everything here uses pydantic's public API.

Hand-written: the source is runtime/_runtime.py, which the generator copies
into the package unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from copy import copy
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Generic

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler, TypeAdapter, ValidationError
from pydantic_core import CoreSchema, PydanticCustomError, core_schema, from_json
from pydantic_core.core_schema import ValidatorFunctionWrapHandler
from typing_extensions import Self, TypeAliasType, TypeVar

from acp_types._protocol import FeatureSide, Kind, Side, Stability

from . import _wire

UNKNOWN_TAG = "__acp_unknown__"
"""The pydantic tag of an open union's unknown branch (:class:`UnknownVariant`).

Only :func:`tag_discriminator` returns it, for a wire tag it does not know, so
a wire tag spelled like it is one more unknown tag."""

WRITE_BACK: dict[str, Any] = {"by_alias": True, "exclude_unset": True}
"""The rule every write of a model to the wire follows: wire names, and only what was set.

An omitted field stays omitted and an explicit ``null`` stays ``null``, so a
patch keeps its meaning (see :func:`to_wire`)."""


def to_wire(model: BaseModel) -> Any:
    """The JSON-ready wire form of ``model`` (:data:`WRITE_BACK`).

    ``model_dump(mode="json", **WRITE_BACK)``, straight to the class's serializer.
    """
    return model.__pydantic_serializer__.to_python(model, mode="json", **WRITE_BACK)


def wire_json(model: BaseModel) -> bytes:
    """The wire form of ``model`` as compact UTF-8 JSON (:data:`WRITE_BACK`), straight to the class's serializer."""
    return model.__pydantic_serializer__.to_json(model, **WRITE_BACK)


def to_json(model: BaseModel) -> str:
    """The wire form of ``model`` as compact JSON text (:data:`WRITE_BACK`)."""
    return wire_json(model).decode()


def type_name(tp: Any) -> str:
    """The name of a payload type as messages show it: ``v1.NewSessionRequest``."""
    name = getattr(tp, "__name__", None) or str(tp)
    module = getattr(tp, "__module__", "") or ""
    parts = module.split(".")
    if len(parts) >= 3 and parts[0] == "acp_types" and parts[2] == "models":
        return f"{parts[1]}.{name}"
    return name


# --------------------------------------------------------------------------- keys spelled like attributes


class _Seen(threading.local):
    """The attribute spellings met as unknown keys since an entry point last looked (see :class:`WireKey`)."""

    keys: set[str] | None = None


_SEEN = _Seen()

_ESCAPE = "\ue000"
"""A private-use character: the prefix a key spelled like an attribute wears while it is validated again."""


class WireKey:
    """Key marker of ``__pydantic_extra__``: the attribute spellings that are not wire names.

    The wire entry points read wire names only, so ``meta`` beside the field
    ``_meta`` is an unknown key, kept and written back. But pydantic counts
    every unknown key in ``model_fields_set``, and a key with a field's
    attribute name would make that field look set (written back as
    ``"_meta": null``). Only unknown keys reach this check: one of ``names``
    is noted, and the entry point then validates the message again with
    those keys escaped (:func:`_again`), which gives the same models with the
    field left unset. A message without such a key makes no Python call here.
    """

    def __init__(self, *names: str) -> None:
        self.names = frozenset(names)

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        names = self.names

        def check(key: str) -> str:
            if key in names:
                seen = _SEEN.keys
                if seen is None:
                    _SEEN.keys = {key}
                else:
                    seen.add(key)
            return key

        return core_schema.no_info_after_validator_function(check, handler(source))


def _escape(data: Any, keys: set[str]) -> Any:
    """A copy of ``data`` with every key of ``keys``, and every key that starts with the escape, escaped."""
    if type(data) is dict:
        return {(_ESCAPE + k if k in keys or k.startswith(_ESCAPE) else k): _escape(v, keys) for k, v in data.items()}
    if type(data) is list:
        return [_escape(v, keys) for v in data]
    return data


def _unescape(value: Any) -> Any:
    """``value`` validated from escaped data, with the keys as they came; models are changed in place."""
    if isinstance(value, BaseModel):
        fields = type(value).model_fields
        for name, item in value.__dict__.items():
            value.__dict__[name] = _unescape(item)
        extra = value.__pydantic_extra__
        if extra:
            value.__pydantic_extra__ = _unescape(extra)
            kept = set()
            for key in value.__pydantic_fields_set__:
                if key.startswith(_ESCAPE):
                    key = key[1:]
                    if key in fields:
                        continue  # an unknown key spelled like this field: the field is not set by it
                kept.add(key)
            value.__pydantic_fields_set__ = kept
        return value
    if type(value) is dict:
        return {(k[1:] if k.startswith(_ESCAPE) else k): _unescape(v) for k, v in value.items()}
    if type(value) is list:
        return [_unescape(v) for v in value]
    return value


def _again(validate: Callable[..., Any], data: Any, **options: Any) -> Any:
    """``data`` validated again with the attribute spellings noted escaped, then unescaped (the slow path)."""
    keys = _SEEN.keys or set()
    _SEEN.keys = None
    try:
        value = validate(_escape(data, keys), **options)
    finally:
        _SEEN.keys = None
    return _unescape(value)


def _validated(validate: Callable[..., Any], data: Any, **options: Any) -> Any:
    """``validate(data, **options)``, through the slow path when a key spelled like an attribute was met."""
    try:
        value = validate(data, **options)
    except ValidationError:
        _SEEN.keys = None
        raise
    if _SEEN.keys is not None:
        return _again(validate, data, **options)
    return value


# --------------------------------------------------------------------------- field markers


class _OmitOnError:
    """Field marker of ``x-acp-on-error: omit``: a malformed value is treated as omitted.

    pydantic-core drops the field (``on_error="omit"``), so it is not counted
    as set and is not written back; the attribute then reads the default,
    which :class:`AcpModel` keeps on the class for these fields.
    """

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.with_default_schema(handler(source), on_error="omit")

    def __repr__(self) -> str:
        return "OMIT_ON_ERROR"


OMIT_ON_ERROR = _OmitOnError()
"""The one instance of the omit-on-error field marker."""


def _default_on_error(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    try:
        return handler(value)
    except ValidationError:
        return []


class _DefaultOnError:
    """Field marker of ``x-acp-on-error: default`` (required arrays): a malformed value reads as ``[]``.

    The field stays required (a missing key is still an error); the empty
    list counts as set and is written back.
    """

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_wrap_validator_function(_default_on_error, handler(source))

    def __repr__(self) -> str:
        return "DEFAULT_ON_ERROR"


DEFAULT_ON_ERROR = _DefaultOnError()
"""The one instance of the default-on-error field marker."""


class _NotNull:
    """Field marker: an optional property whose schema does not admit ``null``.

    The attribute is typed ``X | None`` because it is ``None`` when the
    property is omitted, but an explicit ``null`` on the wire is invalid, as
    in the JSON Schema (and, on a tolerant ``omit`` field, treated as omitted).
    """

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        schema = handler(source)
        if schema.get("type") != "nullable":
            raise TypeError(f"NOT_NULL applies to an optional (X | None) field, not {source!r}")
        return schema["schema"]  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return "NOT_NULL"


NOT_NULL = _NotNull()
"""The one instance of the not-null field marker, used by the generated models."""


class _FailFast:
    """Marker of every array and map of the models: validation stops at the first invalid item.

    pydantic reports every invalid item, and each report costs a few hundred
    bytes: a message of a million small invalid items would cost hundreds of
    times its size. An array the schema marks ``x-acp-invalid-items: skip``
    keeps its meaning: its invalid items are dropped where they are met
    (``OnErrorOmit``) and never reach a report. (pydantic's own ``FailFast``
    does the same but cannot be hashed, which a type alias's ``|`` needs.)
    """

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        schema = handler(source)
        if schema.get("type") in ("list", "dict"):
            schema = {**schema, "fail_fast": True}
        return schema

    def __repr__(self) -> str:
        return "FAIL_FAST"


FAIL_FAST = _FailFast()
"""The one instance of the fail-fast marker."""


def _integral(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    try:
        return handler(value)
    except ValidationError:
        if type(value) is float and value.is_integer():
            return handler(int(value))
        raise


class _Integral:
    """An integer as JSON Schema reads one: ``1.0`` is the integer 1, ``1.5`` and ``"1"`` are not integers."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return core_schema.no_info_wrap_validator_function(_integral, handler(source))

    def __repr__(self) -> str:
        return "INTEGRAL"


JsonInt = Annotated[int, _Integral()]
"""The annotation of a schema ``integer``: an ``int``, read from ``1`` or ``1.0``."""


# --------------------------------------------------------------------------- the base class


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
                base = next(
                    (
                        b.__dict__["__pydantic_fields__"][name]
                        for b in cls.__mro__[1:]
                        if name in b.__dict__.get("__pydantic_fields__", {})
                    ),
                    None,
                )
                if base is not None and any(isinstance(m, _OmitOnError) for m in base.metadata):
                    cls.__pydantic_fields__[name] = info = copy(base)
                    inherited = True
            # A tolerant field dropped on error is absent from the instance; the
            # attribute then reads the class's default, as if it were omitted.
            if any(isinstance(m, _OmitOnError) for m in info.metadata):
                type.__setattr__(cls, name, info.default)
        if not cls.model_config.get("title") and type_name(cls) != cls.__name__:
            # errors name the version too: "1 validation error for v1.NewSessionRequest"
            cls.model_config = {**cls.model_config, "title": type_name(cls)}
            inherited = inherited or cls.__pydantic_complete__
        if inherited and cls.__pydantic_complete__:  # built at creation (defer_build off): build it again
            cls.model_rebuild(force=True)

    @classmethod
    def model_validate(cls, obj: Any, **options: Any) -> Self:
        return _validated(super().model_validate, obj, **options)  # type: ignore[no-any-return]

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **options: Any) -> Self:
        try:
            model = super().model_validate_json(json_data, **options)
        except ValidationError:
            _SEEN.keys = None
            raise
        if _SEEN.keys is None:
            return model
        # (the slow path reads the decoded text: JSON has no other value than the decoded one)
        return _again(super().model_validate, from_json(json_data), **options)  # type: ignore[no-any-return]

    # (attribute, wire name, value) of each tag field: required on the wire, filled in by the
    # constructor. A dunder name, which pydantic leaves alone in a class body.
    if TYPE_CHECKING:
        __acp_tags__: ClassVar[tuple[tuple[str, str, Any], ...]]
    __acp_tags__ = ()

    def __init__(self, /, **data: Any) -> None:
        """Construct in code: every keyword is a field (attribute or wire name); ``extra=`` holds unknown keys.

        A misspelled field (``stauts="pending"``) is a ``TypeError``, not an
        unknown key sent on the wire; keys the schema does not define, which
        a model read from the wire keeps, are given as ``extra={"key": ...}``.
        A required single-value field (a union branch's tag) is filled in.
        """
        cls = type(self)
        names = _NAMES.get(cls)
        if names is None:
            names = _NAMES[cls] = frozenset(cls.__pydantic_fields__) | {
                f.alias for f in cls.__pydantic_fields__.values() if f.alias
            }
        extra = data.pop("extra") if "extra" in data and "extra" not in names else None
        if not names.issuperset(data) and not issubclass(cls, UnknownVariant):
            unknown = sorted(key for key in data if key not in names)
            raise TypeError(
                f"{type_name(cls)} has no field {', '.join(map(repr, unknown))}; "
                f"pass keys the schema does not define as extra={{...}}"
            )
        for attr, wire, value in cls.__acp_tags__:
            if attr not in data and wire not in data:
                data[attr] = value
        if extra:
            clash = sorted(key for key in extra if key in names)
            if clash:
                raise TypeError(f"extra= holds fields of {type_name(cls)}: {', '.join(map(repr, clash))}")
            data.update(extra)
        # what BaseModel.__init__ does, without a second call and its keywords packed again
        self.__pydantic_validator__.validate_python(data, self_instance=self)

    # pydantic calls a model's own __init__ from model_validate too unless it
    # is marked as the base one; this one only adds to construction in code.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready wire form: wire names, unset fields left out."""
        return to_wire(self)  # type: ignore[no-any-return]

    def to_json(self) -> str:
        """The wire form as compact JSON text."""
        return to_json(self)


_NAMES: dict[type, frozenset[str]] = {}
"""Each model class's field names and wire names, which the constructor accepts as keywords."""


class UnknownVariant(AcpModel):
    """A branch of an open union that this version does not know.

    Every field is kept as it came (see ``model_extra``) and written back
    unchanged, so a proxy loses nothing.
    """

    def tag(self, name: str) -> Any:
        """The value of the tag property ``name`` (for example ``"sessionUpdate"``)."""
        return (self.model_extra or {}).get(name)


# --------------------------------------------------------------------------- unions and checks

_MISSING = object()


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

    Returns the pydantic tag of the branch: the wire tag of a known branch;
    ``default`` (the default branch's class name) when the tag is absent and
    the union has an untagged default branch, or, with ``unknown_default``
    (``x-acp-union`` ``"unknown": "default"``), for any unknown tag;
    :data:`UNKNOWN_TAG` for an unknown tag of an open union. A mapping (the
    wire) is read by its wire key ``wire`` only; a model instance (code) by
    its attribute ``attr``. ``None`` is a validation error in pydantic: a tag
    that is not a string, an unknown tag of a closed union, or (with
    ``unknown_required``) an unknown variant missing one of those wire keys.
    """

    def discriminate(value: Any) -> str | None:
        if type(value) is dict:
            tag = value.get(wire, _MISSING)
            if type(tag) is str and tag in known:  # (every valid message of a known branch)
                return tag
        elif isinstance(value, Mapping):
            tag = value.get(wire, _MISSING)
        elif isinstance(value, UnknownVariant):
            return UNKNOWN_TAG
        else:
            tag = getattr(value, attr, _MISSING)
        if tag is _MISSING or tag is None and not isinstance(value, Mapping):
            return default
        if not isinstance(tag, str):
            return None
        if tag in known:
            return tag
        if unknown_default:
            return default
        if open:
            if unknown_required and isinstance(value, Mapping) and any(k not in value for k in unknown_required):
                return None
            return UNKNOWN_TAG
        # a closed union's unknown tag: pydantic names it in its error, unless it is
        # spelled like the untagged default branch's own pydantic tag (its class name)
        return None if tag == default else tag

    return discriminate


def presence_discriminator(keys: Mapping[str, str], *, first: bool = False) -> Callable[[Any], str | None]:
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

    A field counts as present when it holds a value, or when it was set to
    ``null`` under its own name; an unknown key spelled like the attribute
    does not count, as it is no wire name.
    """

    def check(model: Any) -> Any:
        extra = model.__pydantic_extra__ or {}
        fields_set = model.__pydantic_fields_set__
        for name in names:
            if getattr(model, name, None) is not None or (name in fields_set and name not in extra):
                return model
        raise ValueError(f"at least one of {', '.join(names)} must be present")

    return check


def same_kind(items: list[Any]) -> list[Any]:
    """After-validator of ``x-acp-same-kind``: every item of the array is of one union branch."""
    if len({type(item) for item in items}) > 1:
        raise ValueError("every item must be of the same kind (do not mix the union's branches)")
    return items


# --------------------------------------------------------------------------- payloads at the wire entry points


@cache
def payload_validator(tp: Any) -> Callable[..., Any]:
    """``validate_python`` of ``tp``: a model class's own validator, or a union alias's ``TypeAdapter``."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if not tp.__pydantic_complete__:
            tp.model_rebuild()
        return tp.__pydantic_validator__.validate_python
    return TypeAdapter(tp).validator.validate_python


def validate_payload(tp: Any, data: Any) -> Any:
    """``data``, JSON within the parser's limits already, validated as ``tp`` the way the wire is read.

    Strict (at the call too: a union alias's ``TypeAdapter`` is lax by
    default), wire names only; an error report names the first invalid item
    of each array (the models' arrays fail fast).
    """
    return _validated(payload_validator(tp), data, strict=True, by_name=False)


def wire_payload(value: Any, tp: Any) -> Any:
    """``value`` read as JSON within the parser's limits; else a ``ValidationError`` titled by ``tp``."""
    try:
        return _wire.check_value(value, 1)
    except _wire.JsonLimitError as exc:
        title = tp if isinstance(tp, str) else type_name(tp)
        raise ValidationError.from_exception_data(
            title,
            [
                {
                    "type": PydanticCustomError("json_limit", "{reason}", {"reason": exc.reason}),
                    "loc": exc.path,
                    "input": value,
                }
            ],
        ) from None


# --------------------------------------------------------------------------- method tables


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
# BaseModel subclass is hashable to a type checker, where ``type[Any]`` is not.
_P = TypeVar("_P", bound=BaseModel, default=BaseModel)
_R = TypeVar("_R", bound=BaseModel, default=BaseModel)


@dataclass(frozen=True)
class MethodSpec(Generic[_P, _R]):
    """One row of a version's method table, generic in its params type and its result type.

    ``params`` and ``result`` are the generated types (a model class, or a
    union alias, a ``TypeAliasType``, for the few payloads that are unions);
    ``result`` is ``None`` for a notification. The generated tables give
    each row its types (``MethodSpec[NewSessionRequest, NewSessionResponse]``),
    so ``validate_params`` and ``validate_result`` are typed per method.
    ``capability`` is the path of wire names to the capability that gates
    the method, ``None`` when it is baseline. ``handler`` is the attribute a
    connection calls on its handler object for the method.
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
        return validate_payload(self.params, wire_payload(params, self.params))  # type: ignore[no-any-return]

    def validate_notification_params(self, params: Any) -> Any:
        """Validate the params of this method sent as a notification (``notification_params``, else ``params``)."""
        tp = self.notification_params if self.notification_params is not None else self.params
        return validate_payload(tp, wire_payload(params, tp))

    def validate_result(self, result: Any) -> _R:
        """Validate ``result`` as this method's result type; raise NotARequestError for a notification."""
        if self.result is None:
            raise NotARequestError(f"{self.name!r} is a notification and has no result")
        return validate_payload(self.result, wire_payload(result, self.result))  # type: ignore[no-any-return]


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


def lookup(table: Mapping[str, MethodSpec], method: Any, version: str) -> MethodSpec | None:
    """The row of ``method`` (``None`` for an extension method); UnknownMethodError for anything else."""
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
    value = to_wire(message) if isinstance(message, BaseModel) else message
    for segment in path:
        if not isinstance(value, Mapping):
            return False
        value = value.get(segment)
    return value is not None and value is not False
