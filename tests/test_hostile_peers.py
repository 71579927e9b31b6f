"""A hostile peer over real OS pipes against an agent subprocess on acp_types.connection.

Each case is one of the connection's promises a peer can try to break: answers delivered whole
at end of input, memory bounded whatever the peer sends and however little it reads (requests,
unanswered requests of ours, batches, notifications), nothing but JSON written and every
request answered, logging that a peer cannot turn into a flood or a stall, and a response too
long to read failing its request instead of hanging it.

The peer writes from a thread (a write blocks when the agent stops reading, which is the
point) and reads from another. The agent's memory is its peak resident size (``VmHWM``) less
its size after ``initialize``. ``HOSTILE_LOAD`` scales the load against the audit's (issue 25):
``0.2`` by default, a few seconds a case; ``make fuzz`` runs ``10``, with a longer time to
write, and the growth bound stays 100 MiB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

AGENT = Path(__file__).resolve().parent / "hostile" / "agent.py"
ECHO = Path(__file__).resolve().parents[1] / "examples" / "echo_agent.py"
LOAD = float(os.environ.get("HOSTILE_LOAD", "0.2"))
LONG = LOAD > 1
WRITE_FOR = 30.0 if LONG else 3.0  # seconds the peer keeps offering its load
GROWTH_BOUND = 100 << 20 if LONG else 40 << 20

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def count(audit: int) -> int:
    return max(1, int(audit * LOAD))


def status(pid: int, key: str) -> int:
    """A memory figure of /proc/<pid>/status, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(key)


def line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def request(rid: Any, method: str, params: Any) -> bytes:
    return line({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})


