"""The conformance kit's agent mode reads top-down: a client (``_agent_run``), one file of checks per part, a runner.

These pin the shape of ``acp_types.conformance`` that the split of ``_agent.py``
gave it, so that no file needs a map: every ``_checks_*`` module is a part of
the check table (``_agent.PARTS``), each check lives in its part, the table runs
the parts in order and each part's checks in the order of its file, and no
module grows past what a newcomer reads in one go.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

from acp_types import conformance
from acp_types.conformance import _agent

PACKAGE = Path(conformance.__file__).parent
LONGEST = 650  # lines


def _parts_on_disk() -> set[str]:
    return {f"acp_types.conformance.{p.stem}" for p in PACKAGE.glob("_checks_*.py")}


def test_every_file_of_checks_is_a_part_of_the_table() -> None:
    assert {part.__name__ for part in _agent.PARTS} == _parts_on_disk()


def test_the_parts_run_in_the_order_of_the_spec_as_before_the_split() -> None:
    # the order checks run in (one agent process serves them in turn) and are reported in
    assert [part.__name__.rsplit(".", 1)[1] for part in _agent.PARTS] == [
        "_checks_initialize",
        "_checks_prompt_turn",
        "_checks_cancellation",
        "_checks_messages",
        "_checks_archive",
        "_checks_session_setup",
        "_checks_session_list",
    ]
    ids = [c.id for c in conformance.REGISTRY["agent"]]
    assert ids[:3] == ["INI-03", "INI-04", "INI-05"] and ids[-1] == "LST-18"


def test_each_agent_check_lives_in_a_part_and_the_table_keeps_their_order() -> None:
    parts = [part.__name__ for part in _agent.PARTS]
    table = conformance.REGISTRY["agent"]
    homes = [c.run.__module__ for c in table]
    assert set(homes) <= set(parts)
    assert homes == sorted(homes, key=parts.index), "the parts run in the order of _agent.PARTS"
    for part in _agent.PARTS:  # within a part: the order of its file
        mine = [c for c in table if c.run.__module__ == part.__name__]
        lines = [inspect.getsourcelines(c.run)[1] for c in mine]
        assert lines == sorted(lines), part.__name__
        assert mine, f"{part.__name__} registers no check"


def test_the_checks_import_the_client_not_the_runner() -> None:
    for name in sorted(_parts_on_disk()) + ["acp_types.conformance._agent_run"]:
        tree = ast.parse(inspect.getsource(importlib.import_module(name)))
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1}
        assert "_agent" not in imported, f"{name} imports the runner: a cycle"


def test_no_module_of_the_kit_needs_a_map() -> None:
    long = {p.name: n for p in PACKAGE.glob("*.py") if (n := len(p.read_text().splitlines())) > LONGEST}
    assert not long, long
