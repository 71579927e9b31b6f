"""The remote transport (acp_types.remote), our server with our client over real sockets on 127.0.0.1.

Both profiles (WebSocket and Streamable HTTP), both versions, through the public API: a prompt turn
streams, each connection gets its own handler, a client that reconnects resumes its session, the
wire of Streamable HTTP is the TypeScript SDK's (status codes, headers, which stream carries what),
and the refusals of the security defaults. The command line, the extra's absence and TLS are in
test_remote_cli.py (processes of their own).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from acp_types import agent, client, remote, v1, v2

ROOT = Path(__file__).resolve().parents[1]
PYTHON_ENV = {**os.environ, "PYTHONPATH": str(ROOT / "generated")}


class Echo(agent.App):
    name = "remote-echo"
    version = "1.0"

    async def prompt(self, turn: agent.Turn) -> agent.StopReason:
        for piece in re.findall(r"\S+\s*", turn.prompt_text):
            await turn.text(piece)
        return "end_turn"


def run(main: Callable[[], Awaitable[None]], timeout: float = 30) -> None:
    asyncio.run(asyncio.wait_for(main(), timeout))


def agent_text(turn: client.Turn) -> str:
    return "".join(m.text for m in turn.state.messages if m.role == "agent")


async def initialize(conn: Any, version: str) -> Any:
    if version == "v2":
        info = v2.Implementation(name="remote-test", version="1")
        return await conn.initialize(v2.InitializeRequest(protocol_version=2, info=info))
    return await conn.initialize(v1.InitializeRequest(protocol_version=1))


@pytest.mark.parametrize("version", ["v2", "v1"])
@pytest.mark.parametrize("profile", ["ws", "http"])
def test_a_prompt_turn_streams_over_each_profile(profile: str, version: str) -> None:
    async def main() -> None:
        async with remote.start_server(Echo) as server:
            url = server.ws_url if profile == "ws" else server.url
            async with remote.connect(url, client.SessionClient, versions=(version,)) as conn:
                answer = await initialize(conn, version)
                assert answer.protocol_version == (2 if version == "v2" else 1)
                acp = conn.handler
                sid = await acp.new_session("/tmp")
                turn = await acp.prompt(sid, "one two three")
                assert (turn.stop_reason, agent_text(turn)) == ("end_turn", "one two three")
                assert server.app.connections == 1
            # leaving the block ends the connection on the server too (HTTP: by DELETE)
            for _ in range(100):
                if server.app.connections == 0:
                    break
                await asyncio.sleep(0.01)
            assert server.app.connections == 0

    run(main)


@pytest.mark.parametrize("profile", ["ws", "http"])
def test_a_client_that_reconnects_resumes_its_session(profile: str) -> None:
    app = Echo()

    async def main() -> None:
        async with remote.start_server(app) as server:
            url = server.ws_url if profile == "ws" else server.url
            async with remote.connect(url, client.SessionClient, versions=("v2",)) as conn:
                await initialize(conn, "v2")
                sid = await conn.handler.new_session("/tmp")
                await conn.handler.prompt(sid, "kept")
            async with remote.connect(url, client.SessionClient, versions=("v2",)) as conn:
                await initialize(conn, "v2")
                v2conn = conn.as_version("v2")
                page = await v2conn.peer.session_list(v2.ListSessionsRequest())
                assert sid in [s.session_id for s in page.sessions]
                await v2conn.peer.session_resume(v2.ResumeSessionRequest(session_id=sid, cwd="/tmp"))
                turn = await conn.handler.prompt(sid, "again")
                assert agent_text(turn).endswith("again")

    run(main)


def test_each_connection_gets_its_own_handler_from_a_factory() -> None:
    made: list[Any] = []

    class Agent:
        def __init__(self, conn: Any) -> None:
            made.append(conn)

        async def initialize(self, params: v1.InitializeRequest) -> v1.InitializeResponse:
            return v1.InitializeResponse(protocol_version=1)

    async def main() -> None:
        async with remote.start_server(Agent, versions=("v1",)) as server:
            for url in (server.ws_url, server.url, server.ws_url):
                async with remote.connect(url, versions=("v1",)) as conn:
                    await initialize(conn, "v1")
        assert len(made) == 3 and len(set(map(id, made))) == 3

    run(main)


@pytest.fixture
def served() -> Any:
    """A server in a thread of its own loop, for plain HTTP requests from the test."""
    import threading

    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, Any] = {}

    async def serve() -> None:
        async with remote.start_server(Echo, limits=remote.Limits(max_id_length=64)) as server:
            box["server"] = server
            box["stop"] = asyncio.Event()
            ready.set()
            await box["stop"].wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(10)
    yield box["server"]
    loop.call_soon_threadsafe(box["stop"].set)
    thread.join(10)


INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": 2, "info": {"name": "t", "version": "1"}},
}
JSON = {"Content-Type": "application/json"}


def sse_events(response: httpx.Response, until: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for line in response.iter_lines():
        if line.startswith("data: "):
            events.append(json.loads(line[6:]))
            if until(events[-1]):
                break
    return events


def idle(event: dict[str, Any]) -> bool:
    return event.get("params", {}).get("update", {}).get("state") == "idle"


def test_streamable_http_on_the_wire(served: Any) -> None:
    url = served.url
    with httpx.Client(timeout=10) as http:
        # initialize: 200, the answer in the body, the connection's id in a header
        r = http.post(url, json=INIT, headers=JSON)
        assert r.status_code == 200 and r.json()["result"]["protocolVersion"] == 2
        cid = r.headers["Acp-Connection-Id"]
        ch = {**JSON, "Acp-Connection-Id": cid}
        assert http.post(url, json=INIT, headers=ch).status_code == 400  # once per connection
        # everything else: 202, its answer on a stream
        new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp"}}
        assert http.post(url, json=new, headers=ch).status_code == 202
        with http.stream("GET", url, headers={"Accept": "text/event-stream", "Acp-Connection-Id": cid}) as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            # a second receiver of the same stream: 409
            again = http.get(url, headers={"Accept": "text/event-stream", "Acp-Connection-Id": cid})
            assert again.status_code == 409
            (answer,) = sse_events(stream, lambda e: True)
        assert answer["id"] == 1
        sid = answer["result"]["sessionId"]
        prompt = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "a b"}]},
        }
        # a session's method must name its session, and name it alike
        assert http.post(url, json=prompt, headers=ch).text == "Missing Acp-Session-Id"
        bad = http.post(url, json=prompt, headers={**ch, "Acp-Session-Id": "other"})
        assert (bad.status_code, bad.text) == (400, "Mismatched Acp-Session-Id")
        assert http.post(url, json=prompt, headers={**ch, "Acp-Session-Id": sid}).status_code == 202
        # the prompt's answer and the session's updates come on the session's stream
        headers = {"Accept": "text/event-stream", "Acp-Connection-Id": cid, "Acp-Session-Id": sid}
        with http.stream("GET", url, headers=headers) as stream:
            events = sse_events(stream, idle)
        assert any(e.get("id") == 2 for e in events)
        updates = [e["params"]["update"] for e in events if e.get("method") == "session/update"]
        assert {e["params"]["sessionId"] for e in events if "params" in e} == {sid}
        assert [u["state"] for u in updates if u["sessionUpdate"] == "state_update"] == ["running", "idle"]
        # over-long ids: 400
        long = {"jsonrpc": "2.0", "id": "x" * 65, "method": "session/list", "params": {}}
        assert http.post(url, json=long, headers=ch).status_code == 400
        # DELETE ends it; then the id is unknown
        assert http.delete(url, headers={"Acp-Connection-Id": cid}).status_code == 202
        assert http.post(url, json=new, headers=ch).status_code == 404
        assert http.delete(url, headers={"Acp-Connection-Id": cid}).status_code == 404


@pytest.mark.parametrize(
    ("method", "headers", "body", "status"),
    [
        ("POST", {"Content-Type": "text/plain"}, b"{}", 415),
        ("POST", JSON, b"{not json", 400),
        ("POST", JSON, b"[]", 400),
        ("POST", JSON, b"3", 400),
        ("POST", JSON, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/list"}).encode(), 400),
        ("POST", {**JSON, "Acp-Connection-Id": "nope"}, b'{"jsonrpc":"2.0","method":"x"}', 404),
        ("GET", {"Accept": "application/json"}, b"", 406),
        ("GET", {"Accept": "text/event-stream"}, b"", 400),
        ("GET", {"Accept": "text/event-stream", "Acp-Connection-Id": "nope"}, b"", 404),
        ("DELETE", {}, b"", 400),
        ("PUT", {}, b"", 405),
    ],
)
def test_streamable_http_refusals(served: Any, method: str, headers: dict[str, str], body: bytes, status: int) -> None:
    r = httpx.request(method, served.url, headers=headers, content=body, timeout=10)
    assert r.status_code == status, r.text


def test_a_batch_is_refused_with_one_error(served: Any) -> None:
    r = httpx.post(served.url, content=b"[" + json.dumps(INIT).encode() + b"]", headers=JSON, timeout=10)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32600 and r.json()["id"] is None


def test_other_paths_are_not_found(served: Any) -> None:
    assert httpx.post(served.url.replace("/acp", "/other"), json=INIT, timeout=10).status_code == 404


def test_dns_rebinding_is_refused_without_a_token(served: Any) -> None:
    r = httpx.post(served.url, json=INIT, headers={"Host": "evil.example:80"}, timeout=10)
    assert r.status_code == 403
    r = httpx.post(served.url, json=INIT, headers={"Origin": "http://evil.example"}, timeout=10)
    assert r.status_code == 403
    r = httpx.post(served.url, json=INIT, headers={"Origin": "http://localhost:3000"}, timeout=10)
    assert r.status_code == 200


@pytest.mark.parametrize("profile", ["ws", "http"])
def test_a_token_is_required_and_checked(profile: str) -> None:
    async def main() -> None:
        async with remote.start_server(Echo, token="s3cret") as server:
            url = server.ws_url if profile == "ws" else server.url
            for token in (None, "wrong"):
                with pytest.raises(remote_errors()):
                    async with remote.connect(url, token=token, versions=("v2",)) as conn:
                        await initialize(conn, "v2")
            async with remote.connect(url, token="s3cret", versions=("v2",)) as conn:
                await initialize(conn, "v2")
            async with httpx.AsyncClient(timeout=10) as http:
                r = await http.post(server.url, json=INIT, headers={"Authorization": "Bearer wrong"})
            assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")

    run(main)


def remote_errors() -> tuple[type[BaseException], ...]:
    from acp_types import connection

    return (connection.ConnectionClosed,)


def test_a_non_loopback_server_needs_a_token_or_insecure() -> None:
    with pytest.raises(remote.Refused, match="not loopback"):
        remote.check_exposure("0.0.0.0", None, False)
    remote.check_exposure("0.0.0.0", "t", False)
    remote.check_exposure("0.0.0.0", None, True)
    remote.check_exposure("::1", None, False)
    remote.check_exposure("localhost", None, False)


def test_a_bad_url_is_a_value_error() -> None:
    async def main() -> None:
        for url in ("ftp://x/acp", "127.0.0.1:8765", "ws://"):
            with pytest.raises(ValueError, match="ws://, wss://, http:// or https://"):
                async with remote.connect(url):
                    pass

    run(main)


def test_websocket_on_the_wire() -> None:
    from websockets.asyncio.client import connect as ws_connect

    async def main() -> None:
        async with remote.start_server(Echo) as server:
            async with ws_connect(server.ws_url) as ws:
                assert ws.response is not None and ws.response.headers["Acp-Connection-Id"]
                await ws.send("not json")
                assert json.loads(await ws.recv())["error"]["code"] == -32700
                await ws.send("[]")
                assert json.loads(await ws.recv())["error"]["code"] == -32600
                await ws.send(b"\x00binary")  # ignored
                await ws.send(json.dumps(INIT))
                assert json.loads(await ws.recv())["result"]["protocolVersion"] == 2
                await ws.send(json.dumps({**INIT, "id": 7}))
                again = json.loads(await ws.recv())
                assert again["id"] == 7 and again["error"]["code"] == -32600
            async with ws_connect(server.ws_url) as ws:
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}}))
                await ws.wait_closed()
                assert ws.close_code == 1002

    run(main)


def test_a_server_that_stops_ends_its_connections() -> None:
    from websockets.asyncio.client import connect as ws_connect

    async def main() -> None:
        async with remote.start_server(Echo) as server:
            ws = await ws_connect(server.ws_url)
            await ws.send(json.dumps(INIT))
            await ws.recv()
            http = httpx.AsyncClient(timeout=10)
            r = await http.post(server.url, json=INIT, headers=JSON)
            get = {"Accept": "text/event-stream", "Acp-Connection-Id": r.headers["acp-connection-id"]}
            stream = await http.send(http.build_request("GET", server.url, headers=get), stream=True)
        # the block's end stopped the server: the socket got 1001, the SSE stream ended
        await ws.wait_closed()
        assert ws.close_code == 1001
        assert await stream.aread() == b""
        await http.aclose()

    run(main)


@pytest.mark.parametrize("version", ["v2", "v1"])
@pytest.mark.parametrize("profile", ["ws", "http"])
def test_an_agent_request_is_answered_on_its_sessions_route(profile: str, version: str) -> None:
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "interop"))
    from remote_agents import Loud

    def allow(params: Any) -> str | None:
        return next((o.option_id for o in params.options if o.kind.startswith("allow")), None)

    def make(conn: Any) -> client.SessionClient:
        return client.SessionClient(conn, permission=allow)

    async def main() -> None:
        async with remote.start_server(Loud) as server:
            url = server.ws_url if profile == "ws" else server.url
            async with remote.connect(url, make, versions=(version,)) as conn:
                await initialize(conn, version)
                sid = await conn.handler.new_session("/tmp")
                turn = await conn.handler.prompt(sid, "tool")
                assert agent_text(turn) == "allowed"

    run(main)


@pytest.mark.parametrize("where", ["stream", "answer"])
def test_a_server_sending_an_endless_message_does_not_grow_the_client(where: str) -> None:
    import tracemalloc

    import uvicorn

    async def hostile(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] == "POST":  # initialize: a valid answer
            request = json.loads((await receive())["body"])
            if request.get("method") != "initialize":
                await send({"type": "http.response.start", "status": 202, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return
            if where == "answer":  # an initialize answer that never ends
                await send({"type": "http.response.start", "status": 200, "headers": [(b"acp-connection-id", b"c1")]})
                for _ in range(64):
                    await send({"type": "http.response.body", "body": b" " * (1 << 20), "more_body": True})
                await send({"type": "http.response.body", "body": b"{}"})
                return
            info = {"name": "hostile", "version": "1"}
            answer = {"protocolVersion": 2, "info": info, "capabilities": {}}
            body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": answer}).encode()
            headers = [(b"content-type", b"application/json"), (b"acp-connection-id", b"c1")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        if scope["method"] == "GET":  # the stream: one line that never ends
            await send(
                {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]}
            )
            await send({"type": "http.response.body", "body": b"data: ", "more_body": True})
            for _ in range(64):
                await send({"type": "http.response.body", "body": b"x" * (1 << 20), "more_body": True})
            await send({"type": "http.response.body", "body": b"\n\n"})
            return
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def main() -> None:
        config = uvicorn.Config(hostile, host="127.0.0.1", port=0, log_level="error", lifespan="off")
        server = uvicorn.Server(config)
        sock = remote._bind("127.0.0.1", 0)
        task = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started:
            await asyncio.sleep(0.01)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/acp"
        tracemalloc.start()
        try:
            async with remote.connect(url, versions=("v2",), max_message_size=1 << 20) as conn:
                if where == "answer":
                    with pytest.raises(remote_errors()):  # the answer broke the limit: initialize fails
                        await asyncio.wait_for(initialize(conn, "v2"), 20)
                else:
                    await initialize(conn, "v2")
                    await asyncio.wait_for(conn.wait_closed(), 20)  # the stream broke the limit: the connection ends
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            server.should_exit = True
            await task
        assert peak < 16 << 20, peak  # the server sent 64 MiB on one line

    run(main)


def test_the_servers_queues_keep_order_across_interleaved_appends_and_takes() -> None:
    from acp_types.remote._queues import Fifo

    fifo: Fifo[int] = Fifo()
    taken, n = [], 0
    for burst in (1, 3, 0, 5, 2, 64, 1):
        for _ in range(burst):
            fifo.append(n)
            n += 1
        for _ in range(min(len(fifo), 2)):
            taken.append(fifo.popleft())
    while fifo:
        taken.append(fifo.popleft())
    assert taken == list(range(n))
    with pytest.raises(IndexError):
        fifo.popleft()


@pytest.mark.parametrize("profile", ["ws", "http"])
def test_the_peer_reads_while_an_agent_streams_without_yielding(profile: str) -> None:
    """A stream's pump is a task of its own, and an agent whose sends never block never yields to it: the
    server must count what the pump has yet to send as unread output, so the agent waits at
    ``WRITE_HIGH_WATER`` for the pump and the client reads while the agent writes. Otherwise the whole turn
    (here 1 MiB) is queued before the first byte leaves: no pipelining, and memory up to max_buffered_bytes."""
    from acp_types.connection import WRITE_HIGH_WATER

    chunks, size = 1024, 1024
    sent: list[int] = []  # what the agent had written when the client saw the first chunk

    class Streamer:
        def __init__(self, conn: Any) -> None:
            self.conn = conn
            self.count = 0

        async def initialize(self, params: v1.InitializeRequest) -> v1.InitializeResponse:
            return v1.InitializeResponse(protocol_version=1)

        async def session_new(self, params: v1.NewSessionRequest) -> v1.NewSessionResponse:
            return v1.NewSessionResponse(session_id="s-1")

        async def session_prompt(self, params: v1.PromptRequest) -> v1.PromptResponse:
            piece = v1.TextContent(text="x" * size)
            for _ in range(chunks):
                update = v1.AgentMessageChunk(content=piece)
                await self.conn.peer.session_update(v1.SessionNotification(session_id="s-1", update=update))
                self.count += 1
            return v1.PromptResponse(stop_reason="end_turn")

    async def main() -> None:
        made: list[Streamer] = []

        def factory(conn: Any) -> Streamer:
            made.append(Streamer(conn))
            return made[-1]

        def seen(state: Any, params: Any) -> None:
            if not sent:
                sent.append(made[0].count)

        async with remote.start_server(factory, versions=("v1",)) as server:
            url = server.ws_url if profile == "ws" else server.url
            async with remote.connect(url, client.SessionClient, versions=("v1",)) as conn:
                await initialize(conn, "v1")
                conn.handler.on_update = seen
                sid = await conn.handler.new_session("/tmp")
                turn = await conn.handler.prompt(sid, "go")
                assert len(agent_text(turn)) == chunks * size

    run(main)
    assert sent and sent[0] * size <= 4 * WRITE_HIGH_WATER, (sent, chunks)


def test_streamable_http_routes_what_the_agent_writes_by_its_session() -> None:
    """A session's notification is routed by the start of its text (the agent's connection writes the
    sessionId first); anything else, or a session id with an escape, by the whole message read again."""
    from acp_types.remote._http import HttpRemote
    from acp_types.remote._server import AcpAsgiApp

    async def main() -> None:
        app = AcpAsgiApp(Echo)
        remote = app.new_remote(HttpRemote)
        assert remote is not None
        notification = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1","update":{}}}'
        escaped = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s\\"2","update":{}}}'
        later = b'{"jsonrpc":"2.0","method":"session/update","params":{"update":{},"sessionId":"s-3"}}'
        request = b'{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s-1"}}'
        plain = b'{"jsonrpc":"2.0","method":"_vendor/ping","params":{}}'
        for line in (notification, escaped, later, request, plain):
            remote.outbound(line)
        taken = {route: [box.take() for _ in range(len(box.queue))] for route, box in remote.sessions.items()}
        assert taken == {
            "s-1": [notification.decode(), request.decode()],
            's"2': [escaped.decode()],
            "s-3": [later.decode()],
        }
        assert [remote.stream.take() for _ in range(len(remote.stream.queue))] == [plain.decode()]
        assert remote.client_routes == {("n", 7): "s-1"}  # the answer to the request goes back by it
        remote.close()
        await app.close()

    run(main)


def test_a_request_of_one_profile_does_not_reach_a_connection_of_the_other() -> None:
    """A POST, GET or DELETE naming a WebSocket connection's id is an unknown connection for Streamable HTTP."""
    from websockets.asyncio.client import connect

    async def main() -> None:
        async with remote.start_server(Echo) as server:
            async with connect(server.ws_url) as ws:
                init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
                await ws.send(json.dumps(init))
                assert json.loads(await ws.recv())["id"] == 0
                assert ws.response is not None
                cid = ws.response.headers["acp-connection-id"]
                new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}
                async with httpx.AsyncClient() as http:
                    headers = {"Acp-Connection-Id": cid}
                    posted = await http.post(server.url, json=new, headers=headers)
                    got = await http.get(server.url, headers={**headers, "Accept": "text/event-stream"})
                    deleted = await http.delete(server.url, headers=headers)
                assert [posted.status_code, got.status_code, deleted.status_code] == [404, 404, 404]
                assert server.app.connections == 1  # the WebSocket is still open and served
                await ws.send(json.dumps({**new, "id": 2}))
                assert json.loads(await ws.recv())["id"] == 2

    run(main)
