"""``python -m acp_types.bridge``: see :mod:`acp_types.bridge`."""

import sys

from ._cli import main

sys.exit(main())
