"""Lines of the realistic agent: ours (v1 and v2, examples/coding_agent.py) against the official SDK's (v1 only).

    python -m benchmarks.lines_agent

Counted: non-blank lines that are not comments and not docstrings (module, class and function).
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OURS = ROOT / "examples" / "coding_agent.py"
SDK = ROOT / "benchmarks" / "sdk_coding_agent.py"


def code_lines(path: Path) -> int:
    source = path.read_text("utf-8")
    skip: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                skip.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in (
            tokenize.COMMENT,
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.INDENT,
            tokenize.DEDENT,
            tokenize.ENDMARKER,
        ):
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines - skip)


def main() -> int:
    ours, sdk = code_lines(OURS), code_lines(SDK)
    print(f"acp_types.agent, v1 and v2 ({OURS.relative_to(ROOT)}): {ours} lines")
    print(f"official Python SDK 0.12.1, v1 only ({SDK.relative_to(ROOT)}): {sdk} lines")
    print(f"ratio: {ours / sdk:.2f}x")
    return 0 if ours < sdk else 1


if __name__ == "__main__":
    sys.exit(main())
