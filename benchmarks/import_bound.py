"""The bound of ``import acp_types.v1``: what pydantic itself costs for the same classes.

:func:`bound_source` rewrites a generated ``models.py`` into a module of plain
pydantic models: every class keeps its name, docstring, fields, field
annotations and defaults (so pydantic collects the same fields, with the same
``Annotated`` metadata and aliases), but its base is a bare ``BaseModel``
subclass whose only setting is ``defer_build=True`` (no schema is built at
import, as in ours; without it pydantic would build every schema, as the SDK
does), and nothing of ACP is left: no ``AcpModel`` config or hooks, no
``__pydantic_extra__`` key check, no ``__acp_tags__`` tag table, no model
validator. The names the annotations use from ``acp_types._runtime`` are inert
stand-ins defined in the module itself, so importing it imports pydantic and
the standard library only. The module-level aliases (unions, enums) are kept
as they are.

:func:`write_bound` writes it into a folder (``make bench`` uses a temporary
one), from the installed package's own ``models.py``, so the bound follows
the schema. Importing it, timed against ``import acp, acp.schema``, is the
"bound" report row of ``bench_import``: no change to our models' ACP side
can make the import cheaper than pydantic creating these classes.
"""

from __future__ import annotations

import ast
import py_compile
from pathlib import Path

MODULE = "acp_import_bound"
"""The module name the bound is written as (``<folder>/acp_import_bound.py``)."""

# What the annotations and module-level aliases name from acp_types._runtime, as inert stand-ins:
# markers are plain objects with the same repr (pydantic keeps unknown Annotated metadata as it is and reads it
# only when a schema is built, which defer_build never does at import).
_STAND_INS = """
class _Marker:
    def __init__(self, *args, **kwargs):
        self.name = args[0] if args else "WireKey"

    def __repr__(self):
        return self.name


OMIT_ON_ERROR = _Marker("OMIT_ON_ERROR")
NOT_NULL = _Marker("NOT_NULL")
FAIL_FAST = _Marker("FAIL_FAST")
DEFAULT_ON_ERROR = _Marker("DEFAULT_ON_ERROR")
JsonInt = __import__("typing").Annotated[int, _Marker("INTEGRAL")]
WireKey = _Marker
UNKNOWN_TAG = "__acp_unknown__"


def tag_discriminator(*args, **kwargs):
    return lambda value: None


presence_discriminator = tag_discriminator


def required_one_of(*names):
    return lambda model: model


def same_kind(items):
    return items


class _Plain(BaseModel):
    model_config = ConfigDict(defer_build=True)


class UnknownVariant(_Plain):
    pass
"""


def _is_acp_only(stmt: ast.stmt) -> bool:
    """A class-body statement that only ACP needs: the extras' key check, the tag table, a model validator."""
    if isinstance(stmt, ast.If) and "__pydantic_extra__" in ast.unparse(stmt):
        return True
    targets = [stmt.target] if isinstance(stmt, ast.AnnAssign) else stmt.targets if isinstance(stmt, ast.Assign) else []
    return any(isinstance(t, ast.Name) and t.id.startswith(("_acp_", "__acp_")) for t in targets)


def _runtime_branch(stmt: ast.stmt) -> list[ast.stmt]:
    """A tag field's ``if TYPE_CHECKING: ... else: ...``: the statements the class body runs."""
    if isinstance(stmt, ast.If) and ast.unparse(stmt.test) == "TYPE_CHECKING":
        return stmt.orelse
    return [stmt]


def bound_source(models_text: str) -> str:
    """``models_text`` (a generated models module) as plain pydantic models (see the module docstring)."""
    tree = ast.parse(models_text)
    body: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "acp_types._runtime":
            body += ast.parse(_STAND_INS).body
            continue
        if isinstance(node, ast.ClassDef):
            if [ast.unparse(b) for b in node.bases] != ["AcpModel"]:
                raise ValueError(f"{node.name}: unexpected bases {[ast.unparse(b) for b in node.bases]}")
            node.bases = [ast.Name("_Plain")]
            stmts = [s for stmt in node.body if not _is_acp_only(stmt) for s in _runtime_branch(stmt)]
            node.body = stmts or [ast.Pass()]
        body.append(node)
    tree.body = [ast.parse("from pydantic import BaseModel, ConfigDict").body[0], *body]
    text = ast.unparse(ast.fix_missing_locations(tree))
    if "acp_types" in text or "AcpModel" in text:
        raise ValueError("the bound module still names acp_types")
    return text + "\n"


def write_bound(folder: Path, models: Path) -> Path:
    """Write the bound of ``models`` (a generated ``models.py``) as ``folder/acp_import_bound.py``."""
    path = folder / f"{MODULE}.py"
    path.write_text(bound_source(models.read_text("utf-8")), "utf-8")
    return path


def prepare(folder: Path, models: Path) -> str:
    """The bound of ``models`` in ``folder``, byte-compiled as an installed module is; returns its import statement.

    The statement runs in ``bench_import``'s timing snippet, where ``sys`` is imported already.
    """
    path = write_bound(folder, models)
    py_compile.compile(str(path), doraise=True)
    return f"sys.path.insert(0, {str(folder)!r}); import {MODULE}"
