"""The source of a generated models module as the plan wrote it, shared annotations put back inline.

``generator/render/models.py`` builds an annotation that several classes use
once, as a module-level ``_A_...`` name. Tests that read the class bodies'
annotations from the source (what each field's annotation is, which builtins
it names, that identical definitions print identically) read them through
:func:`models_tree`, so they see every annotation in full.
"""

from __future__ import annotations

import ast
import copy

from generator.render.models import SHARED_PREFIX


def shared_definitions(tree: ast.Module) -> dict[str, ast.expr]:
    """Name -> annotation expression of every shared annotation defined at the top of ``tree``."""
    return {
        node.targets[0].id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id.startswith(SHARED_PREFIX)
    }


class _Inline(ast.NodeTransformer):
    def __init__(self, shared: dict[str, ast.expr]) -> None:
        self.shared = shared

    def visit_Name(self, node: ast.Name) -> ast.AST:
        value = self.shared.get(node.id)
        return ast.copy_location(copy.deepcopy(value), node) if value is not None else node


def models_tree(text: str) -> ast.Module:
    """``text`` (a models module) parsed, its shared annotations inlined and their definitions dropped."""
    tree = ast.parse(text)
    shared = shared_definitions(tree)
    tree.body = [
        node
        for node in tree.body
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in shared
        )
    ]
    return ast.fix_missing_locations(_Inline(shared).visit(tree))
