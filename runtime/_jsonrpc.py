"""JSON-RPC 2.0 envelopes of ACP messages, shared by every version of acp_types.

Each version binds :func:`parse_message` to its own method table in
``acp_types.<version>.messages``; use that one::

    from acp_types import v2

    msg = v2.parse_message('{"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}}')
    msg.params            # a v2.ListSessionsRequest

A response does not name its method, so its result can only be typed when the
method is known: pass ``method=``, or record each request you send in a
:class:`PendingRequests` and pass it as ``pending=``; the response then takes
its method from there (and its id is no longer pending).

What counts as malformed (each a :class:`MessageError`, with the JSON-RPC code
the problem calls for):

- text that is not JSON, bytes that are not UTF-8, or a string holding a lone
  surrogate (``-32700``);
- JSON beyond the parser's limits (``acp_types._wire``: nesting deeper than
  ``MAX_DEPTH``, a number that is not finite or an integer longer than
  ``MAX_INT_DIGITS`` digits, a key twice in one object) or decoded input
  that is not a JSON value (``-32600``; in a batch, the whole batch);
- anything but an object (or, where the version allows batches, a non-empty
  array of objects); a ``jsonrpc`` member other than the string ``"2.0"``; an
  ``id`` that is not a string, an integer or ``null``; a ``method`` that is not
  a string; ``params`` that are not an object or array; a message with a
  ``method`` and also a ``result`` or ``error``; a response with both or
  neither of ``result`` and ``error``; an error object without an integer
  ``code`` and a string ``message``; a request to a notification method or a
  notification of a request method (``-32600``);
- a method that is neither in the version nor an extension method (``-32601``);
- params that do not fit the method's params type, or omitted params of an
  ACP method (``-32602``);
- a result that does not fit the method's result type (``-32603``); a success
  response whose method is unknown (``-32600``).

Members the envelope does not define are kept in ``extra`` and written back
(on a response, that includes a ``params`` member). An integral number is an
integer whatever its notation (``1.0`` is read and written back as ``1``).
``parse_message`` raises nothing but :class:`MessageError`.
Extension methods (``_``-prefixed) pass through: their params and results stay
plain JSON.

A message of an ACP method with exactly the members JSON-RPC defines is read
in one validation of its method's envelope (``acp_types.<version>.envelopes``,
see "The fast path" below), from the text itself when it is a line; any
other message, and any problem, goes through the general path, so the result
and every error are the same either way.

Hand-written: the source is runtime/_jsonrpc.py, which the generator copies
into the package unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from itertools import count
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ValidationError

from acp_types._protocol import RequestId

from ._runtime import (
    _SENTINEL_TAGS,
    _SLOW,
    AcpModel,
    MethodSpec,
    UnknownMethodError,
    _validator,
    is_extension,
)
from ._wire import JsonLimitError, check_value, decode, whole_within_limits

JSONRPC_VERSION = "2.0"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


_ENVELOPE = frozenset({"jsonrpc", "id", "method", "params", "result", "error"})
_CALL = frozenset({"jsonrpc", "id", "method", "params"})
_RESPONSE = frozenset({"jsonrpc", "id", "result", "error"})
_NO_ID = object()
_EMPTY: Mapping[str, Any] = MappingProxyType({})


class MessageError(ValueError):
    """A message that is not a well-formed ACP message of the version.

    ``code`` is the JSON-RPC error code the problem calls for (what a receiver
    answers a request with); ``id`` is the request id when it could be read
    (``None`` otherwise); ``method`` the method when known; ``data`` the raw
    message (or batch entry) when it could be decoded. ``to_error()`` gives
    the JSON-RPC error object to answer with.

    ``kind`` is what the bad message looks like: ``"request"`` (a method and
    an id), ``"notification"`` (a method, no id), ``"response"`` or
    ``"error"`` (a result or an error, no method), ``"batch"`` (an array),
    or ``None`` when it is none of these (not JSON, not an object, neither
    shape). ``has_id`` says whether the message had an ``id`` member at all,
    so an absent id (``has_id`` false) and ``"id": null`` (``has_id`` true,
    ``id`` ``None``) stay apart. JSON-RPC answers a bad request, and a
    message whose kind is ``None`` or ``"batch"``, never a notification or a
    response: ``answerable`` says which.
    """

    code: int = INVALID_REQUEST
    kind: str | None = None
    has_id: bool = False

    def __init__(
        self,
        message: str,
        *,
        id: RequestId = None,
        method: str | None = None,
        data: Any = None,
    ):
        super().__init__(message)
        self.message = message
        self.id = id
        self.method = method
        self.data = data

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC error object for this problem: ``{"code": ..., "message": ...}``."""
        return {"code": self.code, "message": self.message}

    @property
    def answerable(self) -> bool:
        """Whether a receiver answers this problem (with ``id`` when known, else ``null``)."""
        return self.kind in (None, "request", "batch")


