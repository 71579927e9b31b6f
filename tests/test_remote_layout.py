"""acp_types.remote's layout: the server one module a layer, each profile a file of its own (issue 31 item 1).

What the server does is tested in test_remote.py, test_remote_hostile.py and test_transport_limits.py;
this pins the shape that lets a newcomer read one transport without the other.
"""

from __future__ import annotations

from conftest import ROOT
from test_agent_layout import _loaded_imports

PACKAGE = ROOT / "runtime" / "remote"
ORDER = [
    "_limits",  # the limits and the loopback rules
    "_queues",  # small queues and flags, cheap when idle
    "_asgi",  # ASGI's types, headers, short answers
    "_remote",  # one connection of either profile: the agent's transport, the flow rule, closing
    "_http",  # the Streamable HTTP profile
    "_websocket",  # the WebSocket profile
    "_server",  # the ASGI application: checks, the connections, a request to its profile
    "_client",  # connect(): the client of both profiles
    "_relay",  # remote connect URL: a stdio agent relaying to a remote one
    "__init__",
    "__main__",
]


def test_the_remote_package_reads_from_the_top_down() -> None:
    assert sorted(p.stem for p in PACKAGE.glob("*.py")) == sorted(ORDER)
    for i, name in enumerate(ORDER[:-1]):  # __main__ runs the package: it may import anything
        imported = _loaded_imports(PACKAGE / f"{name}.py")
        assert imported <= set(ORDER[:i]), f"{name} imports {sorted(imported - set(ORDER[:i]))}, which come after it"
    for name in ORDER:
        lines = len((PACKAGE / f"{name}.py").read_text("utf-8").splitlines())
        assert lines <= 520, f"{name}.py has {lines} lines"


def test_neither_profile_imports_the_other() -> None:
    assert "_websocket" not in _loaded_imports(PACKAGE / "_http.py")
    assert "_http" not in _loaded_imports(PACKAGE / "_websocket.py")
