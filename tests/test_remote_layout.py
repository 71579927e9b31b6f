"""acp_types.remote's layout: the server one module a layer, each profile a file of its own (issue 31 item 1).

What the server does is tested in test_remote.py, test_remote_hostile.py and test_transport_limits.py;
this pins the shape that lets a newcomer read one transport without the other.
"""

from __future__ import annotations

from conftest import ROOT
from test_agent_layout import _loaded_imports, assert_top_down

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
    assert_top_down(PACKAGE, ORDER, 520, runner=True)


def test_neither_profile_imports_the_other() -> None:
    assert "_websocket" not in _loaded_imports(PACKAGE / "_http.py")
    assert "_http" not in _loaded_imports(PACKAGE / "_websocket.py")
