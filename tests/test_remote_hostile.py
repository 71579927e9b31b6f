"""Hostile clients of the remote transport over real sockets on 127.0.0.1, each against its documented answer.

The server is ``python -m acp_types.remote serve`` in a process of its own with small limits (so each
limit is reached in a second or two), serving ``tests/interop/remote_agents.py:Loud``. The clients are
raw sockets (WebSocket frames written and read by hand, so a client can stop reading, send a frame
too big or flood) and httpx. The server's memory is its resident size (``VmRSS``), read before and
after each case: it must grow by less than a bound far below what the peer sent or left unread.
The answers are the table of docs/remote.md.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

ROOT = Path(__file__).resolve().parents[1]
TARGET = "tests/interop/remote_agents.py:Loud"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "generated"), "HOSTILE_TOKEN": "t0ken-for-tests"}
BUFFERED = 1 << 20  # --max-buffered-bytes
STALL = 1.0  # --output-stall
MESSAGE = 1 << 16  # --max-message-size
CONNECTIONS = 40  # --max-connections
IDLE = 2.0  # --idle-timeout
REQUEST_TIMEOUT = 1.0  # --request-timeout
GROWTH_BOUND = 40 << 20
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": 2, "info": {"name": "h", "version": "1"}},
}
JSON = {"Content-Type": "application/json"}


class Server:
    def __init__(self, proc: subprocess.Popen[str], port: int) -> None:
        self.proc = proc
        self.port = port
        self.url = f"http://127.0.0.1:{port}/acp"

    def rss(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")

    def alive(self) -> bool:
        """The server still answers a new connection (a case did not wedge it)."""
        r = httpx.post(self.url, json=INIT, headers=self.headers(), timeout=10)
        if r.status_code == 200:
            httpx.delete(self.url, headers={**self.headers(), "Acp-Connection-Id": r.headers["acp-connection-id"]})
        return r.status_code == 200

    def headers(self) -> dict[str, str]:
        return {}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(*extra: str) -> Iterator[Server]:
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "acp_types.remote",
            "serve",
            TARGET,
            "--listen",
            f"127.0.0.1:{port}",
            "--max-buffered-bytes",
            str(BUFFERED),
            "--output-stall",
            str(STALL),
            "--max-message-size",
            str(MESSAGE),
            "--max-connections",
            str(CONNECTIONS),
            "--idle-timeout",
            str(IDLE),
            "--request-timeout",
            str(REQUEST_TIMEOUT),
            *extra,
        ],
        stderr=subprocess.DEVNULL,
        env=ENV,
        cwd=ROOT,
        text=True,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
    try:
        yield Server(proc, port)
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    yield from _start()


@pytest.fixture(scope="module")
def token_server() -> Iterator[Server]:
    yield from _start("--token-env", "HOSTILE_TOKEN")


# -- a WebSocket client by hand ----------------------------------------------------------------


class RawWs:
    """A WebSocket client on a plain socket: it reads only when told to."""

    def __init__(self, port: int, headers: dict[str, str] | None = None, rcvbuf: int | None = None) -> None:
        self.sock = socket.socket()
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(10)
        self.sock.connect(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [
            "GET /acp HTTP/1.1",
            f"Host: 127.0.0.1:{port}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
            *(f"{k}: {v}" for k, v in (headers or {}).items()),
        ]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                break
            head += chunk
        self.status = int(head.split(b" ", 2)[1]) if head else 0
        self.head = head.decode("latin-1")
        self.buffer = b""

    def send(self, message: Any, opcode: int = 1) -> None:
        self.sock.sendall(frame(json.dumps(message).encode() if not isinstance(message, bytes) else message, opcode))

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def recv(self) -> tuple[int, bytes]:
        """The next frame: its opcode and payload."""
        b0, b1 = self._read(2)
        n = b1 & 0x7F
        if n == 126:
            n = int.from_bytes(self._read(2), "big")
        elif n == 127:
            n = int.from_bytes(self._read(8), "big")
        return b0 & 0x0F, self._read(n)

    def close_code(self, timeout: float) -> int | None:
        """Read until the server's close frame (its code) or the end of the stream (None)."""
        self.sock.settimeout(timeout)
        try:
            while True:
                opcode, payload = self.recv()
                if opcode == 8:
                    return int.from_bytes(payload[:2], "big") if payload else 1005
        except (ConnectionError, OSError):
            return None

    def close(self) -> None:
        self.sock.close()


