"""Runtime support shared by every version of acp_types.

The generated models build on what is here: the common base class, the
discriminators that pick a union branch by its tag, the tolerant-receiver
validator and the method table types.

Hand-written: the source is runtime/_runtime.py, which the generator copies
into the package unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache, partial
from typing import Any, ClassVar, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    ValidationError,
    model_validator,
)

from acp_types._protocol import FeatureSide, Kind, Side, Stability

UNKNOWN_TAG = "__acp_unknown__"
"""The pydantic tag under which an open union keeps a branch it does not know."""

DEFAULT_TAG = "__acp_default__"
"""The pydantic tag of an untagged default branch (chosen when the tag is absent)."""

_MISSING = object()
_SENTINEL_TAGS = frozenset({UNKNOWN_TAG, DEFAULT_TAG})


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

    _acp_tolerant_fields: ClassVar[tuple[TolerantField, ...]] = ()
    _acp_consts: ClassVar[tuple[str, ...]] = ()
    """Wire names of the required single-value fields (tags), which default to their value in code only."""
    _acp_const_attrs: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        consts = _consts(cls)
        cls._acp_consts = tuple(wire for _, wire in consts)
        cls._acp_const_attrs = tuple(attr for attr, _ in consts)

    """The properties the schema marks tolerant (x-acp-on-error, x-acp-invalid-items); set per class."""

    @model_validator(mode="wrap")
    @classmethod
    def _acp_receive(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        # The one Python step per model: the tolerant receiver where the
        # schema asks for it, then a fix for pydantic counting every unknown
        # key as "set": one spelled like an attribute (wire "meta" beside the
        # field "_meta") would make that field look set and be written back
        # as null.
        fields = cls._acp_tolerant_fields
        model = tolerant_receive(data, handler, fields) if fields else handler(data)
        consts = cls._acp_consts
        if consts and type(data) is dict:
            for wire in consts:
                if wire not in data and not _CONSTRUCTING.get():
                    _missing(cls, consts, data)
        extra = model.__pydantic_extra__
        if extra and isinstance(data, Mapping):
            known = cls.__pydantic_fields__
            for key in extra:
                field = known.get(key)
                if (
                    field is not None
                    and field.alias not in (None, key)
                    and field.alias not in data
                ):
                    model.__pydantic_fields_set__.discard(key)
        return model

    def __init__(self, /, **data: Any) -> None:
        # A required single-value field (a union branch's tag) defaults to its
        # value when constructing in code, and counts as set so that to_wire
        # writes it. On the wire it stays required (see _acp_receive).
        token = _CONSTRUCTING.set(True)
        try:
            super().__init__(**data)
        finally:
            _CONSTRUCTING.reset(token)
        attrs = type(self)._acp_const_attrs
        if attrs:
            self.__pydantic_fields_set__.update(attrs)

    # pydantic calls a model's own __init__ from model_validate too unless it
    # is marked as the base one; this one only adds to construction in code.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready wire form: wire names, unset fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def to_json(self) -> str:
        """The wire form as compact JSON text."""
        return self.model_dump_json(by_alias=True, exclude_unset=True)


_CONSTRUCTING: ContextVar[bool] = ContextVar("acp_constructing", default=False)


def _consts(cls: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """(attribute, wire name) of each field of ``cls`` typed as one ``Literal`` value and defaulting to it."""
    out = []
    for name, info in cls.__pydantic_fields__.items():
        args = get_args(info.annotation)
        if (
            get_origin(info.annotation) is Literal
            and len(args) == 1
            and info.default == args[0]
        ):
            out.append((name, info.alias or name))
    return tuple(out)


def _missing(
    cls: type[BaseModel], consts: tuple[str, ...], data: Mapping[str, Any]
) -> None:
    """On the wire a tag is required even though it has a default in code: a missing one is an error."""
    raise ValidationError.from_exception_data(
        cls.__name__,
        [
            {"type": "missing", "loc": (wire,), "input": data}
            for wire in consts
            if wire not in data
        ],
    )


class UnknownVariant(AcpModel):
    """A branch of an open (v2) union that this version does not know.

    Every field is kept as it came (see ``model_extra``) and written back
    unchanged, so a proxy loses nothing.
    """

    def tag(self, name: str) -> Any:
        """The value of the tag property ``name`` (for example ``"sessionUpdate"``)."""
        return (self.model_extra or {}).get(name)


def tag_discriminator(
    wire: str, attr: str, known: frozenset[str], *, open: bool, default: str | None
) -> Callable[[Any], str | None]:
    """Pick a tagged union's branch by looking its tag up, never by trying branches.

    Returns the pydantic tag of the branch: the tag value itself for a known
    branch, :data:`DEFAULT_TAG` when the tag is absent and the union has an
    untagged default branch, :data:`UNKNOWN_TAG` for an unknown tag of an open
    union. ``None`` (no tag) and an unknown tag of a closed union become
    validation errors in pydantic.
    """

    def discriminate(value: Any) -> str | None:
        if isinstance(value, Mapping):
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
        if open:
            return UNKNOWN_TAG
        # a closed union's unknown tag fails in pydantic; the sentinels are
        # pydantic tags of this runtime, never tag values of the wire
        return None if tag in _SENTINEL_TAGS else tag

    return discriminate


def presence_discriminator(keys: Mapping[str, str]) -> Callable[[Any], str | None]:
    """Pick a branch by which one of ``keys`` (wire name -> branch tag) the object has.

    Exactly one of the keys must be present; otherwise it is a validation error.
    """

    def discriminate(value: Any) -> str | None:
        if isinstance(value, Mapping):
            found = [tag for key, tag in keys.items() if key in value]
        else:
            found = [tag for tag in keys.values() if type(value).__name__ == tag]
        return found[0] if len(found) == 1 else None

    return discriminate


class _NotNull:
    """Field marker: an optional property whose schema does not admit ``null``.

    The attribute is typed ``X | None`` because it is ``None`` when the
    property is omitted, but an explicit ``null`` on the wire is invalid, as
    in the JSON Schema (and, on a tolerant ``omit`` field, treated as omitted).
    The marker only removes ``None`` from what the validator accepts; it adds
    no Python call at validation time.
    """

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        schema = handler(source)
        if schema.get("type") != "nullable":
            raise TypeError(
                f"NOT_NULL applies to an optional (X | None) field, not {source!r}"
            )
        return schema["schema"]

    def __repr__(self) -> str:
        return "NOT_NULL"


NOT_NULL = _NotNull()
"""The one instance of the not-null field marker, used by the generated models."""


@dataclass(frozen=True)
class TolerantField:
    """A property whose receiver is tolerant, from the schema's markers."""

    wire: str
    attr: str
    omit_on_error: bool
    skip_invalid_items: bool


