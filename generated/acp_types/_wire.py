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

Decoded text is shown within these limits by counting a few characters of
the value written back (:func:`_proven`); only when that shows nothing is the
value walked, and the walk is what reports a problem.

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

from pydantic_core import from_json, to_json

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
    return JsonLimitError(
        "depth", f"nested deeper than {MAX_DEPTH} levels of arrays and objects"
    )


def _bad_float(value: float) -> JsonLimitError:
    return JsonLimitError("number", f"{value!r} is not a finite number")


def _bad_int() -> JsonLimitError:
    return JsonLimitError("number", f"an integer has more than {MAX_INT_DIGITS} digits")


def _lone_surrogate() -> JsonLimitError:
    return JsonLimitError(
        "unicode", "a string holds a lone surrogate, which is not Unicode text"
    )


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
            if (
                ti is bool
                or item is None
                or (ti is int and -_INT_BOUND < item < _INT_BOUND)
            ):
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
        if (
            ti is bool
            or item is None
            or (ti is int and -_INT_BOUND < item < _INT_BOUND)
        ):
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


class _TextScan:
    """Limits of a value freshly decoded from text (JSON types only), counting what the duplicate check needs."""

    __slots__ = ("members", "colons")

    def __init__(self) -> None:
        self.members = 0
        self.colons = 0

    def walk(self, value: Any, depth: int) -> Any:
        t = type(value)
        if t is str:
            self.colons += value.count(":")
            return value
        if t is int:
            if -_INT_BOUND < value < _INT_BOUND:
                return value
            raise _bad_int()
        if t is float:
            return _float(value)
        if t is not dict and t is not list:
            return value
        depth += 1
        if depth > MAX_DEPTH:
            raise _too_deep()
        if t is dict:
            self.members += len(value)
            out: Any = None
            for key, item in value.items():
                self.colons += key.count(":")
                ti = type(item)
                if ti is str:
                    self.colons += item.count(":")
                    continue
                if ti is bool or item is None:
                    continue
                try:
                    new = self.walk(item, depth)
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
                self.colons += item.count(":")
                continue
            if ti is bool or item is None:
                continue
            try:
                new = self.walk(item, depth)
            except JsonLimitError as exc:
                raise exc.at(index) from None
            if new is not item:
                if out_list is None:
                    out_list = list(value)
                out_list[index] = new
        return value if out_list is None else out_list


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise JsonLimitError(
                    "duplicate", f"the key {key!r} appears twice in one object"
                )
            seen.add(key)
    return out


_UNCOUNTED = bytes(range(256)).translate(None, b":{[0123456789I")
"""Every byte but those :func:`_proven` counts (a translate deleting these keeps the counted ones)."""

_DIGIT_RUNS = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
"""A translate table: each digit to ``0``, every other byte to a space, so runs of digits stay runs."""


def _proven(text: str, value: Any) -> bool:
    """Whether ``value``, decoded from ``text``, is within the limits, shown without walking it.

    ``value`` written back by pydantic-core holds every member and every
    string of ``value`` in compact JSON, and counting a few characters there
    and in ``text`` (each count a pass at C speed) settles the limits:

    - duplicate keys: every ":" of JSON text separates a member or sits in a
      string; with no escaped colon in ``text``, the counts of ":" in ``text``
      and written back are equal exactly when decoding lost no member, and a
      key twice in one object loses one (and the strings it held);
    - numbers: a float that overflowed is written back as ``Infinity``
      (``NaN`` and ``Infinity`` tokens are refused by the decoder), and an
      integer of more than MAX_INT_DIGITS digits is such a run of digits;
    - depth: nesting is at most the number of arrays and objects.

    ``False`` means "not shown", not "beyond": the walk then decides and
    says what is wrong. Strings hold no lone surrogate, since the decoder
    refuses those.
    """
    if "\\u003" in text:
        return False
    out = to_json(value, inf_nan_mode="constants")
    counted = out.translate(None, _UNCOUNTED)
    if b"I" in counted and b"Infinity" in out:
        return False
    colons = counted.count(b":")
    if colons != text.count(":"):
        return False
    brackets = counted.count(b"{") + counted.count(b"[")
    if brackets > MAX_DEPTH:
        return False
    if len(counted) - colons - brackets - counted.count(b"I") > MAX_INT_DIGITS:
        # more digits in all than one integer may have: look for a run that long
        return b"0" * (MAX_INT_DIGITS + 1) not in out.translate(_DIGIT_RUNS)
    return True


def decode(data: str | bytes | bytearray | memoryview) -> Any:
    """Decode JSON text (or UTF-8 bytes) within the limits; raise :class:`JsonLimitError`."""
    if not isinstance(data, str):
        try:
            data = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonLimitError(
                "unicode", f"the message is not UTF-8: {exc}"
            ) from None
    try:
        value = from_json(data, allow_inf_nan=False)
    except TypeError:
        # pydantic-core cannot encode a str holding a lone surrogate
        raise _lone_surrogate() from None
    except ValueError as exc:
        reason = str(exc)
        if reason.startswith("recursion limit exceeded"):
            raise _too_deep() from None
        if reason.startswith("number out of range"):
            raise _bad_int() from None
        if reason.startswith("lone leading surrogate") or "surrogate" in reason:
            raise _lone_surrogate() from None
        raise JsonLimitError("syntax", f"the message is not JSON: {reason}") from None
    if _proven(data, value):
        return value
    scan = _TextScan()
    try:
        checked = scan.walk(value, 0)
    except JsonLimitError as exc:
        exc.value = value
        raise
    # Every ":" of the text separates a member or sits in a string, so with
    # no duplicate key (and no escaped colon) the counts match exactly; a
    # duplicate makes the text hold more. Otherwise look precisely.
    if (
        data.count(":") != scan.members + scan.colons
        or "\\u003a" in data
        or "\\u003A" in data
    ):
        try:
            json.loads(data, object_pairs_hook=_no_duplicates)
        except (ValueError, RecursionError) as exc:
            if isinstance(exc, JsonLimitError):
                exc.value = None  # which of the two values counts is the question
                raise
            # pydantic-core read the text already; the standard library's
            # own limits (integer digits, recursion) are not ours to add
    return checked