def _classify(exc: MessageError, value: Any) -> None:
    """Record on ``exc`` what kind of message ``value`` looks like and whether it had an id."""
    if isinstance(value, list):
        exc.kind = "batch"
        return
    if not isinstance(value, Mapping):
        return
    exc.has_id = "id" in value
    if "method" in value:
        exc.kind = "request" if exc.has_id else "notification"
    elif "error" in value:
        exc.kind = "error"
    elif "result" in value:
        exc.kind = "response"


class ParseError(MessageError):
    """The text is not JSON (or the bytes are not UTF-8)."""

    code = PARSE_ERROR


class InvalidRequest(MessageError):
    """The JSON is not a well-formed JSON-RPC message of this version."""

    code = INVALID_REQUEST


class MethodNotFound(MessageError, UnknownMethodError):
    """The method is neither in this version nor an extension method."""

    code = METHOD_NOT_FOUND

    def __init__(
        self, method: str, version: str, *, id: RequestId = None, data: Any = None
    ):
        MessageError.__init__(
            self,
            f"{method!r} is not a method of ACP {version}",
            id=id,
            method=method,
            data=data,
        )
        self.version = version


class _PayloadMismatch(MessageError):
    """A payload that does not fit its method's type; ``validation_error`` says where."""

    def __init__(
        self,
        message: str,
        *,
        validation_error: ValidationError | None = None,
        **kw: Any,
    ):
        super().__init__(message, **kw)
        self.validation_error = validation_error


class InvalidParams(_PayloadMismatch):
    """The params do not fit the method's params type; ``validation_error`` says where."""

    code = INVALID_PARAMS


class InvalidResult(_PayloadMismatch):
    """The result does not fit the method's result type; ``validation_error`` says where."""

    code = INTERNAL_ERROR


def _payload_wire(value: Any) -> Any:
    if isinstance(value, AcpModel):
        return value.to_wire()
    return value


def _as_is(value: Any) -> Any:
    return value


_dumps: Callable[[Any], str] = json.JSONEncoder(
    separators=(",", ":"), ensure_ascii=False
).encode
"""``json.dumps(value, separators=(",", ":"), ensure_ascii=False)``, with the encoder built once."""


