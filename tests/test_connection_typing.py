"""What a type checker sees at the message boundary: per-method overloads, typed peers, partial handlers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

GOOD = """
from acp_types import connection, v1, v2


class Partial(v1.Agent):  # implements one method: the rest answer -32601
    async def session_new(self, params: v1.NewSessionRequest) -> v1.NewSessionResponse:
        return v1.NewSessionResponse(session_id="s")


agent: v1.Agent = Partial()
params: v1.NewSessionRequest = v1.parse_params("session/new", {"cwd": "/", "mcpServers": []})
result: v2.PromptResponse = v2.parse_result("session/prompt", {})
text = v1.TextContent(text="hi")  # the tag defaults to its value
row: v1.MethodSpec[v1.NewSessionRequest, v1.NewSessionResponse] = v1.METHODS["session/new"]
created_params: v1.NewSessionRequest = row.validate_params({"cwd": "/", "mcpServers": []})


async def calls(conn: connection.ClientConnection) -> None:
    peer = v2.AgentPeer(conn)
    created: v2.NewSessionResponse = await peer.session_new(v2.NewSessionRequest(cwd="/"))
    await peer.session_cancel(v2.CancelSessionNotification(session_id=created.session_id))
"""

BAD = """
from acp_types import v1, v2

wrong: v1.PromptRequest = v1.parse_params("session/new", {})
also_wrong: v2.ListSessionsResponse = v2.parse_result("session/new", {})
row_wrong: v1.NewSessionResponse = v1.METHODS["session/new"].validate_params({})
"""


def test_the_typed_api_type_checks_and_mistakes_are_caught(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "bad.py").write_text(BAD)
    cmd = [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--follow-imports=silent",
        "--cache-dir",
        str(tmp_path / ".mypy_cache"),
        str(tmp_path / "good.py"),
        str(tmp_path / "bad.py"),
    ]
    env = {**os.environ, "MYPYPATH": str(ROOT / "generated")}
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert [e.split(":")[0].rsplit("/", 1)[-1] + ":" + e.split(":")[1] for e in errors] == [
        "bad.py:4",
        "bad.py:5",
        "bad.py:6",
    ], out.stdout
    assert 'has type "NewSessionRequest", variable has type "PromptRequest"' in out.stdout
