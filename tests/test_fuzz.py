"""Fuzzing the parser with mutated fixtures: the properties of issue 14 hold for every mutant.

Every message of ``tests/fixtures/`` is mutated (a value replaced by a hostile
one, a key dropped, added or written twice, the text cut or spliced) and fed
to ``parse_message`` as text and, where the text is JSON, as the decoded
value; its payload also goes to ``parse_params`` / ``parse_result``. For each
mutant:

- only documented exceptions come out (``MessageError`` from
  ``parse_message``; ``ValidationError`` / ``UnknownMethodError`` /
  ``NotARequestError`` from the payload entry points);
- what is accepted writes back to strict JSON (no ``NaN``, no ``Infinity``)
  that parses again to the same message;
- text and decoded input agree: both accepted with the same wire form, or
  both refused with the same exception class.

``make test`` runs a short, deterministic run (seed and count fixed below);
``make fuzz`` a long one (``FUZZ_CASES``, ``FUZZ_SEED``).
"""

from __future__ import annotations

import json
import os
import random
from typing import Any

from conftest import api, fixture_files, load_fixture
from pydantic import ValidationError

from acp_types._jsonrpc import MessageError
from acp_types._runtime import UNKNOWN_TAG, NotARequestError, UnknownMethodError
from acp_types._wire import MAX_DEPTH

DEFAULT_TAG = "__acp_default__"  # once reserved by the runtime: now one more unknown tag

SEED = int(os.environ.get("FUZZ_SEED", "14"))
CASES = int(os.environ.get("FUZZ_CASES", "1200"))


def _deep(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth):
        value = [value] if i % 2 else {"d": value}
    return value


HOSTILE: list[Any] = [
    True,
    False,
    None,
    0,
    -1,
    7.0,
    -0.0,
    1.5,
    2**63,
    -(2**64),
    10**400,
    1e308,
    5e-324,
    "",
    "x" * 300,
    "\u0000",
    "ünï😀",
    "https://a.test:80/x?y=a:b",
    "\\u003a",
    DEFAULT_TAG,
    UNKNOWN_TAG,
    "_acme/x",
    "session/cancel",
    "2.0",
    [],
    {},
    [None],
    {"": None},
    {"_meta": {"k": [1, {"x": None}]}},
    _deep(MAX_DEPTH - 4),
    _deep(MAX_DEPTH + 2),
]
"""Values a mutation puts in place of another (all of them JSON)."""

RAW_NUMBERS = ["1e400", "-1e400", "1" + "0" * 1200, "1.0", "-32002.0", "1E2", "0.1e-400"]
"""Number tokens spliced into the text, where Python's json would read them differently."""


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*prefix, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*prefix, i)))
    return out


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        value = value[p]
    return value


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    parent = _get(value, path[:-1])
    parent[path[-1]] = new
    return value


def mutate(rng: random.Random, message: Any) -> str:
    """One mutant of ``message``, as JSON text (which may hold duplicate keys or odd numbers)."""
    value = json.loads(json.dumps(message))
    if rng.random() < 0.3:
        # one unknown member on an object the message keeps as it came: most such mutants are accepted
        objects = [p for p in _paths(value) if isinstance(_get(value, p), dict)]
        target = _get(value, rng.choice(objects))
        target["x-k"] = "@@RAW@@" if rng.random() < 0.5 else json.loads(json.dumps(rng.choice(HOSTILE)))
    for _ in range(rng.choice((0, 1, 1, 2, 3))):
        paths = _paths(value)
        path = rng.choice(paths)
        target = _get(value, path)
        op = rng.choice((0, 0, 1, 2, 2, 3, 4, 5))
        if op == 0 or not path:
            value = _set(value, path, json.loads(json.dumps(rng.choice(HOSTILE))))
        elif op == 1 and isinstance(_get(value, path[:-1]), dict):
            del _get(value, path[:-1])[path[-1]]
        elif op == 2 and isinstance(target, dict):
            key = rng.choice(["params", "method", "id", "result", "error", "_meta", "type", "x-k", "x-k", "x-k"])
            target[key] = "@@RAW@@" if rng.random() < 0.3 else json.loads(json.dumps(rng.choice(HOSTILE)))
        elif op == 3 and isinstance(target, list):
            target.append(json.loads(json.dumps(rng.choice(HOSTILE))))
        elif op == 4:
            value = _set(value, path, "@@RAW@@")
        else:
            value = _set(value, path, [target] if rng.random() < 0.5 else {"w": target})
    text = json.dumps(value, ensure_ascii=rng.random() < 0.3)
    while '"@@RAW@@"' in text:
        text = text.replace('"@@RAW@@"', rng.choice(RAW_NUMBERS), 1)
    roll = rng.random()
    if roll < 0.08 and '":' in text:
        # write one member twice
        i = text.index('":')
        start = text.rindex('"', 0, i) if '"' in text[:i] else 0
        text = text[:start] + text[start : i + 2] + "0," + text[start:]
    elif roll < 0.12:
        cut = rng.randrange(len(text) + 1)
        text = text[:cut] + rng.choice(["", "}", "]", ",", '"', "\\", "\ud800", "NaN", " "]) + text[cut:]
    return text


