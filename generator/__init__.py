"""The acp-types generator: canonical ACP schemas in, the acp_types package out.

Run it as ``python -m generator``; see ``python -m generator --help`` and
docs/ARCHITECTURE.md. It is a tool of this repository, not part of what
consumers install.
"""

# The version of the acp_types package it writes (generated/acp_types/__init__.py), which
# pyproject.toml reads: the one place to change it.
__version__ = "0.2.0"
