"""Agents on acp_types.agent that put examples/client.py to the test: ``python tests/client_agents.py KIND``.

- ``auth``: answers ``session/new`` with -32000 until the client logs in with ``token``, then echoes.
- ``slow``: says ``working`` and never ends its turn by itself (only ``session/cancel`` ends it).
- ``fails``: answers ``session/new`` with an error that has data.
- ``rewrites`` (v2): streams ``draft`` in chunks, then replaces the message with ``final answer``.
- ``bad-result`` / ``bad-error`` (raw JSON lines, no library): answer ``session/new`` with
  ``{"sessionId": 5}`` / with an error whose code is a string.
- ``logins`` (raw JSON lines): offers a browser login first (``browser``, type ``agent``: it never
  completes) and an environment-variable login (``key``, type ``env_var``, variable ``ACP_TEST_KEY``:
  it succeeds when the variable is set); ``session/new`` answers -32000 until logged in, then the
  prompt is answered with ``logged in with METHOD``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "generated"))

from acp_types import agent
from acp_types.connection import RequestError


class Auth(agent.App):
    auth_methods = (agent.AuthMethod("token", "Token"),)

    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        await turn.text(turn.prompt_text)
        return "end_turn"


class Slow(agent.App):
    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        await turn.text("working")
        await asyncio.Event().wait()
        return "end_turn"


class Fails(agent.App):
    async def new_session(self, session: agent.Session) -> agent.Setup | None:
        raise RequestError(-32603, "the model is unavailable", {"retry": False})

    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        return "end_turn"


class Rewrites(agent.App):
    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        from acp_types import v2

        await turn.text("dra")
        await turn.text("ft")
        message_id = turn.agent_message_id
        await turn.session.send(v2.AgentMessage(message_id=message_id, content=[v2.TextContent(text="final answer")]))
        return "end_turn"


def raw(session_new: dict[str, object]) -> None:
    """Answer ``initialize`` properly and ``session/new`` with ``session_new`` (a result or an error member)."""
    import json

    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        if msg["method"] == "initialize":
            if msg["params"].get("protocolVersion") == 2:
                result: dict[str, object] = {"protocolVersion": 2, "info": {"name": "raw", "version": "1"}}
                result["capabilities"] = {}
            else:
                result = {"protocolVersion": 1, "agentCapabilities": {}}
            answer: dict[str, object] = {"result": result}
        else:
            answer = session_new
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **answer}), flush=True)


def logins() -> None:
    import json
    import os

    def send(message: dict[str, object]) -> None:
        print(json.dumps({"jsonrpc": "2.0", **message}), flush=True)

    version, used = 1, None
    for line in sys.stdin:
        msg = json.loads(line)
        method, params, rid = msg.get("method"), msg.get("params") or {}, msg.get("id")
        if method == "initialize":
            version = 2 if params.get("protocolVersion") == 2 else 1
            key = "methodId" if version == 2 else "id"
            methods = [
                {"type": "agent", key: "browser", "name": "Log in with a browser"},
                {"type": "env_var", key: "key", "name": "API key", "vars": [{"name": "ACP_TEST_KEY"}]},
            ]
            if version == 2:
                result: dict[str, object] = {"protocolVersion": 2, "info": {"name": "logins", "version": "1"}}
                result.update(capabilities={}, authMethods=methods)
            else:
                result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": methods}
            send({"id": rid, "result": result})
        elif method in ("authenticate", "auth/login"):
            chosen = params.get("methodId")
            if chosen == "browser":
                continue  # waits for a browser that never comes: no answer
            if chosen == "key" and os.environ.get("ACP_TEST_KEY"):
                used = chosen
                send({"id": rid, "result": {}})
            else:
                send({"id": rid, "error": {"code": -32000, "message": "Authentication required"}})
        elif method == "session/new":
            if used is None:
                send({"id": rid, "error": {"code": -32000, "message": "Authentication required"}})
            else:
                send({"id": rid, "result": {"sessionId": "s1"}})
        elif method == "session/prompt":
            chunk = {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": f"logged in with {used}"},
            }
            if version == 2:
                send({"id": rid, "result": {"messageId": "u1"}})
                for update in (
                    {"sessionUpdate": "state_update", "state": "running"},
                    {**chunk, "messageId": "m1"},
                    {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"},
                ):
                    send({"method": "session/update", "params": {"sessionId": "s1", "update": update}})
            else:
                send({"method": "session/update", "params": {"sessionId": "s1", "update": chunk}})
                send({"id": rid, "result": {"stopReason": "end_turn"}})


if __name__ == "__main__":
    if sys.argv[1] == "logins":
        logins()
        sys.exit()
    if sys.argv[1] == "bad-result":
        raw({"result": {"sessionId": 5}})
        sys.exit()
    if sys.argv[1] == "bad-error":
        raw({"error": {"code": "busy", "message": "try later"}})
        sys.exit()
    app = {"auth": Auth, "slow": Slow, "fails": Fails, "rewrites": Rewrites}[sys.argv[1]]()
    asyncio.run(agent.serve_stdio(app))
