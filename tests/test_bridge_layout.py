"""acp_types.bridge's layout: one module a layer, each importing only those before it (issue 29 item 4).

The bridge's behaviour is tested in test_bridge.py; this pins the shape that keeps it readable.
"""

from __future__ import annotations

from conftest import ROOT
from test_agent_layout import assert_top_down

PACKAGE = ROOT / "runtime" / "bridge"
ORDER = [
    "_rules",
    "_messages",
    "_session",
    "_shapes",
    "_mode",
    "_up",
    "_down",
    "_router",
    "_process",
    "_cli",
    "__init__",
    "__main__",
]


def test_the_bridge_reads_from_the_top_down() -> None:
    assert_top_down(PACKAGE, ORDER, 500, runner=True)