# --------------------------------------------------------------------------
# Text validated without decoding it first: what was dropped shows in counts

_COUNTED = b'",[l'
"""The bytes :func:`whole_within_limits` counts in the text and in its write-back."""

_NOT_COUNTED = bytes(range(256)).translate(None, _COUNTED)
_NOT_KEPT = bytes(range(256)).translate(None, _COUNTED + b"{]0123456789")
_ESCAPE = b"\\u0234567"
"""The bytes of an escaped printable ASCII character's first five (``\\u00`` and ``2``-``7``)."""
_NOT_SEEN = bytes(range(256)).translate(None, _COUNTED + _ESCAPE)
_ESCAPED_ASCII = re.compile(rb"\\u00[2-7]")
_EMPTY_ARRAY = re.compile(rb"\[\]")
"""(A regular expression: ``in`` and ``find`` of a two-byte needle are several times slower.)"""


def whole_within_limits(text: bytes, out: bytes) -> bool:
    """Whether ``out``, the message validated straight from ``text`` and written back, shows ``text`` whole and within the limits.

    ``True`` only when that is shown: decoding ``text`` then gives a value
    within the limits, from which validation gives what was validated from
    the text. ``False`` means "not shown", and the caller decodes the text.

    What validation does to the text: it writes it compactly, with keys in
    its own order, numbers in their shortest form and strings with its own
    escapes; it may drop a member or an array item (an invalid item of a
    tolerant array, a malformed tolerant field, the first of two equal keys)
    or put ``[]`` in place of a malformed value (a default-on-error field);
    and a non-finite number it reads (``1e400``, a ``NaN`` or ``Infinity``
    token) is written back as ``null``. Nothing else: it adds no member and
    no item, and writes strings and other scalars as they were.

    When no ASCII character is escaped as ``\\u00XX`` in ``text`` (which
    could hide a counted byte), the strings of both hold the same ``"`` (as
    ``\\"``), ``,``, ``[``, ``]`` and ``l``; then outside the strings:

    - a ``"`` or a ``,`` is never added, a dropped member loses two ``"``
      (its key), and so does a dropped or replaced string; a dropped item of
      an array of two or more loses a ``,``;
    - what is left are single items without a string dropped from their
      array, and values without a string replaced by ``[]``. Say what went
      held ``a`` ``[`` and ``b`` empty arrays ``[]`` (``b <= a``): a dropped
      item changes the count of ``[`` by ``-a`` and that of ``[]`` by
      ``1 - b`` (its array is now empty), a replacement by ``1 - a`` and
      ``1 - b``. So each makes the count of ``[]`` minus that of ``[`` grow,
      by ``1 + a - b`` or ``a - b``, and it does not grow only for a scalar
      (or ``{}``) replaced, which adds a ``[``. Whitespace in the text's
      ``[ ]`` only adds to the written ``[]``: with both counts equal,
      nothing was dropped or replaced (``[1e400]`` becoming ``[]``, or a
      deep ``[[[...[]...]]]`` dropped, changes one of them);
    - with nothing dropped, a non-finite number is the only way to a new
      ``null``, and ``l`` is in no escape and no number;
    - and then the limits read off the write-back: nesting is at most the
      number of ``{`` and ``[``, every integer is written with all its
      digits, and a key twice in one object would have been a dropped member.

    Strings hold no lone surrogate: the validation refuses the text then.
    """
    kept = out.translate(None, _NOT_KEPT)
    written = kept.translate(None, b"{]0123456789")  # (kept holds nothing else: a short table is cheaper)
    # (the text is the write-back, and perhaps a newline, when this writer
    # wrote it: then no count is needed, only the limits)
    if not (len(text) - len(out) <= 1 and text.startswith(out)):
        # One pass over the text keeps the counted bytes and those an escape
        # of printable ASCII begins with: such an escape is five bytes all
        # kept, so it is still there, whole, in what is kept (what else shows
        # up as one there only sends the line to be decoded).
        seen = text.translate(None, _NOT_SEEN)
        if _ESCAPED_ASCII.search(seen) is not None:
            return False
        counted = seen.translate(None, _ESCAPE)
        if counted != written and (
            # (the same string when the text has its keys in the writer's order)
            len(counted) != len(written)
            or counted.count(b'"') != written.count(b'"')
            or counted.count(b",") != written.count(b",")
            or counted.count(b"[") != written.count(b"[")
        ):
            return False
        # an empty array in the write-back is one in ``kept`` too (only bytes between are gone)
        if _EMPTY_ARRAY.search(kept) is not None and text.count(b"[]") != out.count(b"[]"):
            return False
    others = len(kept) - len(written)  # "{", "]" and digits
    brackets = written.count(b"[")
    if others + brackets > MAX_DEPTH:
        # (more than the deepest nesting allowed: count the containers, then the digits)
        opened = kept.count(b"{")
        if opened + brackets > MAX_DEPTH:
            return False
        if others > MAX_INT_DIGITS and others - opened - kept.count(b"]") > MAX_INT_DIGITS:
            # more digits in all than one integer may have: look for a run that long
            return b"0" * (MAX_INT_DIGITS + 1) not in out.translate(_DIGIT_RUNS)
    return True
