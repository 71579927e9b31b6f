"""The fast paths of parse_message agree with the general ones, on valid and invalid messages alike.

Two shortcuts sit in front of the general parser (issue 11):

- ``acp_types._wire.decode`` shows a decoded text within the parser's limits
  by counting characters of the value written back (``_proven``) instead of
  walking it; when it cannot, the walk decides;
- ``parse_message`` validates a message's whole envelope in one call over the
  envelope type of its method (``acp_types._jsonrpc._fast_one``); when it
  cannot, the general path reads the message.

Neither may change an answer. The corpus is every fixture (valid and
invalid) as it is, compact, with non-ASCII escaped and as bytes, the
malformed envelopes and hostile texts of the other test files, and
deterministic mutants of the fixtures (``test_fuzz.mutate``). For each,
the version's ``parse_message`` and the general path alone give the same
message (type, fields, wire text) or the same error (class, code, message,
id, method, data, kind), and leave the pending requests alike.
"""

from __future__ import annotations

import importlib
import json
import random
from typing import Any

import pytest
from conftest import VERSIONS, api, fixture_files, load_fixture
from test_fuzz import mutate
from test_messages import MALFORMED
from test_parser_limits import DUPLICATES, nested_text

from acp_types import _jsonrpc, _wire
from acp_types._jsonrpc import MessageError, PendingRequests

MUTANTS = 600
SEED = 11


def _variants(message: Any) -> list[Any]:
    text = json.dumps(message)
    return [text, json.dumps(message, separators=(",", ":")), json.dumps(message, ensure_ascii=True),
            text.encode("utf-8")]


def corpus() -> list[tuple[str, Any, str | None]]:
    """(version, data, method) for every case."""
    cases: list[tuple[str, Any, str | None]] = []
    fixtures = [load_fixture(p) for p in fixture_files()]
    for fx in fixtures:
        for version in fx["versions"]:
            for data in _variants(fx["message"]):
                cases.append((version, data, fx["method"]))
            if "method" not in fx["message"]:
                cases.append((version, json.dumps(fx["message"]), None))  # no method: the general path's error
    rng = random.Random(SEED)
    for n in range(MUTANTS):
        fx = fixtures[n % len(fixtures)]
        text = mutate(rng, fx["message"])
        for version in fx["versions"]:
            cases.append((version, text, fx["method"]))
    for version in VERSIONS:
        for message, _ in MALFORMED:
            cases.append((version, json.dumps(message), "session/list"))
        for text in DUPLICATES:
            cases.append((version, text, None))
        for depth in (126, 127, 128, 129, 130, 200):
            deep = '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1","_meta":{"x":@}}}'
            cases.append((version, deep.replace("@", nested_text(depth - 3)), None))
        for number in ("1e400", "-1e400", "1" + "0" * 400 + ".0", "1" + "0" * 1000, "1" + "0" * 999, "1.5", "2e3"):
            meta = '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1","_meta":{"n":@}}}'
            cases.append((version, meta.replace("@", number), None))
            # a value the validation drops (a tolerant array's invalid item) is still within the limits or refused
            skip = '{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s","configOptions":[@]}}'
            cases.append((version, skip.replace("@", number), "session/new"))
            cases.append((version, skip.replace("@", "[" * 130 + "]" * 130), "session/new"))
            cases.append((version, skip.replace("@", '{"a":' + number + ',"a":1}'), "session/new"))
        # keys spelled like attributes: the models' slow path
        for spelled in ('"meta":{"a":1}', '"session_id":"s2"', '"_meta":{"a":1},"meta":null'):
            cases.append((version, '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1",'
                          + spelled + "}}", None))
        for escaped in ('"\\u003a"', '"a\\u003Ab"', '"x:y"'):
            colon = '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1","s":@,"s":@}}'
            cases.append((version, colon.replace("@", escaped), None))
    return cases


CORPUS = corpus()


def messages(version: str) -> Any:
    return importlib.import_module(f"acp_types.{version}.messages")


def outcome(msg: Any) -> tuple[Any, ...]:
    if isinstance(msg, MessageError):
        return ("error", type(msg).__name__, msg.code, msg.message, msg.id, msg.method, msg.data, msg.kind,
                msg.has_id, msg.answerable)
    if isinstance(msg, _jsonrpc.Batch):
        return ("batch", tuple(outcome(e) for e in msg.entries), msg.to_json())
    return ("ok", type(msg).__name__, msg.to_json(), msg.to_wire(), getattr(msg, "id", None), msg.method,
            dict(msg.extra), type(getattr(msg, "params", getattr(msg, "result", getattr(msg, "error", None)))))


def general(version: str, data: Any, **kw: Any) -> Any:
    """``parse_message`` without the envelope's fast path."""
    m = api(version)
    return _jsonrpc.parse_message(data, m.METHODS, version, m.Error, batches=messages(version).BATCHES, **kw)