class _Envelope:
    """What every envelope class shares: writing it back."""

    extra: Mapping[str, Any]
    kind: ClassVar[str]
    _payload: ClassVar[str]
    """The name of the payload field: ``params``, ``result`` or ``error``."""

    def _body(self, payload: Callable[[Any], Any] = _payload_wire) -> dict[str, Any]:
        """The members after ``jsonrpc``, in wire order; ``payload`` maps the params, result or error."""
        raise NotImplementedError

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready message: wire names, unset fields left out, unknown members kept."""
        out: dict[str, Any] = {"jsonrpc": JSONRPC_VERSION}
        out.update(self._body())
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    def to_json(self) -> str:
        """The message as compact JSON text (one line, as the stdio transport wants).

        The same text as ``json.dumps(self.to_wire())``, but a model payload
        is written by pydantic-core straight to JSON instead of going through
        a dict first.
        """
        members = self.__dict__
        line = members.get("_line")
        if line is not None:
            # read from text by the fast path, and the payload never reached
            # since (see __getattr__): the line it validated and wrote then
            return line.decode()  # type: ignore[no-any-return]
        written = members.get("_written")
        if written is not None:
            # read by the fast path: its envelope's own serializer writes the
            # whole line in one call (the same text; the payload is the same object)
            return written[0](written[1], by_alias=True, exclude_unset=True).decode()  # type: ignore[no-any-return]
        text = '{"jsonrpc":"2.0"' + self._json_body()
        if self.extra:
            body = self._body(_as_is)
            for key, value in self.extra.items():
                if key != "jsonrpc" and key not in body:
                    text += "," + _dumps(key) + ":" + _dumps(value)
        return text + "}"

    def _json_body(self) -> str:
        """The members after ``jsonrpc`` as JSON text, each with its leading comma."""
        raise NotImplementedError

    if not TYPE_CHECKING:  # (no attribute of any other name reads as Any for a type checker)

        def __getattr__(self, name: str) -> Any:
            # A message the fast path read from text keeps its payload only in
            # the validated envelope, and the line written from it in "_line",
            # until the payload is first reached: then the payload becomes the
            # field it always is, and the line is forgotten (the payload may
            # change from then on, and to_json writes it as it is then).
            members = self.__dict__
            if name == self._payload and "_written" in members:
                value = members[name] = members["_written"][1][name]
                members.pop("_line", None)
                return value
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self) -> dict[str, Any]:
        # the fast path's writer is bound to this process's validators: a
        # copy or a pickle writes itself the general way (the same text)
        # (a copy shares the payload: this message's line is forgotten too)
        getattr(self, self._payload)
        state = dict(self.__dict__)
        state.pop("_written", None)
        if state.get("extra") is _EMPTY:  # the fast path's shared empty mapping, which pickle cannot write
            state["extra"] = {}
        return state


def _json_value(value: Any) -> str:
    """A payload as JSON text: a model by its own serializer, anything else as ``json.dumps`` writes it."""
    if isinstance(value, AcpModel):
        return value.to_json()
    return _dumps(value)


_json_str: Callable[[str], str] = json.encoder.encode_basestring
"""A str as JSON text, as ``_dumps`` writes it (no ASCII escaping)."""


def _json_id(value: Any) -> str:
    """An id or a method name as JSON text, as ``_dumps`` writes it (an int or a str without the encoder's call)."""
    t = type(value)
    if t is int:
        return int.__repr__(value)
    if t is str:
        return _json_str(value)
    return _dumps(value)


@dataclass(frozen=True, eq=True)
class Request(_Envelope):
    """A request: ``params`` is the method's params model (plain JSON for an extension method)."""

    id: RequestId
    method: str
    params: Any
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    has_params: bool = field(default=True, compare=False, repr=False)
    kind: ClassVar[str] = "request"
    _payload: ClassVar[str] = "params"

    def _body(self, payload: Callable[[Any], Any] = _payload_wire) -> dict[str, Any]:
        body: dict[str, Any] = {"id": self.id, "method": self.method}
        if self.has_params:
            body["params"] = payload(self.params)
        return body

    def _json_body(self) -> str:
        text = ',"id":' + _json_id(self.id) + ',"method":' + _json_id(self.method)
        if self.has_params:
            text += ',"params":' + _json_value(self.params)
        return text


@dataclass(frozen=True, eq=True)
class Notification(_Envelope):
    """A notification (no id, no answer): ``params`` is the method's params model."""

    method: str
    params: Any
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    has_params: bool = field(default=True, compare=False, repr=False)
    kind: ClassVar[str] = "notification"
    _payload: ClassVar[str] = "params"

    def _body(self, payload: Callable[[Any], Any] = _payload_wire) -> dict[str, Any]:
        body: dict[str, Any] = {"method": self.method}
        if self.has_params:
            body["params"] = payload(self.params)
        return body

    def _json_body(self) -> str:
        text = ',"method":' + _json_id(self.method)
        if self.has_params:
            text += ',"params":' + _json_value(self.params)
        return text


@dataclass(frozen=True, eq=True)
class Response(_Envelope):
    """A success response; ``result`` is its result model.

    ``method`` is the method of the request it answers, known when the
    response was parsed with ``method=`` or ``pending=``; it never goes on the
    wire, so a response built to be sent needs none: ``Response(1, result)``.
    """

    id: RequestId
    result: Any
    method: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    kind: ClassVar[str] = "response"
    _payload: ClassVar[str] = "result"

    def _body(self, payload: Callable[[Any], Any] = _payload_wire) -> dict[str, Any]:
        return {"id": self.id, "result": payload(self.result)}

    def _json_body(self) -> str:
        return ',"id":' + _json_id(self.id) + ',"result":' + _json_value(self.result)


@dataclass(frozen=True, eq=True)
class ErrorResponse(_Envelope):
    """An error response; ``error`` is the version's ``Error`` model, ``method`` is known only when given or pending."""

    id: RequestId
    error: Any
    method: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    kind: ClassVar[str] = "error"
    _payload: ClassVar[str] = "error"

    def _body(self, payload: Callable[[Any], Any] = _payload_wire) -> dict[str, Any]:
        return {"id": self.id, "error": payload(self.error)}

    def _json_body(self) -> str:
        return ',"id":' + _json_id(self.id) + ',"error":' + _json_value(self.error)


Message = Request | Notification | Response | ErrorResponse
"""One parsed JSON-RPC message."""


@dataclass(frozen=True)
class Batch:
    """A JSON-RPC batch (an array of messages), where the version allows batches.

    ``entries`` keeps the order of the array: each is a parsed message, or the
    :class:`MessageError` of an entry that is invalid (an invalid entry does
    not make the whole batch fail; a receiver answers each invalid request
    entry with its own error).
    """

    entries: tuple[Message | MessageError, ...]
    kind: ClassVar[str] = "batch"

    @property
    def messages(self) -> tuple[Message, ...]:
        """The valid entries."""
        return tuple(e for e in self.entries if not isinstance(e, MessageError))

    @property
    def errors(self) -> tuple[MessageError, ...]:
        """The problems of the invalid entries."""
        return tuple(e for e in self.entries if isinstance(e, MessageError))

    def __iter__(self) -> Iterator[Message | MessageError]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def to_wire(self) -> list[Any]:
        """The JSON-ready array; an invalid entry is written back as it came."""
        return [
            e.data if isinstance(e, MessageError) else e.to_wire() for e in self.entries
        ]

    def to_json(self) -> str:
        return json.dumps(self.to_wire(), separators=(",", ":"), ensure_ascii=False)


def _check_id(value: Any) -> bool:
    return value is None or type(value) is int or type(value) is str


class PendingRequests:
    """The requests you have sent and not yet seen answered: id -> method.

    Record each request when you send it (``add``, ``track`` or ``request``),
    and pass the tracker to ``parse_message(..., pending=...)``: a response
    takes its method from here, and its id stops being pending. Not
    thread-safe; use one per connection and direction.
    """

    def __init__(self, start: int = 1) -> None:
        self._methods: dict[RequestId, str] = {}
        self._ids = count(start)

    def add(self, id: RequestId, method: str) -> None:
        """Record that request ``id`` for ``method`` was sent; an id may be pending only once."""
        if not _check_id(id):
            raise TypeError(
                f"a request id is a string, an integer or None, not {type(id).__name__}"
            )
        if id in self._methods:
            raise ValueError(f"request id {id!r} is already pending")
        self._methods[id] = method

    def track(self, request: Request | Mapping[str, Any]) -> None:
        """Record a request you are sending, as a :class:`Request` or its wire form."""
        if isinstance(request, Request):
            self.add(request.id, request.method)
        else:
            self.add(request["id"], request["method"])

    def request(self, method: str, params: Any) -> Request:
        """A new :class:`Request` with a fresh integer id, already recorded as pending."""
        rid = next(self._ids)
        while rid in self._methods:
            rid = next(self._ids)
        self.add(rid, method)
        return Request(rid, method, params)

    def pop(self, id: RequestId) -> str | None:
        """Forget ``id`` and return its method (``None`` when it is not pending)."""
        if not _check_id(id):
            return None
        return self._methods.pop(id, None)

    def method_of(self, id: RequestId) -> str | None:
        """The method of pending request ``id`` (``None`` when it is not pending)."""
        return self._methods.get(id) if _check_id(id) else None

    def __contains__(self, id: object) -> bool:
        return _check_id(id) and id in self._methods

    def __len__(self) -> int:
        return len(self._methods)

    def __iter__(self) -> Iterator[RequestId]:
        return iter(list(self._methods))


def _decode(data: Any) -> Any:
    try:
        if isinstance(data, (str, bytes, bytearray, memoryview)):
            return decode(data)
        return check_value(data)
    except JsonLimitError as exc:
        if exc.kind in ("syntax", "unicode"):
            raise ParseError(str(exc)) from None
        value = exc.value if exc.value is not None else data
        rid: Any = _NO_ID
        name = None
        if isinstance(value, Mapping):
            rid = value.get("id", _NO_ID)
            name = value.get("method")
        raise InvalidRequest(
            f"the message is beyond the parser's limits: {exc}",
            id=rid if rid is not _NO_ID and _check_id(rid) else None,
            method=name if isinstance(name, str) else None,
            data=value if exc.kind != "duplicate" else None,
        ) from None


def _describe(exc: ValidationError) -> str:
    lines = []
    for err in exc.errors(include_url=False, include_input=False)[:5]:
        # the sentinel tags of default and unknown branches are pydantic's, not wire names
        loc = (
            ".".join(str(part) for part in err["loc"] if part not in _SENTINEL_TAGS)
            or "(root)"
        )
        msg = err["msg"]
        if err["type"] == "union_tag_invalid":
            # the runtime's sentinel tags are pydantic's, not tags to send
            tags = [
                t
                for t in err.get("ctx", {}).get("expected_tags", "").split(", ")
                if t.strip("'") not in _SENTINEL_TAGS
            ]
            msg = (
                f"tag {err.get('ctx', {}).get('tag')!r} is not one of {', '.join(tags)}"
            )
        lines.append(f"{loc}: {msg}")
    more = exc.error_count() - len(lines)
    if more > 0:
        lines.append(f"... and {more} more")
    return "; ".join(lines)


# --------------------------------------------------------------------------
# The fast path: a whole message in one validation
#
# A line (str or bytes) of an ACP method is validated as a whole in one
# ``validate_json`` of the text, over the envelope type of its method and
# kind (``acp_types.<version>.envelopes``, rendered by the generator): the
# envelope's own members and the payload at once, no Python in between and
# no decoding first (``_fast_text``). The envelope is picked without decoding:
# a call's by the first ``"method"`` member found in the text (the envelope's
# literal method refuses the line if that was another one), a response's by
# ``method=``, or by the pending request of the first ``"id"`` found (checked
# against the validated id afterwards). The envelope is then written back
# once, and counts of a few characters of the text and of that write-back
# show that the validation dropped nothing and that the line is within the
# parser's limits (``acp_types._wire.whole_within_limits``); the write-back is
# what ``to_json`` returns until the payload is first reached. A line the
# counts do not show is decoded, and a decoded message whose envelope holds
# exactly the members JSON-RPC defines is validated the same way from the
# decoded value (``_fast_one``). Anything else (an unknown member, an
# extension method, a response whose method is not known, a wrong kind, an
# invalid payload, a key spelled like an attribute, an integral float where
# an integer is wanted, a batch) goes to the general path below, which reads
# the decoded value and gives the result or the error it always gave: the
# fast paths never raise, and what they accept the general path accepts
# alike, with the same result (tests/test_fast_path.py).


class FastPath:
    """The fast path of one version: its envelope types, and their validators built on first use.

    ``calls``, ``results`` and ``errors`` map a method (``None`` for an
    error response) to the validator of its envelope, or to ``None`` when it
    has none; :meth:`validator` fills them in.
    """

    def __init__(
        self,
        module: str,
        table: Mapping[str, MethodSpec],
        version: str,
        error_model: Any,
        *,
        batches: bool,
    ) -> None:
        self.module = module
        self.table = table
        self.version = version
        self.error_model = error_model
        self.batches = batches
        self._envelopes: Any = None
        self.calls: dict[Any, Any] = {}
        self.results: dict[Any, Any] = {}
        self.errors: dict[Any, Any] = {}
        # a method's name as it is written in a line (no escape in it) -> the name
        self.names: dict[bytes, str] = {name.encode(): name for name in table}
        # a line's "method" member up to the name's closing quote, as json.dumps
        # writes it (compact or with its default separators) -> the name: one
        # slice and one lookup read the method of nearly every line
        self.peeks: dict[bytes, str] = {}
        for name in table:
            for spelled in (b'"method":"', b'"method": "'):
                self.peeks[spelled + name.encode()] = name

    def parse(
        self, data: Any, method: str | None = None, pending: PendingRequests | None = None
    ) -> Message | Batch:
        """:func:`parse_message` of this version: the fast paths first, then the general one."""
        tried = None
        if type(data) is str or type(data) is bytes:
            tried = _fast_text(data, self.table, self, method, pending)
            if tried is not None and tried is not _TRIED:
                return tried  # type: ignore[no-any-return]
        value = _decode(data)
        if tried is None:
            quick = _fast_one(value, self.table, self, method, pending)
            if quick is not None:
                return quick
        return _parse_decoded(
            value, self.table, self.version, self.error_model, self.batches, method, pending, self
        )

    def validator(self, which: dict[Any, Any], method: str | None) -> Any:
        """Build, record and return the validator of ``method``'s envelope in ``which`` (one of the three maps)."""
        if self._envelopes is None:
            self._envelopes = import_module(self.module)
        env = self._envelopes
        if which is self.errors:
            tp = env.ERROR
        else:
            tp = (env.CALLS if which is self.calls else env.RESULTS).get(method)
        found = which[method] = None if tp is None else _envelope_validator(tp)
        return found


def _envelope_validator(
    tp: Any,
) -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., bytes]]:
    """The validators of an envelope type (error reports bounded), and its writer: bare methods.

    The first validates a decoded value, the second JSON text (``str`` or
    ``bytes``); every call passes ``strict=True, by_name=False`` (strict,
    wire names only). As in the general path (``acp_types._validators``),
    every array and map stops at its first invalid item, so a message of a
    million invalid items costs no more than its size before it is sent to
    the general path. The writer is the envelope's own serializer, called
    with ``by_alias=True, exclude_unset=True`` (wire names, unset fields left
    out). The options are passed at each call: a ``functools.partial``
    holding them cost 0.3-0.5 µs a call, and a line makes two.
    """
    from pydantic_core import SchemaSerializer  # noqa: PLC0415

    from ._build import type_schema  # noqa: PLC0415
    from ._validators import bounded_schema_validator  # noqa: PLC0415

    made = type_schema(tp)
    if made is None:  # pydantic's internals moved: its TypeAdapter makes the same schema, slower
        from pydantic import TypeAdapter  # noqa: PLC0415

        adapter = TypeAdapter(tp)
        schema, serializer = adapter.core_schema, adapter.serializer
    else:
        schema, core_config = made
        serializer = SchemaSerializer(schema, core_config)
    validator = bounded_schema_validator(schema)
    return validator.validate_python, validator.validate_json, serializer.to_json


