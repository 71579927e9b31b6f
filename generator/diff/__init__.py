"""``python -m generator diff``: what changed between two versions of the canonical schemas.

``compare.compare(old, new, crossmap)`` lists the changes, each judged by a rule
of ``rules.RULES``; ``report`` renders them as text, Markdown or JSON.
"""

from generator.diff.compare import Change, compare
from generator.diff.rules import RULES, Rule

__all__ = ["Change", "Rule", "RULES", "compare"]