def both(version: str, data: Any, method: str | None) -> tuple[Any, Any]:
    got = []
    for parse in (api(version).parse_message, lambda d, **kw: general(version, d, **kw)):
        try:
            got.append(outcome(parse(data, method=method)))
        except MessageError as exc:
            got.append(outcome(exc))
    return got[0], got[1]


def test_the_corpus_reaches_both_paths() -> None:
    taken = refused = 0
    for version, data, method in CORPUS:
        m = api(version)
        try:
            value = _wire.decode(data)
        except _wire.JsonLimitError:
            refused += 1
            continue
        if _jsonrpc._fast_one(value, m.METHODS, messages(version)._FAST, method, None) is not None:
            taken += 1
    assert taken > len(CORPUS) // 4, (taken, len(CORPUS))
    assert refused > 100, refused


@pytest.mark.parametrize("version", VERSIONS)
def test_parse_message_and_the_general_path_agree(version: str) -> None:
    cases = [(d, method) for v, d, method in CORPUS if v == version]
    disagree = []
    for data, method in cases:
        fast, slow = both(version, data, method)
        if fast != slow:
            disagree.append((data if isinstance(data, str) else data.decode())[:200])
    assert not disagree, f"{len(disagree)} of {len(cases)} disagree, first: {disagree[:3]}"


@pytest.mark.parametrize("version", VERSIONS)
def test_the_fast_path_never_raises(version: str) -> None:
    m = api(version)
    for v, data, method in CORPUS:
        if v != version:
            continue
        try:
            value = _wire.decode(data)
        except _wire.JsonLimitError:
            continue
        for shape in (value, [value], "x", None, {"method": 5}, {"id": [1], "result": {}}):
            _jsonrpc._fast_one(shape, m.METHODS, messages(version)._FAST, method, None)


def test_decoding_without_the_walk_agrees_with_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    def run() -> list[Any]:
        results = []
        for _, data, _ in CORPUS:
            try:
                results.append(("ok", json.dumps(_wire.decode(data), allow_nan=True)))
            except _wire.JsonLimitError as exc:
                results.append(("error", exc.kind, str(exc)))
        return results

    shown = sum(1 for _, data, _ in CORPUS if _shown(data))
    assert shown > len(CORPUS) // 3, shown
    with_proof = run()
    monkeypatch.setattr(_wire, "_proven", lambda text, value: False)
    assert run() == with_proof


def _shown(data: Any) -> bool:
    text = data if isinstance(data, str) else data.decode("utf-8", "replace")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return False
    try:
        return _wire._proven(text, value)
    except (ValueError, RecursionError, OverflowError, TypeError):
        return False


@pytest.mark.parametrize("version", VERSIONS)
def test_responses_agree_on_pending_requests(version: str) -> None:
    m = api(version)
    lines = []
    for path in fixture_files():
        fx = load_fixture(path)
        if version in fx["versions"] and "method" not in fx["message"] and fx["method"] in m.METHODS:
            lines.append((fx["message"], fx["method"]))
    assert len(lines) > 10
    for message, method in lines:
        answers = []
        for parse in (m.parse_message, lambda d, **kw: general(version, d, **kw)):
            pending = PendingRequests()
            if "id" in message and _jsonrpc._check_id(message["id"]):
                pending.add(message["id"], method)
            try:
                got = outcome(parse(json.dumps(message), pending=pending))
            except MessageError as exc:
                got = outcome(exc)
            answers.append((got, list(pending)))
        assert answers[0] == answers[1], message


def test_a_v2_batch_reads_alike_through_both_paths() -> None:
    fixtures = [load_fixture(p) for p in fixture_files()]
    entries = [fx["message"] for fx in fixtures if "v2" in fx["versions"] and "method" in fx["message"]]
    assert len(entries) > 20
    text = json.dumps(entries)
    assert both("v2", text, None)[0] == both("v2", text, None)[1]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_message_read_by_the_fast_path_writes_its_payload_as_it_is_now(version: str) -> None:
    m = api(version)
    line = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                       "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}})
    fast = m.parse_message(line)
    slow = general(version, line)
    assert fast.__dict__.get("_written") is not None and slow.__dict__.get("_written") is None
    for msg in (fast, slow):
        msg.params.session_id = "s2"
        msg.params.prompt[0].text = "changed"
        msg.params.prompt.append(m.models.TextContent(text="more"))
    assert fast.to_json() == slow.to_json()
    assert json.loads(fast.to_json())["params"] == {
        "sessionId": "s2", "prompt": [{"type": "text", "text": "changed"}, {"type": "text", "text": "more"}]}


def test_a_copy_of_a_message_read_by_the_fast_path_writes_the_same() -> None:
    import copy
    import dataclasses

    m = api("v1")
    line = json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}})
    msg = m.parse_message(line)
    assert msg.__dict__.get("_written") is not None
    for other in (copy.copy(msg), dataclasses.replace(msg)):
        assert other.__dict__.get("_written") is None
        assert other == msg and other.to_json() == msg.to_json() == general("v1", line).to_json()