def tolerant_receive(
    data: Any, handler: Callable[[Any], Any], fields: tuple[TolerantField, ...]
) -> Any:
    """Validate ``data``; on errors inside tolerant fields, drop what is malformed and validate again.

    A malformed value of an ``omit`` field is removed (treated as omitted, so
    it is not written back); invalid items of a ``skip`` array are removed and
    the valid ones kept. Errors anywhere else are raised unchanged. The happy
    path costs one Python call.
    """
    try:
        return handler(data)
    except ValidationError as exc:
        if not isinstance(data, Mapping):
            raise
        fixed = _without_malformed(data, exc, fields)
        if fixed is None:
            raise
    return handler(fixed)


def _without_malformed(
    data: Mapping[str, Any], exc: ValidationError, fields: tuple[TolerantField, ...]
) -> dict[str, Any] | None:
    by_key: dict[str, TolerantField] = {}
    for f in fields:
        by_key[f.wire] = f
        by_key[f.attr] = f
    drop_keys: set[str] = set()
    drop_items: dict[str, set[int]] = {}
    for error in exc.errors():
        loc = error["loc"]
        if not loc or not isinstance(loc[0], str) or loc[0] not in by_key:
            continue
        key = loc[0] if loc[0] in data else by_key[loc[0]].wire
        if key not in data:
            continue
        spec = by_key[loc[0]]
        value = data[key]
        if (
            spec.skip_invalid_items
            and isinstance(value, list)
            and len(loc) > 1
            and isinstance(loc[1], int)
        ):
            drop_items.setdefault(key, set()).add(loc[1])
        elif spec.omit_on_error:
            drop_keys.add(key)
    if not drop_keys and not drop_items:
        return None
    fixed = {k: v for k, v in data.items() if k not in drop_keys}
    for key, bad in drop_items.items():
        if key in fixed:
            fixed[key] = [item for i, item in enumerate(fixed[key]) if i not in bad]
    return fixed


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


@dataclass(frozen=True)
class MethodSpec:
    """One row of a version's method table.

    ``params`` and ``result`` are the generated types (a model class, or a
    union alias for the few payloads that are unions); ``result`` is ``None``
    for a notification. ``capability`` is the path of wire names to the
    capability that gates the method, ``None`` when it is baseline.
    ``handler`` is the attribute a connection calls on its handler object
    for the method (the same name as the stub in ``Agent`` / ``Client``).
    """

    name: str
    params: Any
    result: Any
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

    def validate_params(self, params: Any) -> Any:
        """Validate ``params`` as this method's params type and return the model.

        The payload is first read as JSON within the parser's limits
        (``acp_types._wire``); beyond them, the ``ValidationError`` says where.
        """
        return _validator(self.params)(wire_payload(params, self.params))

    def validate_notification_params(self, params: Any) -> Any:
        """Validate the params of this method sent as a notification (``notification_params``, else ``params``)."""
        tp = (
            self.notification_params
            if self.notification_params is not None
            else self.params
        )
        return _validator(tp)(wire_payload(params, tp))

    def validate_result(self, result: Any) -> Any:
        """Validate ``result`` as this method's result type; raise NotARequestError for a notification."""
        if self.result is None:
            raise NotARequestError(f"{self.name!r} is a notification and has no result")
        return _validator(self.result)(wire_payload(result, self.result))


@cache
def _validator(tp: Any) -> Callable[[Any], Any]:
    # strict=True at the call, not only in the models' config: a union
    # payload's TypeAdapter (lax by default) can be the first to build a
    # branch model, and what it builds inline (type aliases such as
    # RequestId) would otherwise be lax in that adapter alone, so the
    # result would depend on which entry point ran first. The validator is
    # the type's own schema with error reports bounded (see _validators).
    from ._validators import bind

    return partial(_validate_json_numbers, bind(tp))


def _validate_json_numbers(base: Callable[[Any], Any], data: Any) -> Any:
    """``base(data)``, reading an integral float (``1.0``) as an integer where one is expected.

    JSON Schema counts ``1.0`` as an integer, the strict models do not: when
    validation fails on such a number, the number (and only it: the float
    object the error names) is read as an ``int`` and the payload validated
    again. The happy path costs nothing; data elsewhere keeps its notation.
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
    from ._wire import JsonLimitError, check_value

    try:
        return check_value(value, 1)
    except JsonLimitError as exc:
        from pydantic_core import PydanticCustomError

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
