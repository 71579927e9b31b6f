"""Peers on the official Python SDK's experimental remote transport (agent-client-protocol[http] 0.12.1).

python remote_sdk.py client ws|http URL PROMPT   a v1 prompt turn on a remote agent, one line per fact
python remote_sdk.py server                      its ASGI app (acp.http.asgi) with an echo agent on a
                                                 free port of 127.0.0.1; prints "listening PORT"
"""

import asyncio
import re
import socket
import sys
from typing import Any

from acp import (
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    connect_to_agent,
    text_block,
    update_agent_message,
)


class Printer:
    def __init__(self) -> None:
        self.text: list[str] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.text.append(getattr(update.content, "text", ""))

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)


async def client(profile: str, url: str, prompt: str) -> None:
    if profile == "ws":
        from acp.ws import create_websocket_stream

        transport = await create_websocket_stream(url)
    else:
        from acp.http import create_http_stream

        transport = create_http_stream(url)
    printer = Printer()
    conn = connect_to_agent(printer, transport)
    init = await conn.initialize(protocol_version=1)
    session = await conn.new_session(cwd="/tmp", mcp_servers=[])
    answer = await conn.prompt(session_id=session.session_id, prompt=[text_block(prompt)])
    print(f"protocol {init.protocol_version}")
    print("text " + "".join(printer.text))
    print(f"stop {answer.stop_reason}")
    await conn.close()
    await transport.close()


class SdkEcho(Agent):
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=1)

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="sdk-session")

    async def prompt(self, prompt: Any, session_id: str, **kwargs: Any) -> PromptResponse:
        text = " ".join(getattr(b, "text", "") for b in prompt)
        for piece in re.findall(r"\S+\s*", text):
            await self.conn.session_update(session_id=session_id, update=update_agent_message(text_block(piece)))
        return PromptResponse(stop_reason="end_turn")


def server() -> None:
    import uvicorn
    from acp.http.asgi import create_asgi_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    print(f"listening {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(create_asgi_app(SdkEcho), log_level="warning", ws="websockets-sansio")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    if sys.argv[1] == "client":
        asyncio.run(client(*sys.argv[2:5]))
    else:
        server()
