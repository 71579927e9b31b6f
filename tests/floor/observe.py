"""Print what acp_types makes of every fixture, one line each: run under two pydantic versions and compared.

Run by tests/test_pydantic_floor.py with ``PYTHONPATH=generated`` in an
environment holding only pydantic: for each fixture and version, the
message is parsed as text and as decoded JSON, and written back; a line says
what was written, or which error (class and JSON-RPC code) was raised. The
wording of pydantic-core's messages is left out: it is not part of what a
version of pydantic must keep.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def observe(module: object, message: object, method: str | None) -> str:
    parse = module.parse_message  # type: ignore[attr-defined]
    out = []
    for data in (json.dumps(message), message):
        try:
            out.append(parse(data, method=method).to_json())
        except module.MessageError as exc:  # type: ignore[attr-defined]
            out.append(f"{type(exc).__name__} {exc.code}")
    return " | ".join(out)


def main() -> None:
    for path in sorted(FIXTURES.rglob("*.json")):
        data = json.loads(path.read_text("utf-8"))
        if "message" not in data:
            continue
        for version in data["versions"]:
            module = importlib.import_module(f"acp_types.{version}")
            line = observe(module, data["message"], data.get("method"))
            print(f"{version} {path.relative_to(FIXTURES).as_posix()}: {line}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
