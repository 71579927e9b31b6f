"""``python -m acp_types.conformance agent|client [options] -- CMD...``: see ``acp_types.conformance``.

Hand-written: the source is runtime/conformance/__main__.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

import sys

from acp_types.conformance import main

if __name__ == "__main__":
    sys.exit(main())
