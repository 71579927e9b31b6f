"""acp_types.agent's layout: one speaker per version, the version read in one place, modules read top-down.

The agent's behaviour on the wire is tested in test_agent*.py; these pin the shape that keeps it
readable: a newcomer reads runtime/agent/ module by module, in the order its docstring gives.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import ROOT

from acp_types import agent
from acp_types.agent import _v1, _v2
from acp_types.agent._speaker import Speaker

PACKAGE = ROOT / "runtime" / "agent"
ORDER = ["_values", "_speaker", "_v1", "_v2", "_session", "_app", "_surface", "_serve", "__init__"]


def _loaded_imports(path: Path) -> set[str]:
    """The package's modules that ``path`` imports when it loads (not in functions, not for type checking only)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text("utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found.add((node.module or "").split(".")[0])
    return found


def assert_top_down(package: Path, order: list[str], max_lines: int, runner: bool = False) -> None:
    """``package`` has exactly the modules of ``order``, each importing only those before it (the last
    may import anything when ``runner``: a ``__main__`` runs the package), none over ``max_lines``."""
    assert sorted(p.stem for p in package.glob("*.py")) == sorted(order)
    for i, name in enumerate(order[:-1] if runner else order):
        imported = _loaded_imports(package / f"{name}.py")
        assert imported <= set(order[:i]), f"{name} imports {sorted(imported - set(order[:i]))}, which come after it"
    for name in order:
        lines = len((package / f"{name}.py").read_text("utf-8").splitlines())
        assert lines <= max_lines, f"{name}.py has {lines} lines"


def test_the_package_reads_from_the_top_down() -> None:
    assert_top_down(PACKAGE, ORDER, 600)


def test_no_module_compares_a_version_name() -> None:
    """Which version a connection speaks picks its speaker (``speaker_for``); nothing else tests it."""
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Compare):
                for operand in [node.left, *node.comparators]:
                    assert not (isinstance(operand, ast.Constant) and operand.value in ("v1", "v2")), (
                        f"{path.name}:{node.lineno} compares with {operand.value!r}: ask the speaker instead"
                    )


def test_each_version_has_its_speaker() -> None:
    assert isinstance(agent.speaker_for("v1"), _v1.V1Speaker)
    assert isinstance(agent.speaker_for("v2"), _v2.V2Speaker)
    with pytest.raises(TypeError):  # a speaker lacking a method of the interface cannot be made

        class Half(Speaker):
            version = "v9"

        Half()  # type: ignore[abstract]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_one_event_in_each_version(version: str) -> None:
    """A new tool call deleting a file: v1 a ``tool_call`` saying it in words, v2 an upsert with a ``delete`` change."""
    speaker = agent.speaker_for(version)
    data = {"id": "c1", "new": True, "title": "rm", "content": {"text": None, "edits": [["/a.txt", "x\n", None]]}}
    wire = speaker.notification("s", speaker.update("tool", None, data)).to_wire()
    update = wire["update"]
    if version == "v1":
        assert update["sessionUpdate"] == "tool_call"
        assert update["content"] == [{"type": "content", "content": {"type": "text", "text": "deleted /a.txt"}}]
    else:
        assert update["sessionUpdate"] == "tool_call_update"
        (diff,) = update["content"]
        assert diff["changes"] == [{"operation": "delete", "path": "/a.txt"}]
        assert diff["patch"]["text"].startswith("diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ /dev/null\n")
    user = speaker.update("user", "m1", {"v": version, "content": [{"type": "text", "text": "hi"}], "text": "hi"})
    assert (user is None) == (version == "v1")  # v1 does not show the prompt back; v2 inserts it whole