def strict_loads(text: str) -> Any:
    def no_constant(name: str) -> Any:
        raise AssertionError(f"written back as {name}, which is not JSON")

    return json.loads(text, parse_constant=no_constant)


def parse(version: str, data: Any, method: str | None) -> tuple[str, Any]:
    m = api(version)
    try:
        msg = m.parse_message(data, method=method)
    except MessageError as exc:
        return "error", type(exc).__name__
    except Exception as exc:
        raise AssertionError(f"undocumented {type(exc).__name__} from parse_message: {exc}") from exc
    text = msg.to_json()
    written = strict_loads(text)
    assert written == msg.to_wire()
    again = m.parse_message(text, method=method)
    assert again.to_wire() == msg.to_wire(), "the written message reads back differently"
    return "ok", msg.to_wire()


def check_payload(version: str, method: str, decoded: Any) -> None:
    if not isinstance(decoded, dict):
        return
    m = api(version)
    which = "params" if "method" in decoded else "result"
    if which not in decoded:
        return
    payload = decoded[which]
    entry = m.parse_params if which == "params" else m.parse_result
    try:
        model = entry(decoded.get("method", method) if which == "params" else method, payload)
    except (ValidationError, UnknownMethodError, NotARequestError):
        return
    except Exception as exc:
        raise AssertionError(f"undocumented {type(exc).__name__} from {entry.__name__}: {exc}") from exc
    wire = model.to_wire() if hasattr(model, "to_wire") else model
    text = model.to_json() if hasattr(model, "to_json") else json.dumps(wire, allow_nan=False)
    assert strict_loads(text) == wire


def has_duplicates(text: str) -> bool:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        if len({k for k, _ in pairs}) != len(pairs):
            raise KeyError("duplicate")
        return dict(pairs)

    try:
        json.loads(text, object_pairs_hook=hook)
    except KeyError:
        return True
    except (ValueError, RecursionError):
        return False
    return False


def run(cases: int, seed: int) -> dict[str, int]:
    fixtures = [load_fixture(p) for p in fixture_files()]
    rng = random.Random(seed)
    tally = {"ok": 0, "error": 0, "agreed": 0}
    for n in range(cases):
        fx = fixtures[n % len(fixtures)]
        text = mutate(rng, fx["message"])
        try:
            check_mutant(fx, text, tally)
        except AssertionError as exc:
            raise AssertionError(f"FUZZ_SEED={seed}, mutant {n}: {exc}") from exc
    return tally


def check_mutant(fx: dict[str, Any], text: str, tally: dict[str, int]) -> None:
    method = fx["method"]
    for version in fx["versions"]:
        by_text = parse(version, text, method)
        tally[by_text[0]] += 1
        try:
            decoded = json.loads(text)
        except (ValueError, RecursionError):
            continue
        check_payload(version, method, decoded)
        if isinstance(decoded, str):
            continue  # a str given to parse_message is JSON text, not a decoded string
        if has_duplicates(text):
            assert by_text == ("error", "InvalidRequest"), f"duplicate keys accepted: {text[:200]}"
            continue
        by_value = parse(version, decoded, method)
        assert by_text == by_value, f"text and decoded input disagree on {text[:300]}"
        tally["agreed"] += 1


def test_mutated_fixtures_keep_the_parser_properties() -> None:
    tally = run(CASES, SEED)
    # the mutants reach both sides of the parser
    assert tally["ok"] > CASES // 10 and tally["error"] > CASES // 10, tally
    assert tally["agreed"] > CASES // 2, tally