def frame(data: bytes, opcode: int = 1) -> bytes:
    n = len(data)
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + n.to_bytes(2, "big")
    else:
        head += bytes([0x80 | 127]) + n.to_bytes(8, "big")
    mask = os.urandom(4)
    masked = (int.from_bytes(data, "big") ^ int.from_bytes((mask * (n // 4 + 1))[:n], "big")).to_bytes(n, "big")
    return head + mask + masked


def ws_session(port: int, rcvbuf: int | None = None) -> tuple[RawWs, str]:
    ws = RawWs(port, rcvbuf=rcvbuf)
    assert ws.status == 101, ws.head
    ws.send(INIT)
    assert json.loads(ws.recv()[1])["id"] == 0
    ws.send({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp"}})
    while True:
        message = json.loads(ws.recv()[1])
        if message.get("id") == 1:
            return ws, message["result"]["sessionId"]


def prompt(rid: int, sid: str, text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": text}]},
    }


# -- the cases ---------------------------------------------------------------------------------


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", "Basic dDB rZW4=", "Bearer t0ken-for-test"])
def test_unauthenticated_and_wrong_token_requests_get_401(token_server: Server, authorization: str | None) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    for method in ("POST", "GET", "DELETE"):
        r = httpx.request(method, token_server.url, json=INIT, headers={**JSON, **headers}, timeout=10)
        assert r.status_code == 401 and r.headers["www-authenticate"] == 'Bearer realm="acp"'
    ws = RawWs(token_server.port, headers)
    assert ws.status == 401
    ws.close()
    ok = RawWs(token_server.port, {"Authorization": "Bearer t0ken-for-tests"})
    assert ok.status == 101
    ok.close()


def test_requests_for_an_unknown_connection_get_404(server: Server) -> None:
    unknown = {**JSON, "Acp-Connection-Id": "00000000-0000-0000-0000-000000000000"}
    assert httpx.post(server.url, json={"jsonrpc": "2.0", "method": "x"}, headers=unknown).status_code == 404
    r = httpx.get(server.url, headers={**unknown, "Accept": "text/event-stream"})
    assert r.status_code == 404
    assert httpx.delete(server.url, headers=unknown).status_code == 404


def test_a_post_for_an_unknown_session_is_answered_on_that_sessions_stream(server: Server) -> None:
    with httpx.Client(timeout=10) as http:
        r = http.post(server.url, json=INIT, headers=JSON)
        cid = r.headers["acp-connection-id"]
        headers = {**JSON, "Acp-Connection-Id": cid, "Acp-Session-Id": "no-such-session"}
        assert http.post(server.url, json=prompt(5, "no-such-session", "hi"), headers=headers).status_code == 202
        get = {"Accept": "text/event-stream", "Acp-Connection-Id": cid, "Acp-Session-Id": "no-such-session"}
        with http.stream("GET", server.url, headers=get) as stream:
            line = next(line for line in stream.iter_lines() if line.startswith("data: "))
        answer = json.loads(line[6:])
        assert answer["id"] == 5 and answer["error"]["code"] in (-32002, -32602)
        http.delete(server.url, headers={"Acp-Connection-Id": cid})


def test_an_oversized_body_gets_413_and_costs_nothing(server: Server) -> None:
    before = server.rss()
    big = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"x":"' + b"x" * MESSAGE + b'"}}'
    assert httpx.post(server.url, content=big, headers=JSON, timeout=10).status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it comes
        for _ in range(64):
            yield b" " * 65536

    r = httpx.post(server.url, content=chunks(), headers=JSON, timeout=10)
    assert r.status_code == 413
    assert server.rss() - before < GROWTH_BOUND
    assert server.alive()


def test_an_oversized_frame_closes_the_websocket_with_1009(server: Server) -> None:
    ws, _ = ws_session(server.port)
    ws.send(b'{"jsonrpc":"2.0","method":"x","params":"' + b"x" * MESSAGE + b'"}')
    assert ws.close_code(10) == 1009
    ws.close()
    assert server.alive()


def test_a_websocket_that_reads_nothing_is_closed_and_its_output_dropped(server: Server) -> None:
    before = server.rss()
    ws, sid = ws_session(server.port, rcvbuf=4096)
    ws.send(prompt(2, sid, "loud 20000 1000"))  # 20 MB of chunks the client never reads
    start = time.monotonic()
    time.sleep(STALL * 4)
    grown = server.rss() - before
    assert grown < GROWTH_BOUND, grown
    # the server gave up on it: what it still has to read ends without the 20 MB, in a close frame or EOF
    ws.sock.settimeout(10)
    received = 0
    try:
        while True:
            opcode, payload = ws.recv()
            received += len(payload)
            if opcode == 8:
                assert int.from_bytes(payload[:2], "big") == 1008
                break
    except (ConnectionError, OSError):
        pass
    assert received < 20_000_000 / 2
    assert time.monotonic() - start < 30
    ws.close()
    assert server.alive()


def test_a_streamable_http_client_that_reads_nothing_is_closed(server: Server) -> None:
    before = server.rss()
    with httpx.Client(timeout=10) as http:
        cid = http.post(server.url, json=INIT, headers=JSON).headers["acp-connection-id"]
        ch = {**JSON, "Acp-Connection-Id": cid}
        r = http.post(
            server.url, json={"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/t"}}, headers=ch
        )
        assert r.status_code == 202
        # no stream is ever opened: the session/new answer waits on the connection's stream; find the id by
        # opening it once, then never read the session's stream
        with http.stream("GET", server.url, headers={"Accept": "text/event-stream", "Acp-Connection-Id": cid}) as s:
            line = next(line for line in s.iter_lines() if line.startswith("data: "))
        sid = json.loads(line[6:])["result"]["sessionId"]
        assert (
            http.post(
                server.url, json=prompt(2, sid, "loud 20000 1000"), headers={**ch, "Acp-Session-Id": sid}
            ).status_code
            == 202
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = http.post(server.url, json={"jsonrpc": "2.0", "method": "_ping"}, headers=ch)
            if r.status_code == 404:  # closed for its stalled output
                break
            time.sleep(0.2)
        assert r.status_code == 404
    assert server.rss() - before < GROWTH_BOUND
    assert server.alive()


def test_a_flood_of_requests_unread_costs_bounded_memory(server: Server) -> None:
    before = server.rss()
    ws, sid = ws_session(server.port, rcvbuf=4096)
    ws.sock.settimeout(0.5)
    sent = 0
    message = frame(json.dumps({"jsonrpc": "2.0", "id": 9, "method": "session/list", "params": {}}).encode())
    deadline = time.monotonic() + 4
    try:
        while time.monotonic() < deadline:
            ws.sock.sendall(message * 100)
            sent += 100
    except (OSError, TimeoutError):
        pass  # the server stopped reading: backpressure reached the client
    assert server.rss() - before < GROWTH_BOUND
    ws.close()
    assert server.alive()


def test_a_reconnect_storm_is_bounded_and_swept(server: Server) -> None:
    before = server.rss()
    from concurrent.futures import ThreadPoolExecutor

    with httpx.Client(timeout=10, limits=httpx.Limits(max_connections=8)) as http:

        def initialize(_: int) -> int:  # initialize, never DELETE, never come back
            return http.post(server.url, json=INIT, headers=JSON).status_code

        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(initialize, range(CONNECTIONS * 2)))
    assert set(codes) <= {200, 503}
    assert codes.count(503) >= CONNECTIONS - 1, codes
    ws = RawWs(server.port)
    assert ws.status == 503  # the WebSocket profile counts in the same limit
    ws.close()
    # dropped WebSockets end their connections at once
    for _ in range(50):
        RawWs(server.port).close()
    # the idle HTTP connections are ended after --idle-timeout
    deadline = time.monotonic() + IDLE * 6
    while time.monotonic() < deadline and not server.alive():
        time.sleep(0.2)
    assert server.alive()
    assert server.rss() - before < GROWTH_BOUND


def test_a_body_that_trickles_in_gets_408(server: Server) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        head = (
            f"POST /acp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nContent-Type: application/json\r\n"
            "Content-Length: 1000\r\n\r\n"
        )
        sock.sendall(head.encode() + b'{"jsonrpc":')  # and nothing more
        answer = sock.recv(4096)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:100]


HEADER_TIMEOUT = 0.5  # --header-timeout of the server below


@pytest.fixture(scope="module")
def head_server() -> Iterator[Server]:
    yield from _start("--header-timeout", str(HEADER_TIMEOUT))


def _closed_by_server(sock: socket.socket, dribble: bytes = b"") -> bool:
    """Send ``dribble`` a byte every 0.05 s (nothing if empty) and wait: whether the server closes first."""
    sock.settimeout(0.05)
    for byte in [dribble[i : i + 1] for i in range(len(dribble))] or [b""] * 200:
        try:
            if byte:
                sock.sendall(byte)
            data = sock.recv(4096)
        except TimeoutError:
            continue
        except (ConnectionError, OSError):
            return True
        if not data:
            return True
    return False


def test_a_request_head_that_does_not_arrive_in_time_loses_its_socket(head_server: Server) -> None:
    """uvicorn has no deadline on a request's head: without ours, sockets that send nothing, or headers a
    byte at a time, would be held up to max_sockets and lock everyone else out."""
    port = head_server.port
    head = f"POST /acp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n" + "X-Pad: y\r\n" * 20
    with socket.create_connection(("127.0.0.1", port), timeout=10) as silent:
        assert _closed_by_server(silent)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as dribbling:
        assert _closed_by_server(dribbling, head.encode())  # 10 s of headers at this pace: cut at the deadline
    with socket.create_connection(("127.0.0.1", port), timeout=10) as kept_alive:  # after an answer, anew
        kept_alive.sendall(
            f"GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
        )  # answered 404, the socket kept open
        assert kept_alive.recv(4096).startswith(b"HTTP/1.1 404")
        assert _closed_by_server(kept_alive, head.encode())
    assert head_server.alive()


def test_streams_and_websockets_outlive_the_head_deadline(head_server: Server) -> None:
    ws, sid = ws_session(head_server.port)
    try:
        time.sleep(HEADER_TIMEOUT * 3)
        ws.send(prompt(2, sid, "one two"))  # the socket is still open and served
        while json.loads(ws.recv()[1]).get("id") != 2:
            pass
    finally:
        ws.close()
    with httpx.Client(timeout=10) as http:
        r = http.post(head_server.url, json=INIT)
        cid = r.headers["acp-connection-id"]
        with http.stream(
            "GET", head_server.url, headers={"Acp-Connection-Id": cid, "Accept": "text/event-stream"}
        ) as stream:
            time.sleep(HEADER_TIMEOUT * 3)  # an open SSE stream is a request under way, not a late head
            r = http.post(
                head_server.url,
                json={"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/tmp"}},
                headers={"Acp-Connection-Id": cid},
            )
            assert r.status_code == 202
            for line in stream.iter_lines():
                if line.startswith("data:") and json.loads(line[5:]).get("id") == 1:
                    break
        http.delete(head_server.url, headers={"Acp-Connection-Id": cid})