def _make(cls: type, members: dict[str, Any]) -> Any:
    # the frozen dataclasses' own __init__ sets each field through
    # object.__setattr__; an instance given its fields directly is the same object
    obj: Any = object.__new__(cls)
    object.__setattr__(obj, "__dict__", members)
    return obj


def _fast_one(
    value: Any,
    table: Mapping[str, MethodSpec],
    fast: FastPath,
    method: str | None,
    pending: PendingRequests | None,
) -> Message | None:
    """The message, when one validation of its envelope reads it; ``None`` sends it to the general path."""
    if type(value) is not dict:
        return None
    name = value.get("method")
    rid = value.get("id", _NO_ID)
    key: str | None
    if name is not None:
        if type(name) is not str:
            return None
        spec = table.get(name)
        if spec is None or (spec.kind == "request") is (rid is _NO_ID):
            return None
        which = fast.calls
        key = name
    elif rid is _NO_ID or not _check_id(rid):
        return None
    elif "result" in value:
        key = method
        if key is None and pending is not None:
            key = pending.method_of(rid)
        if key is None:
            return None
        which = fast.results
    else:
        which = fast.errors
        key = None
    pair = which.get(key, _NO_ID)
    if pair is _NO_ID:
        pair = fast.validator(which, key)
    if pair is None:
        return None
    validate, _, write = pair
    slow = _SLOW
    slow.needed = False
    try:
        env = validate(value, strict=True, by_name=False)
    except ValidationError:
        return None
    if slow.needed:
        return None
    return _message(fast, which, name, rid, env, write, method, pending)


