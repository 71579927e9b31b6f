"""acp_types.bridge's layout: one module a layer, each importing only those before it (issue 29 item 4).

The bridge's behaviour is tested in test_bridge.py; this pins the shape that keeps it readable.
"""

from __future__ import annotations

from conftest import ROOT
from test_agent_layout import _loaded_imports

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
    assert sorted(p.stem for p in PACKAGE.glob("*.py")) == sorted(ORDER)
    for i, name in enumerate(ORDER[:-1]):  # __main__ runs the package: it may import anything
        imported = _loaded_imports(PACKAGE / f"{name}.py")
        assert imported <= set(ORDER[:i]), f"{name} imports {sorted(imported - set(ORDER[:i]))}, which come after it"
    for name in ORDER:
        lines = len((PACKAGE / f"{name}.py").read_text("utf-8").splitlines())
        assert lines <= 500, f"{name}.py has {lines} lines"
