"""Runtime support shared by every version of acp_types.

The generated models build on what is here: the common base class, the
discriminators that pick a union branch by its tag, the tolerant-receiver
validator and the method table types.

Hand-written: the source is runtime/_runtime.py, which the generator copies
into the package unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, partial
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    ModelWrapValidatorHandler,
    ValidationError,
    model_validator,
)

UNKNOWN_TAG = "__acp_unknown__"
"""The pydantic tag under which an open union keeps a branch it does not know."""

DEFAULT_TAG = "__acp_default__"
"""The pydantic tag of an untagged default branch (chosen when the tag is absent)."""

_MISSING = object()


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
    """The properties the schema marks tolerant (x-acp-on-error, x-acp-invalid-items); set per class."""

    _acp_required_one_of: ClassVar[tuple[str, ...]] = ()
    """Schema hook ``x-acp-required-one-of``: wire keys of which at least one must be present."""

    @model_validator(mode="wrap")
    @classmethod
    def _acp_receive(cls, data: Any, handler: ModelWrapValidatorHandler[Any]) -> Any:
        # The one Python step per model: the tolerant receiver where the
        # schema asks for it, then a fix for pydantic counting every unknown
        # key as "set": one spelled like an attribute (wire "meta" beside the
        # field "_meta") would make that field look set and be written back
        # as null.
        if cls._acp_required_one_of:
            require_one_of(data, cls._acp_required_one_of)
        fields = cls._acp_tolerant_fields
        model = tolerant_receive(data, handler, fields) if fields else handler(data)
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

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready wire form: wire names, unset fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def to_json(self) -> str:
        """The wire form as compact JSON text."""
        return self.model_dump_json(by_alias=True, exclude_unset=True)


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
    branch, :data:`DEFAULT_TAG` when the tag is absent and the union has an
    untagged default branch, :data:`UNKNOWN_TAG` for an unknown tag of an open
    union. ``None`` (no tag) and an unknown tag of a closed union become
    validation errors in pydantic.

    Schema hooks (``x-acp-union``): ``unknown_default`` reads an unknown tag
    of a closed union as the default branch (``"unknown": "default"``);
    ``unknown_required`` lists the wire keys an unknown variant of an open
    union must carry (``"unknownRequired"``), and one missing is an error.
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
        if unknown_default:
            return default
        if open:
            if unknown_required and isinstance(value, Mapping):
                if any(key not in value for key in unknown_required):
                    return None
            return UNKNOWN_TAG
        return tag

    return discriminate


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


def require_one_of(data: Any, keys: tuple[str, ...]) -> None:
    """Raise ``ValueError`` (a validation error in pydantic) when a wire object has none of ``keys``."""
    if isinstance(data, Mapping) and not any(key in data for key in keys):
        raise ValueError(f"at least one of {', '.join(keys)} must be present")


def same_kind(items: list[Any]) -> list[Any]:
    """Schema hook ``x-acp-same-kind``: every item of the array is of one union branch."""
    if len({type(item) for item in items}) > 1:
        raise ValueError("every item must be of the same kind (do not mix the union's branches)")
    return items


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
    default_on_error: bool = False
    """Schema hook ``"x-acp-on-error": "default"``: a malformed required array reads as ``[]``."""


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
    reset_keys: set[str] = set()
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
        elif spec.default_on_error:
            reset_keys.add(key)
        elif spec.omit_on_error:
            drop_keys.add(key)
    if not drop_keys and not drop_items and not reset_keys:
        return None
    fixed = {k: v for k, v in data.items() if k not in drop_keys}
    for key in reset_keys:
        fixed[key] = []
    for key, bad in drop_items.items():
        if key in fixed:
            fixed[key] = [item for i, item in enumerate(fixed[key]) if i not in bad]
    return fixed


class UnknownMethodError(LookupError):
    """The method is not part of this protocol version and is not an extension method.

    Extension methods (names starting with ``_``) are never unknown: their
    payloads pass through unchanged.
    """

    def __init__(self, method: str, version: str):
        self.method = method
        self.version = version
        super().__init__(f"{method!r} is not a method of ACP {version}")


class NotARequestError(ValueError):
    """A result was given for a notification, which has none."""


Side = Literal["agent", "client", "protocol"]
Kind = Literal["request", "notification"]
Stability = Literal["stable", "draft", "proposal"]


@dataclass(frozen=True)
class MethodSpec:
    """One row of a version's method table.

    ``params`` and ``result`` are the generated types (a model class, or a
    union alias for the few payloads that are unions); ``result`` is ``None``
    for a notification. ``capability`` is the path of wire names to the
    capability that gates the method, ``None`` when it is baseline.
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

    def validate_params(self, params: Any) -> Any:
        """Validate ``params`` as this method's params type and return the model."""
        return _validator(self.params)(params)

    def validate_result(self, result: Any) -> Any:
        """Validate ``result`` as this method's result type; raise NotARequestError for a notification."""
        if self.result is None:
            raise NotARequestError(f"{self.name!r} is a notification and has no result")
        return _validator(self.result)(result)


@cache
def _validator(tp: Any) -> Callable[[Any], Any]:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return partial(tp.model_validate, by_name=False)
    from pydantic import (
        TypeAdapter,
    )  # only the few union payloads need one; keep it off the import path

    return partial(TypeAdapter(tp).validate_python, by_name=False)


@dataclass(frozen=True)
class FeatureSpec:
    """An optional ability that is advertised by a capability but is not a method."""

    name: str
    side: Literal["agent", "client"]
    capability: tuple[str, ...]
    description: str


def is_extension(method: str) -> bool:
    """Extension methods and notifications start with an underscore."""
    return method.startswith("_")


def lookup(
    table: Mapping[str, MethodSpec], method: str, version: str
) -> MethodSpec | None:
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