def _message(
    fast: FastPath,
    which: dict[Any, Any],
    name: str | None,
    rid: Any,
    env: Any,
    write: Callable[..., bytes],
    method: str | None,
    pending: PendingRequests | None,
) -> Message:
    """The message the decoded fast path read with one validation of its envelope ``env`` (a call when ``which`` is ``fast.calls``).

    (``_fast_text`` makes its messages the same way, inline, and keeps the
    payload in ``env`` until it is first reached: see ``_Envelope.__getattr__``.)
    A response's id stops being pending here, the last step, once the
    message is certain.
    """
    members: dict[str, Any]
    if which is fast.calls:
        members = {"method": name, "extra": _EMPTY, "has_params": True, "_written": (write, env),
                   "params": env["params"]}
        cls: type = Notification
        if rid is not _NO_ID:
            members["id"] = rid
            cls = Request
    else:
        answered = pending.pop(rid) if pending is not None else None
        members = {"id": rid, "method": method if method is not None else answered, "extra": _EMPTY,
                   "_written": (write, env)}
        cls, payload = (Response, "result") if which is fast.results else (ErrorResponse, "error")
        members[payload] = env[payload]
    return _make(cls, members)  # type: ignore[no-any-return]


_TRIED = object()
"""What :func:`_fast_text` answers when the text failed its envelope's validation: the decoded fast path would fail alike."""

