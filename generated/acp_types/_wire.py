"""What every wire entry point of acp_types accepts as JSON: the limits of the parser.

A message (JSON text, UTF-8 bytes or an already decoded value) is read as a
JSON value within these limits before any model sees it, so that what is
accepted can always be written back as JSON and read again to the same:

- nesting: at most :data:`MAX_DEPTH` arrays and objects inside each other
  (the message object itself is level 1), for text and decoded input alike;
- numbers: finite only (``1e400``, ``NaN`` and ``Infinity`` are refused);
  integers of at most :data:`MAX_INT_DIGITS` decimal digits;
- object keys are unique: text with the same key twice in one object is
  refused (a validating receiver must not guess which one counts);
- strings are Unicode text: a lone surrogate is refused;
- decoded input holds JSON values only: ``dict`` with ``str`` keys, ``list``,
  ``str``, ``int``, ``float``, ``bool`` and ``None`` (subclasses of these are
  read as the base type); anything else (a tuple, a set, bytes, an object)
  is refused.

Text is decoded by the standard library's parser with a hook at each point
the parser itself does not refuse: every object's members reach a hook that
refuses a key seen twice, the ``NaN`` and ``Infinity`` tokens reach one that
refuses them, and every integer's digits reach one that refuses more than
:data:`MAX_INT_DIGITS` before converting them. The decoded value is then
walked once for the rest (depth, floats that overflowed such as ``1e400``,
lone surrogates), so that what is refused there is reported with its path.

Each problem is a :class:`JsonLimitError`; the entry points turn it into
their documented exception (a ``MessageError`` from ``parse_message``, a
pydantic ``ValidationError`` from ``parse_params`` / ``parse_result``).

Hand-written: the source is runtime/_wire.py, which the generator copies into
the package unchanged.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

MAX_DEPTH = 128
"""The deepest nesting of arrays and objects a message may have (the message object is level 1)."""

MAX_INT_DIGITS = 1000
"""The most decimal digits an integer may have."""

_INT_BOUND = 10**MAX_INT_DIGITS
_SURROGATE = re.compile("[\ud800-\udfff]")


class JsonLimitError(ValueError):
    """A value that is not JSON within the parser's limits.

    ``kind`` is ``"syntax"`` (text that is not JSON), ``"unicode"`` (bytes
    that are not UTF-8, or a lone surrogate), ``"depth"``, ``"number"``,
    ``"duplicate"`` (a key twice in one object) or ``"type"`` (decoded input
    that is not a JSON value); ``path`` is where (keys and indices from the
    top, when known).
    """

    value: Any = None
    """The decoded message, when the text could be decoded (the problem is in its content)."""

    def __init__(self, kind: str, reason: str, path: tuple[str | int, ...] = ()):
        self.kind = kind
        self.reason = reason
        self.path = path
        super().__init__(self._text())

    def _text(self) -> str:
        shown = self.path[:8]
        where = "/".join(str(p) for p in shown)
        if len(self.path) > len(shown):
            where += f"/... ({len(self.path) - len(shown)} more levels)"
        return f"{where}: {self.reason}" if where else self.reason

    def at(self, key: str | int) -> JsonLimitError:
        """The same problem one level further out (``key`` prepended to the path)."""
        self.path = (key, *self.path)
        self.args = (self._text(),)
        return self


def _too_deep() -> JsonLimitError:
    return JsonLimitError("depth", f"nested deeper than {MAX_DEPTH} levels of arrays and objects")


def _bad_float(value: float) -> JsonLimitError:
    return JsonLimitError("number", f"{value!r} is not a finite number")


def _bad_int() -> JsonLimitError:
    return JsonLimitError("number", f"an integer has more than {MAX_INT_DIGITS} digits")


def _lone_surrogate() -> JsonLimitError:
    return JsonLimitError("unicode", "a string holds a lone surrogate, which is not Unicode text")


def _float(value: float) -> float:
    if not math.isfinite(value):
        raise _bad_float(value)
    return value


def check_value(value: Any, depth: int = 0) -> Any:
    """Check a decoded value against the limits; return it (a copy where a subclass became its base type).

    ``depth`` is the nesting level of ``value``'s container (0 for a whole
    message). Raises :class:`JsonLimitError`. The input is never changed.
    """
    t = type(value)
    if t is str:
        if not value.isascii() and _SURROGATE.search(value):
            raise _lone_surrogate()
        return value
    if t is int:
        if -_INT_BOUND < value < _INT_BOUND:
            return value
        raise _bad_int()
    if t is bool or value is None:
        return value
    if t is float:
        return _float(value)
    if t is dict or t is list:
        pass
    elif isinstance(value, Mapping):
        value = dict(value)
    elif isinstance(value, list):
        value = list(value)
    elif isinstance(value, str):
        return check_value(str.__str__(value), depth)
    elif isinstance(value, bool):
        return bool(value)
    elif isinstance(value, int):
        return check_value(int.__int__(value), depth)
    elif isinstance(value, float):
        return _float(float.__float__(value))
    else:
        raise JsonLimitError("type", f"a {type(value).__name__} is not a JSON value")
    depth += 1
    if depth > MAX_DEPTH:
        raise _too_deep()
    if type(value) is dict:
        out: Any = None
        for key, item in value.items():
            if type(key) is not str:
                if not isinstance(key, str):
                    raise JsonLimitError(
                        "type",
                        f"an object key must be a string, not {type(key).__name__}",
                    )
                if out is None:
                    out = dict(value)
                del out[key]
                key = str.__str__(key)
                out[key] = item
            if not key.isascii() and _SURROGATE.search(key):
                raise _lone_surrogate().at(key)
            ti = type(item)
            if ti is str:
                if not item.isascii() and _SURROGATE.search(item):
                    raise _lone_surrogate().at(key)
                continue
            if ti is bool or item is None or (ti is int and -_INT_BOUND < item < _INT_BOUND):
                continue
            try:
                new = check_value(item, depth)
            except JsonLimitError as exc:
                raise exc.at(key) from None
            if new is not item:
                if out is None:
                    out = dict(value)
                out[key] = new
        return value if out is None else out
    out_list: list[Any] | None = None
    for index, item in enumerate(value):
        ti = type(item)
        if ti is str:
            if not item.isascii() and _SURROGATE.search(item):
                raise _lone_surrogate().at(index)
            continue
        if ti is bool or item is None or (ti is int and -_INT_BOUND < item < _INT_BOUND):
            continue
        try:
            new = check_value(item, depth)
        except JsonLimitError as exc:
            raise exc.at(index) from None
        if new is not item:
            if out_list is None:
                out_list = list(value)
            out_list[index] = new
    return value if out_list is None else out_list


class _Beyond(Exception):
    """Raised by :func:`_scan`: something is beyond the limits (:func:`check_value` then says what and where)."""


def _scan(value: Any, depth: int) -> None:
    """Check the containers in ``value`` (freshly decoded: JSON types only) for depth, floats and strings.

    Raises :class:`_Beyond` for nesting deeper than :data:`MAX_DEPTH`, a float
    that is not finite (an overflow such as ``1e400``) or a lone surrogate in
    a key or a string. Integers need no check: the decoder's hook bounded
    their digits.
    """
    if depth > MAX_DEPTH:
        raise _Beyond
    if type(value) is dict:
        for key in value:
            if not key.isascii() and _SURROGATE.search(key):
                raise _Beyond
        items: Any = value.values()
    else:
        items = value
    for item in items:
        t = type(item)
        if t is str:
            if not item.isascii() and _SURROGATE.search(item):
                raise _Beyond
        elif t is dict or t is list:
            _scan(item, depth + 1)
        elif t is float and not math.isfinite(item):
            raise _Beyond


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonLimitError("duplicate", f"the key {key!r} appears twice in one object")
            seen.add(key)
    return out


def _no_constant(name: str) -> Any:
    raise JsonLimitError("syntax", f"the message is not JSON: {name} is not a JSON number")


def _bounded_int(text: str) -> int:
    # before int(): its cost grows with the square of the digits, and the
    # interpreter's own bound (sys.set_int_max_str_digits) may be off
    if len(text) > MAX_INT_DIGITS and len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _bad_int()
    return int(text)


_DECODER = json.JSONDecoder(
    object_pairs_hook=_unique_keys,
    parse_constant=_no_constant,
    parse_int=_bounded_int,
)


def decode(data: str | bytes | bytearray | memoryview) -> Any:
    """Decode JSON text (or UTF-8 bytes) within the limits; raise :class:`JsonLimitError`."""
    if not isinstance(data, str):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonLimitError("unicode", f"the message is not UTF-8: {exc}") from None
    try:
        value = _DECODER.decode(data)
    except JsonLimitError:
        raise
    except RecursionError:
        # the parser recursed past the interpreter's limit, far beyond MAX_DEPTH
        raise _too_deep() from None
    except ValueError as exc:
        raise JsonLimitError("syntax", f"the message is not JSON: {exc}") from None
    if type(value) is not dict and type(value) is not list:
        return check_value(value)
    try:
        _scan(value, 1)
    except _Beyond:
        try:
            check_value(value)
        except JsonLimitError as exc:
            exc.value = value
            raise
        raise AssertionError("_scan and check_value disagree") from None
    return value
