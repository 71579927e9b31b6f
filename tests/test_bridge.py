"""The bridge between v1 and v2 (acp_types.bridge): each version's client in front of the other's agent.

The conformance kit in v2 mode passes the reference agent restricted to v1
behind the bridge, and in v1 mode the reference agent restricted to v2, on
every check a direct run passes; the official TypeScript SDK's v2 client
talks through it to the official Python SDK's v1 agent; the message ids it
makes for a v1 agent are the same after the bridge restarts; what it cannot
map is refused with its documented error; agreeing versions pass byte for
byte; docs/bridge.md is what the rules and schema/crossversion.json render.
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acp_types import bridge, conformance
from acp_types.bridge import _mode as bridge_mode
from acp_types.bridge._down import DownV1
from acp_types.bridge._messages import Lines
from acp_types.bridge._up import UpV2
from acp_types.conformance import _agent

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
REF = ROOT / "tests" / "conformance" / "ref_agent.py"
INTEROP = ROOT / "tests" / "interop"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "generated")}
# the kit's options of tests/test_conformance.py, but a turn without an idle state is judged ended after 3 s of
# silence rather than 1: on a loaded machine the chain of processes can stall that long (a guard, not a target)
FAST = _agent.Options(timeout=3, turn_timeout=5, quiet=3, long_prompt="Count: " + " ".join(map(str, range(1, 1501))))
TIMEOUT = 30  # a guard against a hang, not a speed target

# the reference agent serving one version only: its connection.serve called with versions=(VERSION,)
ONLY = textwrap.dedent(
    """
    import runpy, sys
    sys.path.insert(0, GENERATED)
    from acp_types import connection
    version = sys.argv.pop(1)
    serve = connection.serve
    connection.serve = lambda r, w, h, **k: serve(r, w, h, **{**k, "versions": (version,)})
    sys.argv[0] = sys.argv[1]
    del sys.argv[1]
    runpy.run_path(sys.argv[0], run_name="__main__")
    """
).replace("GENERATED", repr(str(ROOT / "generated")))
# the bridge as a command that needs no PYTHONPATH (the kit spawns it with this process's environment)
BRIDGE = [
    PY,
    "-c",
    f"import sys; sys.path.insert(0, {str(ROOT / 'generated')!r}); from acp_types.bridge import main; sys.exit(main())",
]


def ref_only(version: str) -> list[str]:
    return [PY, "-c", ONLY, version, str(REF)]


def bridged(agent: list[str]) -> list[str]:
    return [*BRIDGE, "--", *agent]


# -- docs/bridge.md -------------------------------------------------------------


def test_docs_bridge_md_is_what_the_rules_and_the_crossversion_map_render() -> None:
    rendered = bridge.render_table(ROOT / "schema" / "crossversion.json")
    committed = (ROOT / "docs" / "bridge.md").read_text(encoding="utf-8")
    assert committed == rendered, "docs/bridge.md is stale: python -m acp_types.bridge --table schema/crossversion.json"
    # every rule and every row of the map is in it
    assert rendered.count("\n| bridge |") == len(bridge.RULES)
    data = json.loads((ROOT / "schema" / "crossversion.json").read_text())
    assert rendered.count("\n| methods |") == len(data["methods"])
    assert rendered.count("\n| types |") == len(data["types"])


def test_message_ids_are_derived_from_the_session_role_and_position() -> None:
    a = bridge.message_id("s1", "user", 0)
    assert a == bridge.message_id("s1", "user", 0)  # no state, no randomness: a restart makes the same
    assert (
        len(
            {
                a,
                bridge.message_id("s1", "user", 1),
                bridge.message_id("s1", "agent", 0),
                bridge.message_id("s2", "user", 0),
            }
        )
        == 4
    )


# -- the conformance kit, both ways ---------------------------------------------


BAD = {"FAILURE", "WARNING", "ERROR", "SKIPPED"}


def _kit_both(
    version: str, direct: list[str], through: list[str], options: _agent.Options = FAST
) -> tuple[dict[str, str], dict[str, str]]:
    async def both() -> Any:
        checks = conformance.checks("agent")
        return await asyncio.gather(
            conformance.run("agent", direct, [version], checks, FAST),
            conformance.run("agent", through, [version], checks, options),
        )

    (d, _), (b, _) = asyncio.run(both())
    return {r.key: f"{r.verdict} {r.detail}" for r in d}, {r.key: f"{r.verdict} {r.detail}" for r in b}


@pytest.mark.slow
@pytest.mark.parametrize(("client", "agent"), [("v2", "v1"), ("v1", "v2")])
def test_the_kit_passes_the_reference_agent_of_the_other_version_behind_the_bridge(client: str, agent: str) -> None:
    direct, through = _kit_both(client, ref_only(client), bridged(ref_only(agent)))
    assert set(direct) == set(through)
    passed = {k for k, v in direct.items() if v.split()[0] not in BAD}
    assert len(passed) > 40
    worse = [f"{k}: {through[k]}" for k in sorted(passed) if through[k].split()[0] in BAD]
    assert not worse, "checks a direct run passes fail behind the bridge:\n" + "\n".join(worse)


# -- a v2 client on raw lines ---------------------------------------------------


class Peer:
    """A client on raw JSON lines: requests by id, every notification kept, the agent's requests answered."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[bytes] = []
        self.updates: list[dict[str, Any]] = []
        self.answers: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self.changed = asyncio.Event()
        self.on_request: Callable[[dict[str, Any]], dict[str, Any]] = lambda m: {"result": {}}
        self.asked: list[dict[str, Any]] = []
        self.next = 0
        self.reading = asyncio.ensure_future(self.read())

    @classmethod
    async def start(cls, command: list[str], **env: str) -> Peer:
        proc = await asyncio.create_subprocess_exec(
            *command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**ENV, **env}, limit=1 << 24
        )
        return cls(proc)

    async def read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            self.lines.append(line)
            msg = json.loads(line)
            if "method" in msg and "id" in msg:
                self.asked.append(msg)
                await self.send({"jsonrpc": "2.0", "id": msg["id"], **self.on_request(msg)})
            elif "method" in msg:
                self.updates.append(msg)
            elif msg.get("id") in self.answers:
                self.answers.pop(msg["id"]).set_result(msg)
            else:
                self.updates.append(msg)  # an answer to no request of ours: kept, for the tests to see
            self.changed.set()

    async def send(self, msg: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        await self.proc.stdin.drain()

    async def call(self, method: str, params: Any) -> dict[str, Any]:
        self.next += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.answers[self.next] = future
        await self.send({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
        return await asyncio.wait_for(future, TIMEOUT)

    async def result(self, method: str, params: Any) -> Any:
        answer = await self.call(method, params)
        assert "result" in answer, answer
        return answer["result"]

    async def until(self, found: Callable[[list[dict[str, Any]]], Any]) -> Any:
        async def wait() -> Any:
            while not (got := found(self.updates)):
                self.changed.clear()
                await self.changed.wait()
            return got

        return await asyncio.wait_for(wait(), TIMEOUT)

    async def idle(self, sid: str, start: int) -> list[dict[str, Any]]:
        def ended(updates: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
            mine = [u["params"]["update"] for u in updates[start:] if u.get("params", {}).get("sessionId") == sid]
            done = [u for u in mine if u.get("sessionUpdate") == "state_update" and u.get("state") == "idle"]
            return mine if done else None

        result: list[dict[str, Any]] = await self.until(ended)
        return result

    async def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = await asyncio.wait_for(self.proc.wait(), TIMEOUT)
        await self.reading
        return code


V2_INIT = {"protocolVersion": 2, "info": {"name": "test", "version": "1"}, "capabilities": {}}
V1_INIT = {"protocolVersion": 1, "clientCapabilities": {}}

# a v1 agent that keeps its sessions in a file, replays them through session/load (chunks without
# messageIds, a word at a time), has modes and an auth method, and asks for a file when told to
STORE_AGENT = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path
    from acp_types import connection

    STORE = Path(sys.argv[1])
    MODES = [{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]

    class Agent:
        def __init__(self, conn):
            self.conn = conn
            self.db = json.loads(STORE.read_text()) if STORE.exists() else {}

        def save(self):
            STORE.write_text(json.dumps(self.db))

        def modes(self, sid):
            return {"currentModeId": self.db[sid]["mode"], "availableModes": MODES}

        async def initialize(self, params):
            return {"protocolVersion": 1, "agentCapabilities": {"loadSession": True},
                    "authMethods": [{"id": "key", "name": "API key"}]}

        async def authenticate(self, params):
            self.db["authenticated"] = params.method_id
            self.save()
            return {}

        async def session_new(self, params):
            sid = f"s{len(self.db) + 1}"
            self.db[sid] = {"history": [], "mode": "ask"}
            self.save()
            return {"sessionId": sid, "modes": self.modes(sid)}

        async def say(self, sid, kind, text):
            for word in text.split():
                await self.conn.notify("session/update", {"sessionId": sid, "update": {
                    "sessionUpdate": kind, "content": {"type": "text", "text": word + " "}}})

        async def session_load(self, params):
            sid = params.session_id
            for role, text in self.db[sid]["history"]:
                await self.say(sid, role + "_message_chunk", text)
            return {"modes": self.modes(sid)}

        async def session_set_mode(self, params):
            self.db[params.session_id]["mode"] = params.mode_id
            self.save()
            return {}

        async def session_prompt(self, params):
            sid = params.session_id
            text = " ".join(b.get("text", "") for b in params.to_wire()["prompt"])
            reply = "echo " + text
            if text == "read a file":
                try:
                    await self.conn.request("fs/read_text_file", {"sessionId": sid, "path": "/etc/hostname"})
                    reply = "read it"
                except connection.RequestError as exc:
                    reply = f"refused {exc.code} {(exc.data or {}).get('bridge')}"
            self.db[sid]["history"] += [["user", text], ["agent", reply]]
            self.save()
            await self.say(sid, "agent_message_chunk", reply)
            return {"stopReason": "end_turn"}

        async def session_cancel(self, params):
            pass

    async def main():
        reader, writer = await connection.stdio_streams()
        await connection.serve(reader, writer, Agent, versions=("v1",))

    asyncio.run(main())
    """
)


def _turn_ids(updates: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(kind, messageId, text) of each message of a list of v2 updates, chunks folded into their message."""
    out: dict[str, list[str]] = {}
    for u in updates:
        kind = u.get("sessionUpdate", "")
        if kind in ("user_message", "agent_message"):
            out[u["messageId"]] = [kind, u["messageId"], "".join(b.get("text", "") for b in u["content"])]
        elif kind in ("user_message_chunk", "agent_message_chunk"):
            out[u["messageId"]][2] += u["content"].get("text", "")
    return [(k, i, t.strip()) for k, i, t in out.values()]


@pytest.mark.slow
def test_message_ids_stay_the_same_across_replays_and_restarts_of_the_bridge(tmp_path: Path) -> None:
    agent = bridged([PY, "-c", STORE_AGENT, str(tmp_path / "store.json")])

    async def first() -> tuple[str, list[tuple[str, str, str]]]:
        peer = await Peer.start(agent)
        init = await peer.result("initialize", V2_INIT)
        assert init["protocolVersion"] == 2 and init["authMethods"] == [
            {"methodId": "key", "name": "API key", "type": "agent"}
        ]
        await peer.result("auth/login", {"methodId": "key"})  # authenticate, for the v1 agent
        sid = (await peer.result("session/new", {"cwd": str(tmp_path)}))["sessionId"]
        live = []
        for text in ("one two", "three"):
            start = len(peer.updates)
            ack = await peer.result("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
            seen = await peer.idle(sid, start)
            assert [u.get("state") for u in seen if u["sessionUpdate"] == "state_update"] == ["running", "idle"]
            assert seen[-1]["stopReason"] == "end_turn"
            turn = _turn_ids(seen)
            assert turn[0] == ("user_message", ack["messageId"], text)
            live += turn
        # replay in the same bridge: from its record of the session
        start = len(peer.updates)
        await peer.result("session/resume", {"sessionId": sid, "cwd": str(tmp_path), "replayFrom": {"type": "start"}})
        replayed = _turn_ids([u["params"]["update"] for u in peer.updates[start:]])
        assert replayed == live
        # the agent's own replay (session/load) was neither sent nor counted: the next turn follows on
        start = len(peer.updates)
        ack = await peer.result("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "more"}]})
        turn = _turn_ids(await peer.idle(sid, start))
        assert turn[0][1] == ack["messageId"] and ack["messageId"] not in {i for _, i, _ in live}
        live += turn
        assert await peer.close() == 0
        return sid, live

    sid, live = asyncio.run(first())
    assert len({i for _, i, _ in live}) == 6
    assert json.loads((tmp_path / "store.json").read_text())["authenticated"] == "key"

    async def again() -> list[tuple[str, str, str]]:
        peer = await Peer.start(agent)  # a new bridge, a new agent process: the ids come from session/load
        await peer.result("initialize", V2_INIT)
        start = len(peer.updates)
        await peer.result("session/resume", {"sessionId": sid, "cwd": str(tmp_path), "replayFrom": {"type": "start"}})
        replayed = _turn_ids([u["params"]["update"] for u in peer.updates[start:]])
        # a turn after the restart gets the ids a later replay gives it
        start = len(peer.updates)
        ack = await peer.result("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "four"}]})
        turn = _turn_ids(await peer.idle(sid, start))
        assert turn[0][1] == ack["messageId"]
        await peer.close()
        return replayed + turn

    after = asyncio.run(again())
    assert after[:6] == live
    later = asyncio.run(again())
    assert later[:8] == after


@pytest.mark.slow
def test_modes_are_a_config_option_for_a_v2_client(tmp_path: Path) -> None:
    async def go() -> None:
        peer = await Peer.start(bridged([PY, "-c", STORE_AGENT, str(tmp_path / "store.json")]))
        await peer.result("initialize", V2_INIT)
        new = await peer.result("session/new", {"cwd": str(tmp_path)})
        assert "modes" not in new
        (mode,) = [o for o in new["configOptions"] if o.get("category") == "mode"]
        assert (mode["configId"], mode["currentValue"]) == ("mode", "ask")
        assert [o["value"] for o in mode["options"]] == ["ask", "code"]
        set_ = await peer.result(
            "session/set_config_option",
            {"sessionId": new["sessionId"], "configId": "mode", "type": "id", "value": "code"},
        )
        assert [o["currentValue"] for o in set_["configOptions"] if o["configId"] == "mode"] == ["code"]
        await peer.close()

    asyncio.run(go())
    store = json.loads((tmp_path / "store.json").read_text())
    assert store["s1"]["mode"] == "code"  # the v1 agent got session/set_mode


@pytest.mark.slow
def test_what_cannot_be_mapped_is_refused_with_the_documented_error(tmp_path: Path) -> None:
    async def go() -> None:
        peer = await Peer.start(bridged([PY, "-c", STORE_AGENT, str(tmp_path / "store.json")]))
        await peer.result("initialize", V2_INIT)
        sid = (await peer.result("session/new", {"cwd": str(tmp_path)}))["sessionId"]
        answer = await peer.call("tool_call/cancel", {"sessionId": sid, "toolCallId": "t"})
        assert answer["error"]["code"] == -32601 and answer["error"]["data"]["bridge"] == bridge.UNMAPPABLE
        answer = await peer.call(
            "session/resume", {"sessionId": sid, "cwd": str(tmp_path), "replayFrom": {"type": "_somewhere"}}
        )
        assert answer["error"]["code"] == -32602 and answer["error"]["data"] == {
            "bridge": "unmappable",
            "field": "replayFrom",
        }
        # a batch: v1 has none
        await peer.send([{"jsonrpc": "2.0", "id": 99, "method": "session/list", "params": {}}])
        refused = await peer.until(lambda us: [u for u in us if u.get("error", {}).get("code") == -32600])
        assert refused[0]["id"] is None and refused[0]["error"]["data"]["bridge"] == "unmappable"
        # the agent's fs request: refused to the agent, which says so in its reply
        start = len(peer.updates)
        await peer.result("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "read a file"}]})
        turn = _turn_ids(await peer.idle(sid, start))
        assert turn[1][2] == "refused -32601 unmappable"
        assert not peer.asked  # the client never saw it
        await peer.close()

    asyncio.run(go())

    async def down() -> None:  # a v1 client's SSE server has no v2 form
        peer = await Peer.start(bridged(ref_only("v2")))
        init = await peer.result("initialize", V1_INIT)
        assert init["protocolVersion"] == 1 and init["agentCapabilities"]["loadSession"] is True
        sse = {"type": "sse", "name": "s", "url": "http://127.0.0.1:1/", "headers": []}
        answer = await peer.call("session/new", {"cwd": str(tmp_path), "mcpServers": [sse]})
        assert answer["error"]["code"] == -32602 and answer["error"]["data"]["bridge"] == "unmappable"
        await peer.close()

    asyncio.run(down())


@pytest.mark.slow
def test_a_v1_client_gets_the_stop_reason_and_replay_through_session_load(tmp_path: Path) -> None:
    async def go() -> None:
        peer = await Peer.start(bridged(ref_only("v2")))
        await peer.result("initialize", V1_INIT)
        sid = (await peer.result("session/new", {"cwd": str(tmp_path)}))["sessionId"]
        start = len(peer.updates)
        answer = await peer.result("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "a b"}]})
        assert answer == {"stopReason": "end_turn"}
        kinds = [u["params"]["update"]["sessionUpdate"] for u in peer.updates[start:]]
        assert kinds == ["agent_message_chunk", "agent_message_chunk"]  # no user echo, no states
        start = len(peer.updates)
        await peer.result("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        replay = [u["params"]["update"] for u in peer.updates[start:]]
        assert [(u["sessionUpdate"], u["content"]["text"]) for u in replay] == [
            ("user_message_chunk", "a b"),
            ("agent_message_chunk", "a b"),
        ]
        await peer.close()

    asyncio.run(go())


# -- agreeing versions, the process ---------------------------------------------

# an agent that answers initialize with the version asked, then echoes every line it reads
# (as a notification holding the line's bytes in hex) in an odd but valid spelling
ECHO_RAW = textwrap.dedent(
    """
    import json, sys
    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except ValueError:
            msg = {}
        if msg.get("method") == "initialize":
            v = msg["params"]["protocolVersion"]
            out = '{ "id" : %s , "jsonrpc":"2.0","result":{"protocolVersion":%d, "agentCapabilities":{}, "info":{"name":"\\\\u00e9","version":"1"}} }' % (json.dumps(msg["id"]), v)
        else:
            out = '{"jsonrpc": "2.0",  "method":"_raw", "params": {"hex": "%s"}}' % line.hex()
        sys.stdout.buffer.write(out.encode() + b"\\n")
        sys.stdout.buffer.flush()
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("version", [1, 2])
def test_agreeing_versions_pass_byte_for_byte(version: int) -> None:
    sent = [
        b'{"jsonrpc":"2.0","id":"x","method":"session/new","params":{"cwd":"/","mcpServers":[]}, "z":1}\n',
        b'{"jsonrpc":"2.0",   "method":"_custom","params":{"\\u00e9":[1.50,2e3]}}\n',
        b"not json at all\n",
    ]

    async def go() -> list[bytes]:
        peer = await Peer.start(bridged([PY, "-c", ECHO_RAW]))
        init = {"protocolVersion": version, "clientCapabilities": {}} if version == 1 else V2_INIT
        await peer.call("initialize", init)
        first = peer.lines[0]
        assert first.startswith(b'{ "id" : 1 , "jsonrpc"')  # the answer itself unchanged
        assert peer.proc.stdin is not None
        for line in sent:
            peer.proc.stdin.write(line)
        await peer.until(lambda us: len(us) >= len(sent))
        await peer.close()
        return peer.lines[1:]

    echoed = asyncio.run(go())
    assert [bytes.fromhex(json.loads(line)["params"]["hex"]) for line in echoed] == sent
    assert all(line.startswith(b'{"jsonrpc": "2.0",  "method":"_raw"') for line in echoed)


# an agent that starts a child and then waits: the bridge must stop both
SLEEPER = textwrap.dedent(
    """
    import subprocess, sys
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print(child.pid, file=sys.stderr, flush=True)
    sys.stdin.buffer.read()
    import time; time.sleep(600)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "stdin closed"])
def test_the_agent_and_what_it_started_stop_with_the_bridge(how: str) -> None:
    proc = subprocess.Popen(
        [PY, "-m", "acp_types.bridge", "--", PY, "-c", SLEEPER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    assert proc.stdin is not None and proc.stderr is not None
    child = int(proc.stderr.readline())  # the agent is up and has started its child
    gone = os.pidfd_open(child)
    try:
        if how == "stdin closed":
            proc.stdin.close()
        else:
            proc.send_signal(getattr(signal, how))
        code = proc.wait(timeout=TIMEOUT)
        assert code == (0 if how == "stdin closed" else 128 + getattr(signal, how))
        readable, _, _ = select.select([gone], [], [], TIMEOUT)  # the child's pidfd: readable once it ended
        assert readable, "the agent's child outlived the bridge"
    finally:
        os.close(gone)
        proc.stderr.close()
        proc.stdout and proc.stdout.close()


@pytest.mark.slow
def test_bad_usage_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for args in ([], ["--max-line-size", "x", "--", "true"], ["--table"], ["--table", str(tmp_path / "nope.json")]):
        out = subprocess.run([PY, "-m", "acp_types.bridge", *args], capture_output=True, text=True, env=ENV)
        assert out.returncode == 2, args
        assert "Traceback" not in out.stderr
    out = subprocess.run(
        [PY, "-m", "acp_types.bridge", "--", str(tmp_path / "no-such-agent")],
        capture_output=True,
        text=True,
        env=ENV,
        input="",
    )
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "cannot start the agent" in out.stderr


# -- the official SDKs ----------------------------------------------------------


@pytest.fixture(scope="module")
def sdk_python() -> str:
    from _venvs import ensure_venv

    return ensure_venv(ROOT / ".venv-interop", PY, INTEROP / "requirements.txt", timeout=300)


@pytest.fixture(scope="module")
def node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        message = "node and npm are not on PATH: skipped the bridge's interop test with the TypeScript SDK"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + " (CI=true requires them)")
        pytest.skip(message)
    if not (INTEROP / "ts" / "node_modules" / "@agentclientprotocol" / "sdk").exists():
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--silent"], cwd=INTEROP / "ts", check=True, timeout=300
        )
    return node


@pytest.mark.slow
def test_the_typescript_sdk_v2_client_talks_to_the_python_sdk_v1_agent_through_the_bridge(
    node: str, sdk_python: str
) -> None:
    out = subprocess.run(
        [node, "bridge_v2.mjs", "hi there friend", "--", *bridged([sdk_python, str(INTEROP / "sdk_agent.py")])],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=INTEROP / "ts",
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "protocol 2, session offered, agent unnamed v1 agent (through acp-bridge)",
        "acknowledged; states running idle; stop end_turn",
        "text hi there friend",
        "acknowledged; one agent message a turn true; ids distinct true",
        "list refused -32601 unmappable",  # the SDK's agent cannot list: refused, not dropped
    ]


# -- the last member of a conductor's chain ------------------------------------


def _chain(agent: list[str]) -> list[str]:
    """conductor -- examples/proxy.py -- the bridge --agent 'AGENT' (the bridge is the chain's agent)."""
    conductor = [PY, "-c", BRIDGE[2].replace("acp_types.bridge", "acp_types.conductor")]
    return [*conductor, "--", PY, str(ROOT / "examples" / "proxy.py"), "--", *BRIDGE, "--agent", shlex.join(agent)]


@pytest.mark.slow
@pytest.mark.parametrize(("client", "agent"), [("v2", "v1"), ("v1", "v2")])
def test_the_kit_passes_a_proxy_and_the_bridge_under_the_conductor(client: str, agent: str) -> None:
    # five processes start per check: more time for an answer than FAST gives one process (a guard, not a target)
    slower = _agent.Options(timeout=10, turn_timeout=10, quiet=3, long_prompt=FAST.long_prompt)
    direct, through = _kit_both(client, ref_only(client), _chain(ref_only(agent)), slower)
    passed = {k for k, v in direct.items() if v.split()[0] not in BAD}
    worse = [f"{k}: {through[k]}" for k in sorted(passed) if through[k].split()[0] in BAD]
    assert not worse, "checks a direct run passes fail in the chain:\n" + "\n".join(worse)


@pytest.mark.slow
def test_the_proxys_context_reaches_a_v1_agent_through_the_bridge(tmp_path: Path) -> None:
    (tmp_path / "context").write_text("Context: the bridge test\n")

    async def go() -> list[tuple[str, str, str]]:
        chain = _chain([PY, "-c", STORE_AGENT, str(tmp_path / "store.json")])
        peer = await Peer.start(chain, PROXY_CONTEXT_FILE=str(tmp_path / "context"))
        init = await peer.result("initialize", V2_INIT)
        assert init["protocolVersion"] == 2
        sid = (await peer.result("session/new", {"cwd": str(tmp_path)}))["sessionId"]
        start = len(peer.updates)
        await peer.result("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})
        turn = _turn_ids(await peer.idle(sid, start))
        await peer.close()
        return turn

    turn = asyncio.run(go())
    assert turn[1][0] == "agent_message"
    assert turn[1][2] == "echo Context: the bridge test hi"


# -- in process: the translation rules and the bounds ---------------------------


class Wires:
    """The two ends of a translating mode, in process: what it wrote each way, decoded."""

    def __init__(self) -> None:
        self.client: list[dict[str, Any]] = []
        self.agent: list[dict[str, Any]] = []

    async def to_client(self, data: bytes) -> None:
        self.client += [json.loads(line) for line in data.splitlines()]

    async def to_agent(self, data: bytes) -> None:
        self.agent += [json.loads(line) for line in data.splitlines()]


def _line(msg: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **msg}).encode()


def _down(init: dict[str, Any]) -> tuple[Any, Wires]:
    wires = Wires()
    return DownV1(wires, init), wires  # type: ignore[arg-type]


def _up(init: dict[str, Any]) -> tuple[Any, Wires]:
    wires = Wires()
    return UpV2(wires, init), wires  # type: ignore[arg-type]


MODE = {
    "type": "select",
    "configId": "approval",
    "name": "Approval",
    "category": "mode",
    "currentValue": "ask",
    "options": [
        {"value": "ask", "name": "Ask"},
        {"groupId": "more", "name": "More", "options": [{"value": "auto", "name": "Auto"}]},
    ],
}


def test_a_v1_client_gets_modes_from_the_mode_config_option_and_sets_them_through_it() -> None:
    mode, wires = _down({"protocolVersion": 2, "capabilities": {"session": {}}})

    async def go() -> None:
        await mode.from_client(_line({"id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}))
        assert wires.agent[-1]["method"] == "session/new"
        commands = [{"name": "test", "description": "run", "input": {"type": "text", "hint": "what"}}]
        result = {"sessionId": "s", "configOptions": [MODE], "availableCommands": commands}
        await mode.from_agent(_line({"id": 1, "result": result}))
        answer, update = wires.client[-2:]
        assert answer["result"]["modes"] == {
            "currentModeId": "ask",
            "availableModes": [{"id": "ask", "name": "Ask"}, {"id": "auto", "name": "Auto"}],
        }
        assert answer["result"]["configOptions"][0]["id"] == "approval"
        assert answer["result"]["configOptions"][0]["options"][1]["group"] == "more"
        assert "availableCommands" not in answer["result"]
        assert update["params"]["update"] == {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [{"name": "test", "description": "run", "input": {"hint": "what"}}],
        }
        await mode.from_client(
            _line({"id": 2, "method": "session/set_mode", "params": {"sessionId": "s", "modeId": "auto"}})
        )
        assert wires.agent[-1]["method"] == "session/set_config_option"
        assert wires.agent[-1]["params"] == {"sessionId": "s", "configId": "approval", "type": "id", "value": "auto"}
        await mode.from_agent(_line({"id": 2, "result": {"configOptions": [{**MODE, "currentValue": "auto"}]}}))
        assert wires.client[-1] == {"jsonrpc": "2.0", "id": 2, "result": {}}
        # the agent changes it: config_option_update, and current_mode_update for the v1 client
        changed = {"sessionUpdate": "config_option_update", "configOptions": [MODE]}
        await mode.from_agent(_line({"method": "session/update", "params": {"sessionId": "s", "update": changed}}))
        assert [m["params"]["update"]["sessionUpdate"] for m in wires.client[-2:]] == [
            "config_option_update",
            "current_mode_update",
        ]
        assert wires.client[-1]["params"]["update"]["currentModeId"] == "ask"

    asyncio.run(go())


def test_a_v1_clients_prompt_is_answered_by_the_idle_state_and_tool_calls_are_created() -> None:
    mode, wires = _down({"protocolVersion": 2, "capabilities": {"session": {}}})

    def update(u: dict[str, Any]) -> bytes:
        return _line({"method": "session/update", "params": {"sessionId": "s", "update": u}})

    async def go() -> None:
        prompt = {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}
        await mode.from_client(_line({"id": 7, "method": "session/prompt", "params": prompt}))
        sent = wires.agent[-1]
        assert sent["method"] == "session/prompt" and sent["id"] != 7  # the bridge's own id: 7 is answered later
        await mode.from_agent(_line({"id": sent["id"], "result": {"messageId": "u1"}}))
        assert wires.client == []  # the acknowledgement is not the v1 answer
        await mode.from_agent(update({"sessionUpdate": "user_message", "messageId": "u1", "content": prompt["prompt"]}))
        await mode.from_agent(update({"sessionUpdate": "state_update", "state": "running"}))
        await mode.from_agent(update({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "pending"}))
        chunk = {"type": "content", "content": {"type": "text", "text": "out"}}
        await mode.from_agent(update({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t", "content": chunk}))
        await mode.from_agent(update({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t", "content": chunk}))
        await mode.from_agent(update({"sessionUpdate": "terminal_update", "terminalId": "x"}))
        await mode.from_agent(update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}))
        kinds = [m["params"]["update"] for m in wires.client[:-1]]
        assert kinds[0] == {"sessionUpdate": "tool_call", "toolCallId": "t", "status": "pending", "title": "t"}
        assert [len(k["content"]) for k in kinds[1:]] == [1, 2]  # the whole content so far, as v1 replaces it
        assert wires.client[-1] == {"jsonrpc": "2.0", "id": 7, "result": {"stopReason": "end_turn"}}

    asyncio.run(go())


def test_what_the_bridge_keeps_per_connection_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bridge_mode, "MAX_RECORD_BYTES", 10_000)
    monkeypatch.setattr(bridge_mode, "MAX_PENDING", 50)
    mode, wires = _up({"protocolVersion": 1, "agentCapabilities": {"sessionCapabilities": {"resume": {}}}})

    async def go() -> None:
        await mode.from_client(_line({"id": 1, "method": "session/new", "params": {"cwd": "/"}}))
        await mode.from_agent(_line({"id": 1, "result": {"sessionId": "s"}}))
        await mode.from_client(_line({"id": 2, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}}))
        chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x" * 100}}
        for _ in range(1000):  # 100 kB of reply: more than the record may hold
            await mode.from_agent(_line({"method": "session/update", "params": {"sessionId": "s", "update": chunk}}))
        assert mode.record_bytes <= 10_000
        # the record was dropped: a replay is refused, not made up
        params = {"sessionId": "s", "cwd": "/", "replayFrom": {"type": "start"}}
        await mode.from_client(_line({"id": 3, "method": "session/resume", "params": params}))
        assert wires.client[-1]["error"]["data"] == {"bridge": "unmappable", "field": "replayFrom"}
        # requests the agent does not answer: at most MAX_PENDING wait, the others are refused at once
        before = len(mode.to_agent_pending)
        for i in range(100):
            await mode.from_client(_line({"id": 100 + i, "method": "_slow", "params": {}}))
        refused = [m for m in wires.client if m.get("error", {}).get("code") == -32603]
        assert len(mode.to_agent_pending) == 50
        assert len(refused) == 100 - (50 - before)

    asyncio.run(go())


def test_an_overlong_line_is_reported_and_the_next_one_read() -> None:
    lines = Lines(10)
    assert lines.feed(b"short\n0123456789") == [b"short"]
    assert lines.feed(b"ABCDEF") == [None]  # over the limit: reported once, not kept
    assert lines.feed(b"still the long one\nnext\n") == [b"next"]
    assert lines.end() == []


def test_a_v2_clients_prompts_reach_a_v1_agent_one_at_a_time() -> None:
    mode, wires = _up({"protocolVersion": 1, "agentCapabilities": {}})

    def kinds() -> list[str]:
        return [
            m["params"]["update"]["sessionUpdate"] + ":" + str(m["params"]["update"].get("state", ""))
            for m in wires.client
            if m.get("method") == "session/update"
        ]

    async def go() -> None:
        await mode.from_client(_line({"id": 1, "method": "session/new", "params": {"cwd": "/"}}))
        await mode.from_agent(_line({"id": 1, "result": {"sessionId": "s"}}))
        for rid in (2, 3, 4):
            params = {"sessionId": "s", "prompt": [{"type": "text", "text": str(rid)}]}
            await mode.from_client(_line({"id": rid, "method": "session/prompt", "params": params}))
        acks = [m["result"]["messageId"] for m in wires.client if m.get("id") in (2, 3, 4)]
        assert acks == [bridge.message_id("s", "user", n) for n in range(3)]  # each accepted at once, in order
        prompts = [m for m in wires.agent if m.get("method") == "session/prompt"]
        assert len(prompts) == 1 and kinds() == ["user_message:", "state_update:running"]
        await mode.from_client(_line({"method": "session/cancel", "params": {"sessionId": "s"}}))
        await mode.from_agent(_line({"id": prompts[0]["id"], "result": {"stopReason": "cancelled"}}))
        # the turn ended; the two waiting were cancelled with it and never reach the agent
        assert len([m for m in wires.agent if m.get("method") == "session/prompt"]) == 1
        assert kinds()[2:] == ["state_update:idle"] + ["user_message:", "state_update:idle"] * 2
        ids = [m["params"]["update"]["messageId"] for m in wires.client if "user_message" in json.dumps(m)]
        assert ids == acks

    asyncio.run(go())


@pytest.mark.slow
def test_requests_sent_before_initialize_is_answered_go_out_in_the_settled_version(tmp_path: Path) -> None:
    async def go() -> dict[str, Any]:
        peer = await Peer.start(bridged([PY, "-c", STORE_AGENT, str(tmp_path / "store.json")]))
        init = asyncio.ensure_future(peer.call("initialize", V2_INIT))
        new = asyncio.ensure_future(peer.call("session/new", {"cwd": str(tmp_path)}))  # not waiting for the answer
        assert (await init)["result"]["protocolVersion"] == 2
        answer = await new
        await peer.close()
        return answer

    result = asyncio.run(go())["result"]
    assert "modes" not in result and [o["configId"] for o in result["configOptions"]] == ["mode"]


# an agent that answers initialize in the version given, starts a turn and dies in it
DYING = textwrap.dedent(
    """
    import json, os, sys
    v = int(sys.argv[1])
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        rid, method = msg.get("id"), msg.get("method")
        if method == "initialize":
            caps = {"capabilities": {"session": {}}, "info": {"name": "d", "version": "1"}} if v == 2 else {}
            result = {"protocolVersion": v, **caps}
        elif method == "session/new":
            result = {"sessionId": "s"}
        elif method == "session/prompt":
            if v == 2:
                print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "u"}}), flush=True)
            chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": {"type": "text", "text": "x"}}
            update = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": chunk}}
            print(json.dumps(update), flush=True)
            os._exit(3)
        print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}), flush=True)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("client", ["v2", "v1"])
def test_an_agent_dying_mid_turn_ends_the_turn_with_an_error(client: str) -> None:
    agent = "1" if client == "v2" else "2"

    async def go() -> tuple[dict[str, Any], list[dict[str, Any]], int]:
        peer = await Peer.start(bridged([PY, "-c", DYING, agent]))
        await peer.result("initialize", V2_INIT if client == "v2" else V1_INIT)
        await peer.result("session/new", {"cwd": "/", "mcpServers": []})
        answer = await peer.call("session/prompt", {"sessionId": "s", "prompt": [{"type": "text", "text": "x"}]})
        if client == "v2":
            await peer.idle("s", 0)
        code = await asyncio.wait_for(peer.proc.wait(), TIMEOUT)  # the bridge exits with the agent
        await peer.reading
        return answer, [u["params"]["update"] for u in peer.updates if "params" in u], code

    answer, updates, code = asyncio.run(go())
    assert code == 3
    if client == "v2":
        assert "messageId" in answer["result"]
        idle = updates[-1]
        assert idle["state"] == "idle" and "stopReason" not in idle
        assert idle["_meta"]["acpBridge"]["error"]["code"] == -32603
    else:
        assert answer["error"] == {"code": -32603, "message": "acp-bridge: the agent exited"}
        assert [u["sessionUpdate"] for u in updates] == ["agent_message_chunk"]


HOSTILE = [
    b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":[1,2]}',
    b'{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":{"a":1}}}',
    b'{"jsonrpc":"2.0","id":3,"method":"session/set_config_option","params":"x"}',
    b'{"jsonrpc":"2.0","id":4,"method":"session/resume","params":{"sessionId":5,"replayFrom":7}}',
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":"x"}}',
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"config_option_update","configOptions":{"a":1}}}}',
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message","content":"x"}}}',
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":["x"],"content":5}}}',
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"\\ud800"}}}}',
    b'{"jsonrpc":"2.0","id":9,"method":"session/request_permission","params":{"subject":[],"toolCall":3}}',
    b'{"jsonrpc":"2.0","id":10,"result":{"configOptions":{"x":1},"modes":[1]}}',
    b"[1,2,3]",
    b'{"jsonrpc":"2.0","id":11}',
    b"[" * 100_000,
    b'"just a string"',
]


@pytest.mark.parametrize("up", [True, False])
def test_hostile_shapes_never_stop_the_bridge_and_every_line_out_is_json(up: bool) -> None:
    init = {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}}
    mode, wires = _up(init) if up else _down({"protocolVersion": 2, "capabilities": {"session": {}}})
    raw: list[bytes] = []

    async def keep(data: bytes) -> None:
        raw.append(data)

    async def go() -> None:
        wires.to_client = keep  # type: ignore[method-assign]
        wires.to_agent = keep  # type: ignore[method-assign]
        for line in HOSTILE:
            await mode.from_client(line)
            await mode.from_agent(line)

    asyncio.run(go())
    for data in raw:
        for line in data.splitlines():
            if line not in HOSTILE:
                json.loads(line)  # what the bridge wrote itself is JSON


@pytest.mark.slow
def test_the_bridge_refuses_to_be_a_middle_member_of_a_chain() -> None:
    async def go() -> dict[str, Any]:
        peer = await Peer.start(bridged([PY, "-c", ECHO_RAW]))
        answer = await peer.call("proxy/initialize", V2_INIT)
        await peer.close()
        return answer

    error = asyncio.run(go())["error"]
    assert error["code"] == -32601 and error["data"] == {"bridge": "unmappable", "method": "proxy/initialize"}
    assert "--agent" in error["message"]