_METHOD_PEEK = re.compile(rb'"method"\s*:\s*"([^"\\]*)"')
_ID_PEEK = re.compile(rb'"id"\s*:\s*(-?[0-9]{1,40}|"[^"\\]*"|null)\s*[,}]')
"""(A longer integer id is left to the decoded path: ``int()`` refuses more than a few thousand digits.)"""


def _peek_id(text: bytes) -> Any:
    """The id a response line seems to answer (the first ``"id"`` member found), or ``_NO_ID``; checked after validation."""
    at = text.find(b'"id"')
    if at < 0:
        return _NO_ID
    found = _ID_PEEK.match(text, at)
    if found is None:
        return _NO_ID
    token = found.group(1)
    if token[0] == 34:  # '"'
        try:
            return token[1:-1].decode()
        except UnicodeDecodeError:
            return _NO_ID
    return None if token == b"null" else int(token)


def _fast_text(
    data: str | bytes,
    table: Mapping[str, MethodSpec],
    fast: FastPath,
    method: str | None,
    pending: PendingRequests | None,
) -> Any:
    """The message, when one ``validate_json`` of the line over its envelope reads it and shows it whole.

    Answers the message; ``None`` when the text is not for this path (decode
    it and try the decoded fast path); or ``_TRIED`` when the envelope's
    validation failed (the decoded value would fail it too: straight to the
    general path). Nothing is changed before the message is certain (a
    pending request is popped last).
    """
    if type(data) is str:
        try:
            text = data.encode()
        except UnicodeEncodeError:
            return _TRIED  # a lone surrogate: the general path's ParseError
    else:
        text = data  # type: ignore[assignment]
    at = text.find(b'"method"')
    peeked: Any = _NO_ID
    if at >= 0:
        # the first "method" member found: if it is not the envelope's own,
        # the envelope's literal method refuses the line (a name is at least
        # one byte: its closing quote is at at + 11 or later either way)
        key: str | None = fast.peeks.get(text[at : text.find(b'"', at + 11)])
        if key is None:
            found = _METHOD_PEEK.match(text, at)
            key = None if found is None else fast.names.get(found.group(1))
            if key is None:
                return None
        which = fast.calls
    else:
        key = method
        if key is None and pending is not None:
            peeked = _peek_id(text)
            if peeked is not _NO_ID:
                key = pending.method_of(peeked)
        which = fast.results if key is not None else fast.errors
    triple = which.get(key, _NO_ID)
    if triple is _NO_ID:
        triple = fast.validator(which, key)
    if triple is None:
        return None
    # (the slow-path flag is clear here: whoever finds it set clears it)
    try:
        env = triple[1](text, strict=True, by_name=False)
    except ValidationError:
        _SLOW.needed = False
        if which is not fast.results:
            return _TRIED
        # not a success response: perhaps an error response
        which = fast.errors
        triple = which.get(None, _NO_ID)
        if triple is _NO_ID:
            triple = fast.validator(which, None)
        if triple is None:
            return _TRIED
        try:
            env = triple[1](text, strict=True, by_name=False)
        except ValidationError:
            _SLOW.needed = False
            return _TRIED
    if _SLOW.needed:
        # a key spelled like an attribute (or a flag left by a validation
        # outside the entry points): the general path reads the line
        _SLOW.needed = False
        return _TRIED
    write = triple[2]
    out = write(env, by_alias=True, exclude_unset=True)
    if not whole_within_limits(text, out):
        return None
    # the message, as _message makes it (inline: this is every line's path)
    obj: Any
    if which is fast.calls:
        if "id" in env:
            obj = object.__new__(Request)
            members = {"id": env["id"], "method": key, "extra": _EMPTY, "has_params": True,
                       "_written": (write, env), "_line": out}
        else:
            obj = object.__new__(Notification)
            members = {"method": key, "extra": _EMPTY, "has_params": True, "_written": (write, env), "_line": out}
    else:
        rid = env["id"]
        if which is fast.results and peeked is not _NO_ID and (type(rid) is not type(peeked) or rid != peeked):
            # the method came from another id than the response's own
            return None
        answered = pending.pop(rid) if pending is not None else None
        obj = object.__new__(Response if which is fast.results else ErrorResponse)
        members = {"id": rid, "method": method if method is not None else answered, "extra": _EMPTY,
                   "_written": (write, env), "_line": out}
    object.__setattr__(obj, "__dict__", members)
    return obj


