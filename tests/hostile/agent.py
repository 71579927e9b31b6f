"""An agent for tests/test_hostile_peers.py: the shapes of handler a hostile peer can exploit.

Run as ``python agent.py [--ask] [--log] [--max-line-size N]`` over stdin/stdout.
``--ask``: every prompt asks the client for permission first. ``--log``: logging goes to
stderr (WARNING and up), as an application that configures logging would have it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import logging
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "generated"))

from acp_types import connection, v1, v2

OPTIONS = argparse.Namespace(ask=False)


class Agent:
    def __init__(self, conn: connection.AgentConnection) -> None:
        self.conn = conn

    @property
    def m(self) -> Any:
        return v1 if self.conn.version == "v1" else v2

    async def initialize(self, params: Any) -> Any:
        if self.conn.version == "v1":
            return v1.InitializeResponse(protocol_version=1)
        return v2.InitializeResponse(protocol_version=2, info={"name": "hostile", "version": "1"})

    async def session_new(self, params: Any) -> Any:
        return self.m.NewSessionResponse(session_id="s1")

    async def session_list(self, params: Any) -> Any:
        return self.m.ListSessionsResponse(sessions=[])

    async def session_prompt(self, params: Any) -> Any:
        if OPTIONS.ask:
            await self.conn.request(
                "session/request_permission",
                {
                    "sessionId": params.session_id,
                    "toolCall": {"toolCallId": "t1"},
                    "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}],
                },
            )
        chunk = v1.AgentMessageChunk(content=v1.TextContent(text="echo"))
        await self.conn.notify("session/update", {"sessionId": params.session_id, "update": chunk.to_wire()})
        return v1.PromptResponse(stop_reason="end_turn")

    async def session_cancel(self, params: Any) -> None:
        await asyncio.sleep(0.01)

    async def ext_method(self, method: str, params: Any) -> Any:
        if method == "_big":  # answered after one suspension: the end of input must not cut it short
            await asyncio.sleep(0.2)
            return {"pad": "x" * (4 << 20)}
        if method == "_nan":
            return {"x": float("nan")}
        if method == "_set":
            return {"x": {1, 2}}
        if method == "_bytes":
            return {"x": b"raw"}
        if method == "_datetime":
            return {"x": datetime.datetime(2026, 1, 1)}
        if method == "_error_data":
            raise connection.RequestError(-32000, "with data that is not JSON", data={1, 2})
        if method == "_ask_client":  # the client's answer may be too long to read
            try:
                result = await self.conn.request("_question", {})
            except connection.ResponseTooLarge as exc:
                return {"outcome": "ResponseTooLarge", "method": exc.method}
            return {"outcome": "answered", "result": result}
        return {"echo": params}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ask", action="store_true")
    parser.add_argument("--log", action="store_true")
    parser.add_argument("--max-line-size", type=int, default=connection.DEFAULT_MAX_LINE_SIZE)
    parser.add_argument("--version", action="append", dest="versions")
    args = parser.parse_args(namespace=OPTIONS)
    if args.log:
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    asyncio.run(
        connection.serve_stdio(Agent, versions=tuple(args.versions or ("v1", "v2")), max_line_size=args.max_line_size)
    )


if __name__ == "__main__":
    main()
