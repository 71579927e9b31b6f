"""``__all__`` of a version module: every public name for ``import *``, a short page for ``help()``.

Hand-written: the source is runtime/_exports.py, which the generator copies
into the package unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable


class Exports(list[str]):
    """The export list of a version module (``acp_types.v1.__all__``).

    As a sequence it holds every public name: ``from acp_types.v1 import *``
    binds them all, and type checkers read the literal list in the source.
    Membership (``name in __all__``) answers for the module's own page only:
    the entry points, tables and constants that pydoc documents there.
    pydoc documents every member that passes ``name in __all__``, and with
    200-odd models (each with all of pydantic's inherited methods) the page
    of ``help(acp_types.v1)`` ran to about 110,000 lines; each model keeps its
    own page (``help(acp_types.v1.SessionNotification)``).
    """

    def __init__(self, names: Iterable[str], guide: Iterable[str]) -> None:
        super().__init__(names)
        self.guide = frozenset(guide)
        missing = self.guide.difference(self)
        if missing:
            raise ValueError(f"guide names not exported: {sorted(missing)}")

    def __contains__(self, name: object) -> bool:
        return name in self.guide
