"""A union's default branch read natively takes only what the precise tag lookup routes to it.

v1's ``McpServer`` has an untagged default branch (stdio) that declares the
tag ``type`` as an optional field, and an unknown tag reads as that branch.
Model fields read the union natively (``FAST_UNION``): an object without the
tag is validated as the default branch by pydantic-core alone, every other
object goes on to the Python check of the precise lookup. Whatever the path,
the result is the precise form's: these tests compare both on the objects
that tell the rules apart, through every entry point.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import TypeAdapter

from acp_types import v1

STDIO = {"name": "fs", "command": "/bin/fs", "args": [], "env": []}
CASES = {
    "absent": STDIO,
    "unknown tag": {**STDIO, "type": "future"},
    # a known tag whose own branch rejects the object: never the default branch
    "known tag, bad payload": {**STDIO, "type": "http"},
    "non-string tag": {**STDIO, "type": 5},
    "null tag": {**STDIO, "type": None},
    "reserved tag": {**STDIO, "type": "__acp_default__"},
    "known tag": {"type": "http", "name": "h", "url": "http://x", "headers": []},
}


def _precise(item: dict[str, Any]) -> Any:
    """The precise form's reading of one item: the model's value, or None for an item it rejects."""
    try:
        return TypeAdapter(v1.models.McpServer).validate_python(item, strict=True, by_name=False)
    except ValueError:
        return None


ENTRY: dict[str, Callable[[dict[str, Any]], Any]] = {
    "model_validate": lambda d: v1.models.NewSessionRequest.model_validate(d, by_name=False),
    "model_validate_json": lambda d: v1.models.NewSessionRequest.model_validate_json(json.dumps(d), by_name=False),
    "parse_params": lambda d: v1.parse_params("session/new", d),
}


@pytest.mark.parametrize("entry", sorted(ENTRY))
@pytest.mark.parametrize("case", sorted(CASES))
def test_default_branch_as_precise(case: str, entry: str) -> None:
    item = CASES[case]
    expected = _precise(item)
    message = ENTRY[entry]({"cwd": "/p", "mcpServers": [item]})
    # an item the lookup rejects is dropped (skip-invalid array), any other is the lookup's branch
    got = message.mcp_servers
    if expected is None:
        assert got == [], case
        assert message.to_wire() == {"cwd": "/p", "mcpServers": []}
    else:
        assert [type(x) for x in got] == [type(expected)], case
        assert got[0].to_wire() == expected.to_wire() == item
        assert got[0].model_fields_set == expected.model_fields_set


def test_absent_tag_makes_no_python_call() -> None:
    # AuthMethod's default branch (agent) declares the tag too; InitializeResponse has no Python hook of its own
    agent = {"id": "a", "name": "Agent login"}
    message = {"protocolVersion": 1, "authMethods": [agent, agent]}
    text = json.dumps(message)
    validator: Any = v1.models.InitializeResponse.__pydantic_validator__
    fast = getattr(validator, "fast", validator)
    assert fast.validate_json(text, by_name=False).to_wire() == message  # built
    calls: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            calls.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        fast.validate_json(text, by_name=False)
    finally:
        sys.setprofile(None)
    assert calls == []
