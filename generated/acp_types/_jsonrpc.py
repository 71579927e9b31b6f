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
(on a response, that includes a ``params`` member). Where the schema wants an
integer, an integral number is one whatever its notation (``1.0`` is read and
written back as ``1``).
``parse_message`` raises nothing but :class:`MessageError`.
Extension methods (``_``-prefixed) pass through: their params and results stay
plain JSON.

Every message is decoded within the parser's limits first. A message of an
ACP method with exactly the members JSON-RPC defines is then read in one
validation of its method's envelope (``acp_types.<version>.envelopes``),
picked by the decoded ``method`` (or, for a response, by ``method=`` or the
pending request); any other message, and any message the envelope refuses,
is read member by member, which gives every error. Both give the same
message (tests/test_fast_path.py).

Hand-written: the source is runtime/_jsonrpc.py, which the generator copies
into the package unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from itertools import count
from types import MappingProxyType
from typing import Any, ClassVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from acp_types._protocol import RequestId

from ._runtime import (
    _SEEN,
    UNKNOWN_TAG,
    MethodSpec,
    UnknownMethodError,
    is_extension,
    payload_validator,
    to_json,
    to_wire,
    type_name,
    validate_payload,
)
from ._wire import JsonLimitError, check_value, decode

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

    def __init__(self, method: str, version: str, *, id: RequestId = None, data: Any = None):
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
    if isinstance(value, BaseModel):
        return to_wire(value)
    return value


def _as_is(value: Any) -> Any:
    return value


_dumps: Callable[[Any], str] = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
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
        is written by pydantic-core straight to JSON.
        """
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

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        if state.get("extra") is _EMPTY:  # the shared empty mapping, which pickle cannot write
            state["extra"] = {}
        return state


def _json_value(value: Any) -> str:
    """A payload as JSON text: a model by its own serializer, anything else as ``json.dumps`` writes it."""
    if isinstance(value, BaseModel):
        return to_json(value)
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
        return [e.data if isinstance(e, MessageError) else e.to_wire() for e in self.entries]

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
            raise TypeError(f"a request id is a string, an integer or None, not {type(id).__name__}")
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
        # the pydantic tag of an unknown branch is no wire name
        loc = ".".join(str(part) for part in err["loc"] if part != UNKNOWN_TAG) or "(root)"
        msg = err["msg"]
        if err["type"] == "union_tag_invalid":
            # the unknown branch's pydantic tag is not one to send
            tags = [t for t in err.get("ctx", {}).get("expected_tags", "").split(", ") if t.strip("'") != UNKNOWN_TAG]
            msg = f"tag {err.get('ctx', {}).get('tag')!r} is not one of {', '.join(tags)}"
        lines.append(f"{loc}: {msg}")
    more = exc.error_count() - len(lines)
    if more > 0:
        lines.append(f"... and {more} more")
    return "; ".join(lines)


class Parser:
    """The ``parse_message`` of one version: its method table, error model, and envelopes.

    The envelopes (``acp_types.<version>.envelopes``) load on the first
    message, and each one's validator is built on its first use.
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
        # the validators of the envelopes by kind, each built on its first use
        self._validators: dict[str, dict[str | None, Any]] = {"call": {}, "result": {}, "error": {}}

    def parse(self, data: Any, method: str | None = None, pending: PendingRequests | None = None) -> Message | Batch:
        """:func:`parse_message` of this version."""
        value = _decode(data)
        if type(value) is dict:
            found: Message | None = self._enveloped(value, method, pending)
            if found is not None:
                return found
        return _parse_decoded(value, self, method, pending)

    def _envelope(self, which: str, method: str | None) -> Any:
        """``validate_python`` of the envelope ``which`` (``"call"``, ``"result"``, ``"error"``) of ``method``."""
        made = self._validators[which]
        found = made.get(method, _NO_ID)
        if found is _NO_ID:
            envelopes = import_module(self.module)
            if which == "error":
                tp, payload = envelopes.ERROR, self.error_model
            else:
                tp = (envelopes.CALLS if which == "call" else envelopes.RESULTS).get(method)
                spec = self.table.get(method) if method is not None else None
                payload = None if spec is None else spec.params if which == "call" else spec.result
            if tp is not None and isinstance(payload, type) and issubclass(payload, BaseModel):
                # the payload's class first: the envelope's schema then takes the class's own, which
                # writing the payload back needs anyway, instead of generating it a second time
                payload_validator(payload)
            found = made[method] = None if tp is None else TypeAdapter(tp).validator.validate_python
        return found

    def _enveloped(self, value: dict[str, Any], method: str | None, pending: PendingRequests | None) -> Any:
        """The message, when one validation of its envelope reads it; ``None`` for the member-by-member path.

        Nothing is changed before the message is certain (a pending request
        is popped last).
        """
        name = value.get("method")
        rid = value.get("id", _NO_ID)
        key: str | None
        if name is not None:
            if type(name) is not str:
                return None
            spec = self.table.get(name)
            if spec is None or (spec.kind == "request") is (rid is _NO_ID):
                return None
            which, key = "call", name
        elif rid is _NO_ID or not _check_id(rid):
            return None
        elif "result" in value:
            key = method
            if key is None and pending is not None:
                key = pending.method_of(rid)
            if key is None:
                return None
            which = "result"
        else:
            which, key = "error", None
        validate = self._envelope(which, key)
        if validate is None:
            return None
        try:
            env = validate(value, strict=True, by_name=False)
        except ValidationError:
            _SEEN.keys = None
            return None
        if _SEEN.keys is not None:  # a key spelled like an attribute: the other path reads it
            _SEEN.keys = None
            return None
        members: dict[str, Any]
        if which == "call":
            members = {"method": name, "params": env["params"], "extra": _EMPTY, "has_params": True}
            cls: type = Notification
            if rid is not _NO_ID:
                members["id"] = rid
                cls = Request
        else:
            answered = pending.pop(rid) if pending is not None else None
            members = {"id": rid, "method": method if method is not None else answered, "extra": _EMPTY}
            cls, payload = (Response, "result") if which == "result" else (ErrorResponse, "error")
            members[payload] = env[payload]
        # the frozen dataclasses' own __init__ sets each field through object.__setattr__
        obj: Any = object.__new__(cls)
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
) -> Message | Batch:
    """Parse one JSON-RPC message (text, bytes or decoded JSON) against a version's method table, member by member.

    The version modules bind ``table``, ``version``, ``error_model`` and
    ``batches`` (with the envelopes: :class:`Parser`); call
    ``acp_types.<version>.parse_message`` instead. Returns a
    :class:`Request`, :class:`Notification`, :class:`Response` or
    :class:`ErrorResponse` (or a :class:`Batch` where batches are allowed);
    raises :class:`MessageError` (one of its subclasses) for anything
    malformed. ``method`` types a response's result (it wins over
    ``pending``); with ``pending``, a response takes its method from there and
    its id stops being pending.
    """
    parser = Parser("", table, version, error_model, batches=batches)
    return _parse_decoded(_decode(data), parser, method, pending, enveloped=False)


