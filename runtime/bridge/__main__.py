"""``python -m acp_types.bridge``: see :mod:`acp_types.bridge`.

Hand-written: the source is runtime/bridge/__main__.py, which the generator copies into the package unchanged.
"""

import sys

from ._cli import main

sys.exit(main())