def parse_message(
    data: Any,
    table: Mapping[str, MethodSpec],
    version: str,
    error_model: Any,
    *,
    batches: bool,
    method: str | None = None,
    pending: PendingRequests | None = None,
    fast: FastPath | None = None,
) -> Message | Batch:
    """Parse one JSON-RPC message (text, bytes or decoded JSON) against a version's method table.

    The version modules bind ``table``, ``version``, ``error_model`` and
    ``batches``; call ``acp_types.<version>.parse_message`` instead. Returns a
    :class:`Request`, :class:`Notification`, :class:`Response` or
    :class:`ErrorResponse` (or a :class:`Batch` where batches are allowed);
    raises :class:`MessageError` (one of its subclasses) for anything
    malformed. ``method`` types a response's result (it wins over
    ``pending``); with ``pending``, a response takes its method from there and
    its id stops being pending. ``fast`` is the version's fast path (see
    above): a message it reads takes one validation, any other the general way.
    """
    if fast is not None:
        # (bound to the same table, version and error model by the version module)
        return fast.parse(data, method, pending)
    return _parse_decoded(_decode(data), table, version, error_model, batches, method, pending, None)


def _parse_decoded(
    value: Any,
    table: Mapping[str, MethodSpec],
    version: str,
    error_model: Any,
    batches: bool,
    method: str | None,
    pending: PendingRequests | None,
    fast: FastPath | None,
) -> Message | Batch:
    """The general path of :func:`parse_message`, from the decoded value."""
    if isinstance(value, list):
        if not batches:
            problem = InvalidRequest(
                f"ACP {version} does not define JSON-RPC batches; send one message at a time",
                data=value,
            )
            _classify(problem, value)
            raise problem
        if not value:
            problem = InvalidRequest("an empty array is not a batch", data=value)
            _classify(problem, value)
            raise problem
        entries: list[Message | MessageError] = []
        for entry in value:
            if fast is not None:
                quick = _fast_one(entry, table, fast, method, pending)
                if quick is not None:
                    entries.append(quick)
                    continue
            try:
                entries.append(
                    _parse_one(
                        entry,
                        table,
                        version,
                        error_model,
                        method,
                        pending,
                        in_batch=True,
                    )
                )
            except MessageError as exc:
                _classify(exc, entry)
                entries.append(exc)
        return Batch(tuple(entries))
    try:
        return _parse_one(
            value, table, version, error_model, method, pending, in_batch=False
        )
    except MessageError as exc:
        _classify(exc, value)
        raise


