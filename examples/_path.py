"""Lets the examples run from a checkout where acp_types is not installed (it lives in generated/)."""

import sys
from pathlib import Path

try:
    import acp_types  # noqa: F401
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "generated"))
