"""Everything rendered through our own Jinja templates in ``templates/``.

Templates read the intermediate model only. Python literals go through the
``py`` filter (``repr``) and docstrings through ``docstring``, so schema text
stays data whatever characters it holds.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from generator.model import Method, Protocol
from generator.naming import constant_name, method_name

TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "templates"


def docstring(text: str, indent: int = 0) -> str:
    """A triple-quoted docstring literal holding ``text`` exactly."""
    body = (text or "").strip()
    lines = body.splitlines() or [""]
    if len(lines) == 1 and len(body) < 70 and _plain(body):
        return f'"""{body}"""'
    if _plain(body):
        pad = " " * indent
        inner = "\n".join((pad + line) if line.strip() else "" for line in lines)
        return f'"""\n{inner}\n{pad}"""'
    return repr(body)


def docstring_body(text: str) -> str:
    """``text`` escaped for use inside a larger triple-quoted (non-raw) docstring; it reads back exactly."""
    out = []
    for ch in (text or "").replace("\\", "\\\\").replace('"', '\\"'):
        out.append(ch if ch.isprintable() or ch == "\n" else repr(ch)[1:-1])
    return "".join(out)


def _plain(text: str) -> bool:
    return (
        '"""' not in text
        and "\\" not in text
        and not text.endswith('"')
        and all(ch.isprintable() or ch in "\n" for ch in text)
    )


def envelope_name(handler: str) -> str:
    """A method's handler name as the CamelCase stem of its envelope types: ``session_set_mode`` -> ``SessionSetMode``."""
    return "".join(part[:1].upper() + part[1:] for part in handler.split("_"))


def md_cell(text: str | None) -> str:
    """Text safe inside one Markdown table cell: one line, backslashes and pipes escaped."""
    text = " ".join((text or "").split())
    return text.replace("\\", "\\\\").replace("|", "\\|")


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["py"] = repr
    env.filters["docstring"] = docstring
    env.filters["docstring_body"] = docstring_body
    env.filters["method_name"] = method_name
    env.filters["constant_name"] = constant_name
    env.filters["md"] = md_cell
    env.filters["envelope_name"] = envelope_name
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def version_context(proto: Protocol) -> dict[str, Any]:
    sides: dict[str, list[Method]] = {"agent": [], "client": [], "proxy": []}
    for m in proto.methods:
        if m.side == "proxy":
            sides["proxy"].append(m)
        if m.side in ("agent", "protocol"):
            sides["agent"].append(m)
        if m.side in ("client", "protocol"):
            sides["client"].append(m)
    model_names = [t.name for t in proto.types]
    return {
        "proto": proto,
        "agent_methods": sides["agent"],
        "client_methods": sides["client"],
        "proxy_methods": sides["proxy"],
        "model_names": model_names,
    }
