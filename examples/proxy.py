"""An ACP proxy that adds one line of project context to every prompt.

The line names the working directory and its git branch (read from ``.git/HEAD``),
or is the first line of the file in ``$PROXY_CONTEXT_FILE`` when that is set.
Everything else between the client and the agent passes through unchanged.

Behind a conductor::

    python -m acp_types.conductor -- python examples/proxy.py -- python examples/echo_agent.py

or on its own, in front of the agent it spawns::

    python examples/client.py --prompt hi -- python examples/proxy.py -- python examples/echo_agent.py
"""

from __future__ import annotations

import os
from pathlib import Path

import _path  # noqa: F401  (acp_types from the checkout when not installed)

from acp_types import proxy, v1, v2

chain = proxy.Proxy("project-context")


def context_line(cwd: str) -> str:
    """``Project: <name>, git branch <branch>``, or the first line of $PROXY_CONTEXT_FILE."""
    path = os.environ.get("PROXY_CONTEXT_FILE")
    if path:
        with open(path, encoding="utf-8") as file:
            return file.readline().strip()
    line = f"Project: {Path(cwd).name}"
    head = Path(cwd, ".git", "HEAD")
    if head.is_file():
        ref = head.read_text(encoding="utf-8").strip()
        line += f", git branch {ref.rpartition('/')[2] if ref.startswith('ref:') else ref[:12]}"
    return line


@chain.on("session/prompt")
async def add_context(params: v1.PromptRequest | v2.PromptRequest, ctx: proxy.Context) -> object:
    text = context_line(os.getcwd()) + "\n"
    if isinstance(params, v1.PromptRequest):
        params.prompt.insert(0, v1.TextContent(text=text))
    else:
        params.prompt.insert(0, v2.TextContent(text=text))
    return params  # the changed prompt goes on to the agent


if __name__ == "__main__":
    chain.main()
