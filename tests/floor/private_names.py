"""What the one private pydantic name the runtime keeps is for, checked under the pydantic that runs it.

``AcpModel.__init__`` is marked ``__pydantic_base_init__`` (docs/ARCHITECTURE.md):
construction in code goes through it (a tag filled in, a misspelled keyword
refused), while reading the wire does not (a tag is required, an unknown key
is kept). Run by tests/test_pydantic_floor.py with ``PYTHONPATH=generated``
under the oldest pydantic pyproject.toml allows and under the pinned one;
prints ``ok`` or fails on the first broken property.
"""

from __future__ import annotations

import importlib

from pydantic import ValidationError

import acp_types


def refused(call: object, error: type[Exception], *args: object, **kwargs: object) -> bool:
    try:
        call(*args, **kwargs)  # type: ignore[operator]
    except error:
        return True
    return False


def main() -> None:
    for version in acp_types.VERSIONS:
        m = importlib.import_module(f"acp_types.{version}")
        text = m.models.TextContent
        # constructed in code: the runtime's __init__ runs
        assert text(text="hi").to_wire() == {"type": "text", "text": "hi"}, f"{version}: the tag is not filled in"
        assert refused(text, TypeError, text="hi", txet="x"), f"{version}: a misspelled keyword is accepted"
        # read from the wire: it does not, at the top or nested
        read = text.model_validate({"type": "text", "text": "x", "txet": 1})
        assert read.model_extra == {"txet": 1}, f"{version}: an unknown key is not kept"
        assert text.model_validate_json('{"type":"text","text":"x","txet":1}').model_extra == {"txet": 1}
        prompt = m.parse_params(
            "session/prompt", {"sessionId": "s", "prompt": [{"type": "text", "text": "x", "txet": 1}]}
        )
        assert prompt.prompt[0].model_extra == {"txet": 1}, f"{version}: a nested unknown key is not kept"
        assert refused(text.model_validate, ValidationError, {"text": "x"}), f"{version}: a wire tag is filled in"
        assert refused(m.parse_params, ValidationError, "session/prompt", {"sessionId": "s", "prompt": [{"text": "x"}]})
    print("ok")


if __name__ == "__main__":
    main()