class Peer:
    """The agent as a subprocess, and a peer that writes and reads its pipes from threads."""

    def __init__(self, *args: str, script: Path = AGENT, drain_stderr: bool = True) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(script), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
        )
        self.lines: list[bytes] = []
        self.stderr = bytearray()
        self.reading = threading.Event()
        self.reading.set()
        self._buf = b""
        self._cond = threading.Condition()
        self._out = threading.Thread(target=self._read, daemon=True)
        self._out.start()
        if drain_stderr:
            threading.Thread(target=self._read_stderr, daemon=True).start()
        self.written = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while True:
            self.reading.wait()
            data = self.proc.stdout.read(1 << 16)
            with self._cond:
                if not data:
                    self.lines.append(b"")  # end of output
                    self._cond.notify_all()
                    return
                self._buf += data
                *done, self._buf = self._buf.split(b"\n")
                self.lines.extend(done)
                self._cond.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while data := self.proc.stderr.read(1 << 16):
            self.stderr += data

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.written += len(data)

    def next_line(self, timeout: float = 10) -> bytes:
        """The next line the agent writes (``b""`` at the end of its output)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self.lines:
                left = deadline - time.monotonic()
                assert left > 0, "the agent did not answer in time"
                self._cond.wait(left)
            return self.lines.pop(0)

    def answer(self, timeout: float = 10) -> dict[str, Any]:
        got = self.next_line(timeout)
        assert got, "the agent ended its output"
        out: dict[str, Any] = json.loads(got, parse_constant=self._not_json)
        return out

    @staticmethod
    def _not_json(name: str) -> Any:
        raise AssertionError(f"{name} is not JSON")

    def answer_to(self, rid: Any, timeout: float = 10) -> dict[str, Any]:
        while True:
            got = self.answer(timeout)
            if got.get("id") == rid and "method" not in got:
                return got

    def initialize(self, version: int = 1) -> None:
        params: dict[str, Any] = {"protocolVersion": version}
        if version == 2:
            params["info"] = {"name": "peer", "version": "1"}
        self.send(request(0, "initialize", params))
        assert self.answer_to(0)["result"]["protocolVersion"] == version
        self.base = status(self.proc.pid, "VmRSS")

    def growth(self) -> int:
        return status(self.proc.pid, "VmHWM") - self.base

    def offer(self, lines: Iterable[bytes], seconds: float = WRITE_FOR) -> bool:
        """Write ``lines`` from a thread for at most ``seconds``; whether all of them went in."""
        done = threading.Event()

        def write() -> None:
            try:
                batch = bytearray()
                for one in lines:
                    batch += one
                    if len(batch) >= 1 << 16:
                        self.send(bytes(batch))
                        batch.clear()
                self.send(bytes(batch))
            except (BrokenPipeError, ValueError, OSError):
                return
            done.set()

        threading.Thread(target=write, daemon=True).start()
        return done.wait(seconds)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def peers() -> Iterable[list[Peer]]:
    made: list[Peer] = []
    yield made
    for peer in made:
        peer.close()


def spawn(peers: list[Peer], *args: str, **kw: Any) -> Peer:
    peer = Peer(*args, **kw)
    peers.append(peer)
    return peer


def test_an_answer_written_before_the_end_of_input_is_delivered_whole(peers: list[Peer]) -> None:
    # item 1: the handler awaits once and returns 4 MiB; the client closes the agent's stdin at once
    peer = spawn(peers)
    peer.initialize()
    peer.send(request(1, "_big", {}))
    assert peer.proc.stdin is not None
    peer.proc.stdin.close()
    got = peer.answer_to(1, timeout=20)
    assert len(got["result"]["pad"]) == 4 << 20
    assert peer.next_line(20) == b""
    assert peer.proc.wait(20) == 0


def test_a_peer_that_sends_prompts_and_reads_nothing_does_not_grow_the_agent(peers: list[Peer]) -> None:
    # item 2: the echo agent's prompts write notifications; the peer reads none of them
    peer = spawn(peers, script=ECHO)
    peer.initialize()
    peer.send(request(1, "session/new", {"cwd": "/tmp", "mcpServers": []}))
    sid = peer.answer_to(1)["result"]["sessionId"]
    peer.reading.clear()
    prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "one two three four five"}]}
    all_in = peer.offer(request(i, "session/prompt", prompt) for i in range(2, 2 + count(100_000)))
    growth = peer.growth()
    print(f"prompts unread: {peer.written} bytes offered, all accepted: {all_in}, growth {growth >> 20} MiB")
    assert not all_in or LOAD < 0.05, "the agent read everything from a peer that reads nothing"
    assert growth < GROWTH_BOUND


def test_requests_of_ours_left_unanswered_do_not_grow_the_agent(peers: list[Peer]) -> None:
    # item 3: every prompt asks for permission; the peer reads everything and answers nothing
    peer = spawn(peers, "--ask")
    peer.initialize()
    prompt = {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}
    all_in = peer.offer(request(i, "session/prompt", prompt) for i in range(1, 1 + count(100_000)))
    growth = peer.growth()
    print(f"unanswered permission requests: {peer.written} bytes offered, growth {growth >> 20} MiB")
    assert not all_in
    assert growth < GROWTH_BOUND
    asks = [json.loads(one) for one in list(peer.lines) if b"request_permission" in one]
    assert 0 < len(asks) <= 64 + 8  # max_in_flight: the rest wait, unstarted


def test_one_huge_batch_line_is_refused_without_parsing_it(peers: list[Peer]) -> None:
    # item 3: one v2 batch line of 200,000 requests (12 MiB)
    peer = spawn(peers)
    peer.initialize(2)
    entry = {"jsonrpc": "2.0", "id": 0, "method": "session/list", "params": {}}
    entries = min(200_000, max(1025, count(200_000) * 5))
    body = b"[" + b",".join(json.dumps({**entry, "id": i}).encode() for i in range(entries)) + b"]\n"
    if len(body) > 16 << 20:  # the long run's line is over max_line_size: skipped as it streams in
        body = body[: 16 << 20] + b"]\n"
    assert peer.offer([body], 60)
    got = peer.answer(20)
    assert got["id"] is None and got["error"]["code"] == -32600
    peer.send(request("after", "session/list", {}))
    assert peer.answer_to("after")["result"] == {"sessions": []}
    growth = peer.growth()
    print(f"a batch of {entries} entries ({len(body)} bytes): growth {growth >> 20} MiB")
    assert growth < 64 << 20  # what reading the line costs (its text, decoded once), not its messages


def test_a_flood_of_notifications_for_a_slow_handler_does_not_grow_the_agent(peers: list[Peer]) -> None:
    # item 4: a 10 ms session/cancel handler and 200,000 notifications
    peer = spawn(peers)
    peer.initialize()
    cancel = line({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s" * 200}})
    all_in = peer.offer(cancel for _ in range(count(200_000)))
    growth = peer.growth()
    print(f"notifications for a slow handler: {peer.written} bytes offered, growth {growth >> 20} MiB")
    assert not all_in
    assert growth < GROWTH_BOUND


@pytest.mark.parametrize("method", ["_nan", "_set", "_bytes", "_datetime", "_error_data"])
def test_results_that_are_not_json_are_answered_32603(peers: list[Peer], method: str) -> None:
    # item 5: never NaN on the wire, never an unanswered request
    peer = spawn(peers, "--log")
    peer.initialize()
    peer.send(request(1, method, {}))
    got = peer.answer_to(1)
    assert got["error"] == {"code": -32603, "message": "Internal error"}
    assert peer.proc.stdin is not None
    peer.proc.stdin.close()
    assert peer.proc.wait(20) == 0
    time.sleep(0.1)
    assert b"never retrieved" not in peer.stderr
    assert b"acp_types.connection" in peer.stderr  # logged


def test_junk_cannot_flood_the_log_or_stall_the_agent_on_its_stderr(peers: list[Peer]) -> None:
    # item 6: nobody reads the agent's stderr; 50,000 unknown notifications and 50,000 stray responses
    peer = spawn(peers, "--log", drain_stderr=False)
    peer.initialize()
    junk = []
    for i in range(count(50_000)):
        junk.append(line({"jsonrpc": "2.0", "method": f"no/such/{i}", "params": {}}))
        junk.append(line({"jsonrpc": "2.0", "id": 10_000_000 + i, "result": {}}))
    assert peer.offer(junk, 60)
    peer.send(request("after", "session/list", {}))
    assert peer.answer_to("after", timeout=20)["result"] == {"sessions": []}
    assert peer.proc.stdin is not None and peer.proc.stderr is not None
    peer.proc.stdin.close()
    logged = peer.proc.stderr.read()
    print(f"{len(junk)} junk lines: {len(logged)} bytes of log")
    assert len(logged) < 16_384
    assert b"more malformed notifications were not logged" in logged


@pytest.mark.parametrize("where", ["id first", "id last"])
def test_a_response_too_long_to_read_fails_its_request_and_is_never_answered(peers: list[Peer], where: str) -> None:
    # item 7: the agent asks us something; our answer is over its max_line_size
    peer = spawn(peers, "--max-line-size", "100000")
    peer.initialize()
    peer.send(request(1, "_ask_client", {}))
    question = peer.answer()
    assert question["method"] == "_question"
    pad = {"pad": "x" * 200_000}
    if where == "id first":
        peer.send(line({"jsonrpc": "2.0", "id": question["id"], "result": pad}))
    else:
        peer.send(line({"jsonrpc": "2.0", "result": pad, "id": question["id"]}))
    got = peer.answer()
    assert got["id"] == 1, f"the response was answered: {got}"
    assert got["result"] == {"outcome": "ResponseTooLarge", "method": "_question"}


def test_an_agent_streaming_faster_than_the_client_handles_does_not_grow_the_client() -> None:
    # item 4, the client's side: a 1 ms session_update handler, 200,000 chunks streamed at it
    script = Path(__file__).resolve().parent / "hostile" / "slow_client.py"
    out = subprocess.run(
        [sys.executable, str(script), str(count(200_000)), str(WRITE_FOR)], capture_output=True, text=True, timeout=120
    )
    assert (out.returncode, out.stderr) == (0, "")
    growth, handled = map(int, out.stdout.split())
    print(f"a client's 1 ms handler fed {count(200_000)} chunks: handled {handled}, growth {growth >> 20} MiB")
    assert handled > 0
    assert growth < GROWTH_BOUND