def _parse_one(
    value: Any,
    table: Mapping[str, MethodSpec],
    version: str,
    error_model: Any,
    method: str | None,
    pending: PendingRequests | None,
    *,
    in_batch: bool,
) -> Message:
    if type(value) is not dict and not isinstance(value, Mapping):
        what = "a batch entry" if in_batch else "a message"
        raise InvalidRequest(
            f"{what} must be a JSON object, not {type(value).__name__}", data=value
        )
    rid = value.get("id", _NO_ID)
    name = value.get("method")
    id_ok = rid is _NO_ID or _check_id(rid)
    known_id = rid if (rid is not _NO_ID and id_ok) else None

    def bad(message: str) -> InvalidRequest:
        return InvalidRequest(
            message,
            id=known_id,
            method=name if isinstance(name, str) else None,
            data=value,
        )

    tag = value.get("jsonrpc", _NO_ID)
    if type(tag) is not str or tag != JSONRPC_VERSION:
        raise bad(
            '"jsonrpc" must be "2.0", not '
            + ("missing" if tag is _NO_ID else repr(tag))
        )
    if not id_ok:
        raise bad(
            f'"id" must be a string, an integer or null, not {type(rid).__name__}'
        )
    own = _CALL if "method" in value else _RESPONSE
    extra = (
        _EMPTY
        if value.keys() <= own
        else {k: v for k, v in value.items() if k not in own}
    )
    if "method" in value:
        if "result" in value or "error" in value:
            raise bad(
                "a message cannot be both a request (it has a method) and a response (it has a result or error)"
            )
        if not isinstance(name, str):
            raise bad(f'"method" must be a string, not {type(name).__name__}')
        return _parse_call(value, name, rid, table, version, extra, bad)
    if "result" in value and "error" in value:
        raise bad("a response has either a result or an error, not both")
    if "result" not in value and "error" not in value:
        raise bad("neither a request (no method) nor a response (no result or error)")
    if rid is _NO_ID:
        raise bad('a response must have an "id"')
    answered = pending.pop(rid) if pending is not None else None
    resolved = method if method is not None else answered
    if "error" in value:
        try:
            error = _validator(error_model)(value["error"])
        except ValidationError as exc:
            raise bad(f"malformed error object: {_describe(exc)}") from exc
        return ErrorResponse(rid, error, resolved, extra)
    if resolved is None:
        raise InvalidRequest(
            f"response to request {rid!r}, whose method is unknown: pass method= or track the "
            "request in PendingRequests",
            id=rid,
            data=value,
        )
    result = value["result"]
    spec = table.get(resolved)
    if spec is None:
        if not is_extension(resolved):
            raise MethodNotFound(resolved, version, id=rid, data=value)
        return Response(rid, result, resolved, extra)
    if spec.result is None:
        raise InvalidRequest(
            f"{resolved!r} is a notification; no response answers it",
            id=rid,
            method=resolved,
            data=value,
        )
    try:
        typed = _validator(spec.result)(result)
    except ValidationError as exc:
        raise InvalidResult(
            f"invalid result of {resolved!r}: {_describe(exc)}",
            validation_error=exc,
            id=rid,
            method=resolved,
            data=value,
        ) from exc
    return Response(rid, typed, resolved, extra)


def _parse_call(
    value: Mapping[str, Any],
    name: str,
    rid: Any,
    table: Mapping[str, MethodSpec],
    version: str,
    extra: Mapping[str, Any],
    bad: Any,
) -> Message:
    is_request = rid is not _NO_ID
    the_id = rid if is_request else None
    has_params = "params" in value
    params = value.get("params")
    if has_params and not isinstance(params, (Mapping, list)):
        raise bad(
            f'"params" must be an object or an array, not {type(params).__name__}'
        )
    spec = table.get(name)
    if spec is None:
        if not is_extension(name):
            raise MethodNotFound(name, version, id=the_id, data=value)
        if is_request:
            return Request(rid, name, params, extra, has_params)
        return Notification(name, params, extra, has_params)
    if is_request and spec.kind == "notification":
        raise bad(f"{name!r} is a notification; it must not carry an id")
    if not is_request and spec.kind == "request" and spec.notification_params is None:
        raise bad(f'{name!r} is a request; it needs an "id"')
    if not has_params:
        raise InvalidParams(
            f"{name!r} needs params ({_type_name(spec.params)})",
            id=the_id,
            method=name,
            data=value,
        )
    try:
        params_type = (
            spec.params
            if is_request or spec.notification_params is None
            else spec.notification_params
        )
        typed = _validator(params_type)(params)
    except ValidationError as exc:
        raise InvalidParams(
            f"invalid params of {name!r}: {_describe(exc)}",
            validation_error=exc,
            id=the_id,
            method=name,
            data=value,
        ) from exc
    if is_request:
        return Request(rid, name, typed, extra)
    return Notification(name, typed, extra)


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp)