def _parse_decoded(
    value: Any, parser: Parser, method: str | None, pending: PendingRequests | None, *, enveloped: bool = True
) -> Message | Batch:
    """A decoded message or batch, member by member (a batch's entries through their envelopes first)."""
    version = parser.version
    if isinstance(value, list):
        if not parser.batches:
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
            if enveloped and type(entry) is dict:
                quick = parser._enveloped(entry, method, pending)
                if quick is not None:
                    entries.append(quick)
                    continue
            try:
                entries.append(_parse_one(entry, parser, method, pending, in_batch=True))
            except MessageError as exc:
                _classify(exc, entry)
                entries.append(exc)
        return Batch(tuple(entries))
    try:
        return _parse_one(value, parser, method, pending, in_batch=False)
    except MessageError as exc:
        _classify(exc, value)
        raise


def _parse_one(
    value: Any, parser: Parser, method: str | None, pending: PendingRequests | None, *, in_batch: bool
) -> Message:
    table, version = parser.table, parser.version
    if type(value) is not dict and not isinstance(value, Mapping):
        what = "a batch entry" if in_batch else "a message"
        raise InvalidRequest(f"{what} must be a JSON object, not {type(value).__name__}", data=value)
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
        raise bad('"jsonrpc" must be "2.0", not ' + ("missing" if tag is _NO_ID else repr(tag)))
    if not id_ok:
        raise bad(f'"id" must be a string, an integer or null, not {type(rid).__name__}')
    own = _CALL if "method" in value else _RESPONSE
    extra = _EMPTY if value.keys() <= own else {k: v for k, v in value.items() if k not in own}
    if "method" in value:
        if "result" in value or "error" in value:
            raise bad("a message cannot be both a request (it has a method) and a response (it has a result or error)")
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
            error = validate_payload(parser.error_model, value["error"])
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
        typed = validate_payload(spec.result, result)
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
        raise bad(f'"params" must be an object or an array, not {type(params).__name__}')
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
        params_type = spec.params if is_request or spec.notification_params is None else spec.notification_params
        typed = validate_payload(params_type, params)
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
    return type_name(tp)
