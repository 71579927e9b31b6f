"""The conformance kit's reference agent: v1 and v2 over stdio, following every rule the kit checks.

    python tests/conformance/ref_agent.py [--mutant CHECK-ID] [--slow SECONDS] [--stuck]

``--mutant ID`` breaks the one rule that check ``ID`` tests (see MUTANTS), so
the kit's self-tests can show that the check catches it. ``--mutant ID/NAME``
is a near miss of that check (see NEAR_MISSES): a subtler way to break the same
rule, each one a misjudgement the kit once made.

Sessions outlive the process when ``$ACP_TYPES_STORE`` names a file (the tests
give each test one): the reference agent keeps its sessions (cwd, archive
state, history) in ``<that file>.ref.json``, rewritten whole after each change,
so the kit's checks across a restart (ARC-12, ARC-19, SET-13) can pass.
Without it, sessions live as long as the process.

``--slow S`` and ``--stuck`` make it behave like a real agent without a working
model (claude-agent-acp offline): each session/new takes S seconds, and a
prompt turn never ends on its own (no output; only a cancel, a close or an
archive ends it, ``cancelled``). Every verdict must still be right. Mutants that change
what goes on the wire after the handler answered are a patch on the writer;
the others are a branch in the handler, marked ``self.bug("ID")``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "generated"))

from acp_types import connection, v1

PAGE = 2  # a small page, so that paging is exercised
MUTANT = ""

# check id -> what its mutant breaks
MUTANTS = {
    "INI-03": "protocolVersion is a string",
    "INI-04": "no agentInfo",
    "INI-05": "answers the version asked for, even 99",
    "INI-11": "session/prompt answers -32601",
    "INI-10": "a resource_link block is refused",
    "SET-02": "every session has the same id",
    "PRM-03": "stopReason 'done'",
    "PRM-14": "a chunk after the prompt's answer",
    "PRM-10": "session/cancel is ignored",
    "PRM-12": "a chunk after the cancelled answer",
    "PRM-04": "every reply has messageId msg",
    "PL-05": "every reply has messageId msg",
    "PL-02": "the prompt answers with a stopReason",
    "PL-03": "no user_message",
    "PL-04": "no running state",
    "PL-07": "no idle state",
    "PL-10": "stop reason 'paused'",
    "PL-12": "session/cancel is ignored",
    "PL-14": "a chunk after the idle state",
    "CAN-01": "a request cancelled with $/cancel_request is never answered",
    "CAN-03": "session/new is answered twice",
    "EXT-03": "a custom request is never answered",
    "EXT-04": "an unknown method is answered -32603",
    "EXT-05": "a custom notification makes it exit",
    "RPC-01": "a line that is not JSON gets no answer",
    "RPC-02": "params that do not fit are answered with a result",
    "TRN-01": "a line of text on stdout",
    "SCH-01": "a session/update without its content",
    "EXT-01": "a custom field at the root of the initialize answer",
    "FS-01": "reads a file though fs is not advertised",
    "TERM-01": "starts a terminal though terminal is not advertised",
    "ARC-02": "advertises archive without implementing it",
    "ARC-01": "archive answers {archived: true}",
    "ARC-04": "archived: only lists every session",
    "ARC-05": "the default list includes archived sessions",
    "ARC-06": "listed sessions have no archived field",
    "ARC-09": "no session_info_update on archive",
    "ARC-11": "unarchive forgets the session",
    "ARC-13": "archiving does not cancel the turn",
    "ARC-15": "unarchive replays the history",
    "ARC-18": "archiving twice is an error",
    "ARC-20": "unknown sessions answer -32602",
    "SET-03": "availableCommands: null in session/new's answer",
    "SET-07": "no session/resume",
    "SET-09": "resume always replays",
    "SET-10": "replayFrom is ignored",
    "SET-12": "replayed user and agent messages share an id",
    "SET-13": "replayed user messages get new ids",
    "SET-15": "replayed agent messages are chunks",
    "SET-17": "the replay comes after the resume answer",
    "SET-18": "no session/close",
    "SET-20": "close does not cancel the turn",
    "LST-02": "session/list without params fails",
    "LST-04": "the cwd filter is ignored when the directory has sessions",
    "LST-10": "an unused cwd lists every session",
    "LST-06": "listed cwds are relative",
    "LST-07": "additionalDirectories listed without the capability",
    "LST-13": "an invalid cursor gives the first page",
    "LST-15": "the second page repeats a session",
    "LST-18": "session/list sends a session_info_update",
    "STATE-01": "a session_info_update carries the session's cwd",
    "ARC-24": "an archived filter it does not know is read as exclude",
    "ARC-12": "a restart forgets which sessions were archived",
    "ARC-19": "archive refuses (-32603) a session made before a restart",
}

# near misses: "ID/name" -> what it breaks; the check ID must catch each
NEAR_MISSES = {
    "INI-05/v2-as-v1": "a v2 initialize is answered with version 1, though 99 is answered with 2",
    "SET-02/pair": "two of three sessions get the same id",
    "LST-02/empty": "session/list without params lists nothing",
    "LST-04/prefix": "the cwd filter matches by prefix",
    "ARC-13/late": "archive answers at once, the turn streams on a little, then ends cancelled",
    "SET-20/late": "close answers at once, the turn streams on a little, then ends cancelled",
    "PL-02/late": "a v2 prompt is answered only once its turn has ended",
    "RPC-01/id": "the -32700 answer has an id (0), not null",
    "RPC-02/internal": "params that do not fit are answered -32603",
    "EXT-05/answered": "a custom notification is answered with -32601 (id null)",
    "EXT-05/answered-no-id": "a custom notification is answered with an error and no id",
    "SET-13/restart": "after a restart, replayed user messages get new ids",
}
LAST_ASKED: Any = None
SLOW = 0.0  # --slow: seconds each session/new takes
STUCK = False  # --stuck: prompt turns never end on their own
WRITER: Any = None  # the PatchWriter, for the mutants that write a line of their own


class Session:
    def __init__(self, sid: str, cwd: str) -> None:
        self.sid = sid
        self.cwd = cwd
        self.archived = False
        self.history: list[tuple[str, str, str]] = []  # (role, messageId, text)
        self.turn: asyncio.Task[Any] | None = None
        self.cancelled = False


def _state_file() -> Path | None:
    store = os.environ.get("ACP_TYPES_STORE")
    return Path(store + ".ref.json") if store else None


SESSIONS: dict[str, Session] = {}  # every connection of this process sees the same sessions
BEFORE: set[str] = set()  # the sessions read back at start: made before a restart
NEXT = [1]  # the next number for a session or a turn
# with a state file, several processes make sessions in it (restarts, and kit runs side by side): their ids
# carry the process's pid so they never collide
PREFIX = f"ref-{os.getpid()}-" if os.environ.get("ACP_TYPES_STORE") else "ref-"


def new_id() -> int:
    n = NEXT[0]
    NEXT[0] += 1
    return n


def load() -> None:
    """Read back the sessions of the processes before this one (see the module's docstring)."""
    path = _state_file()
    if path is None or not path.exists():
        return
    for item in json.loads(path.read_text("utf-8")):
        s = Session(item["sid"], item["cwd"])
        s.archived = item["archived"] and MUTANT != "ARC-12"
        s.history = [tuple(h) for h in item["history"]]
        if MUTANT == "SET-13/restart":
            s.history = [(r, f"{m}-restarted" if r == "user" else m, t) for r, m, t in s.history]
        SESSIONS[s.sid] = s
        BEFORE.add(s.sid)


def save(*changed: Session) -> None:
    """Write ``changed`` into the file, under a lock, keeping what other processes wrote there."""
    path = _state_file()
    if path is None:
        return
    import fcntl

    with open(str(path) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        items = {i["sid"]: i for i in json.loads(path.read_text("utf-8"))} if path.exists() else {}
        for s in changed:
            items[s.sid] = {"sid": s.sid, "cwd": s.cwd, "archived": s.archived, "history": s.history}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(list(items.values())), "utf-8")
        tmp.replace(path)


class RefAgent:
    def __init__(self, conn: connection.AgentConnection) -> None:
        self.conn = conn
        self.sessions = SESSIONS

    def bug(self, name: str) -> bool:
        return MUTANT == name

    @property
    def v2(self) -> bool:
        return self.conn.version == "v2"

    async def update(self, sid: str, update: dict[str, Any]) -> None:
        await self.conn.notify("session/update", {"sessionId": sid, "update": update})

    def known(self, sid: str) -> Session:
        if sid not in self.sessions:
            code = -32602 if self.bug("ARC-20") else v1.RESOURCE_NOT_FOUND
            raise connection.RequestError(code, f"no session {sid!r}")
        return self.sessions[sid]

    # -- initialize, sessions ------------------------------------------------

    async def initialize(self, params: Any) -> Any:
        global LAST_ASKED
        info = {"name": "acp-types-reference-agent", "version": "1.0"}
        asked = LAST_ASKED = params.protocol_version
        if self.v2:
            caps = {"session": {"archive": {}}}
            out: dict[str, Any] = {
                "protocolVersion": asked if self.bug("INI-05") else 2,
                "info": info,
                "capabilities": caps,
            }
        else:
            session_caps: dict[str, Any] = {"list": {}, "resume": {}, "close": {}, "archive": {}}
            out = {
                "protocolVersion": asked if self.bug("INI-05") else 1,
                "agentCapabilities": {"sessionCapabilities": session_caps},
            }
            if not self.bug("INI-04"):
                out["agentInfo"] = info
        return out

    async def session_new(self, params: Any) -> Any:
        if SLOW:
            await asyncio.sleep(SLOW)
        n = new_id()
        sid = "s" if self.bug("SET-02") else f"{PREFIX}{n}"
        if self.bug("SET-02/pair") and len(self.sessions) % 3 == 1:
            sid = f"{PREFIX}{n - 1}"  # the second of each three repeats the first's id
        self.sessions[sid] = Session(sid, params.cwd)
        save(self.sessions[sid])
        return {"sessionId": sid}

    async def session_list(self, params: Any) -> Any:
        p = params.to_wire()
        if self.bug("LST-02") and not p:
            raise connection.RequestError(-32603, "no params")
        if self.bug("LST-02/empty") and not p:
            return {"sessions": []}
        want = p.get("archived") or "exclude"
        if want not in ("exclude", "include", "only"):  # the filter is open: a value it does not know
            if not self.bug("ARC-24"):
                raise connection.RequestError(v1.INVALID_PARAMS, f"archived filter {want!r} is not supported")
            want = "exclude"
        chosen = [
            s
            for s in self.sessions.values()
            if self.bug("ARC-04")
            and want == "only"
            or want == "include"
            or s.archived == (want == "only")
            or self.bug("ARC-05")
            and "archived" not in p
        ]
        if p.get("cwd") is not None:
            matching = [
                s for s in chosen if s.cwd == p["cwd"] or self.bug("LST-04/prefix") and s.cwd.startswith(p["cwd"])
            ]
            if not (self.bug("LST-04") and matching) and not (self.bug("LST-10") and not matching):
                chosen = matching
        start = 0
        if p.get("cursor") is not None:
            try:
                start = int(str(p["cursor"]).removeprefix("page:"))
                assert str(p["cursor"]).startswith("page:") and 0 <= start <= len(chosen)
            except (ValueError, AssertionError):
                if not self.bug("LST-13"):
                    raise connection.RequestError(v1.INVALID_PARAMS, "not a cursor of this agent") from None
                start = 0
        page = chosen[start : start + PAGE]
        out: dict[str, Any] = {"sessions": [self.info(s) for s in page]}
        if start + PAGE < len(chosen):
            out["nextCursor"] = f"page:{start + PAGE - (1 if self.bug('LST-15') else 0)}"
        if self.bug("LST-18") and page:
            await self.update(page[0].sid, {"sessionUpdate": "session_info_update", "title": "listed"})
        return out

    def info(self, s: Session) -> dict[str, Any]:
        cwd = os.path.relpath(s.cwd) if self.bug("LST-06") else s.cwd
        out: dict[str, Any] = {"sessionId": s.sid, "cwd": cwd}
        if not self.bug("ARC-06"):
            out["archived"] = s.archived
        if self.bug("LST-07"):
            out["additionalDirectories"] = []
        return out

    async def session_archive(self, params: Any) -> Any:
        if self.bug("ARC-02"):
            raise connection.MethodNotImplemented("session/archive")
        s = self.known(params.session_id)
        if self.bug("ARC-19") and s.sid in BEFORE:
            raise connection.RequestError(-32603, "the session is not open in this process")
        if s.archived and self.bug("ARC-18"):
            raise connection.RequestError(-32602, "already archived")
        if not s.archived and not self.bug("ARC-09"):
            info: dict[str, Any] = {"sessionUpdate": "session_info_update", "archived": True}
            if self.bug("STATE-01"):
                info["cwd"] = s.cwd
            await self.update(s.sid, info)
        s.archived = True
        save(s)
        if self.bug("ARC-13/late"):
            self.stop_later(s)
        elif not self.bug("ARC-13"):
            await self.stop_turn(s)
        return {"archived": True} if self.bug("ARC-01") else {}

    async def session_unarchive(self, params: Any) -> Any:
        if self.bug("ARC-02"):
            raise connection.MethodNotImplemented("session/unarchive")
        s = self.known(params.session_id)
        s.archived = False
        save(s)
        if self.bug("ARC-15"):
            await self.replay(s)
        if self.bug("ARC-11"):
            del self.sessions[s.sid]
        return {}

    async def session_resume(self, params: Any) -> Any:
        if self.bug("SET-07") and self.v2:
            raise connection.MethodNotImplemented("session/resume")
        s = self.known(params.session_id)
        replay = self.v2 and getattr(params, "replay_from", None) is not None and not self.bug("SET-10")
        if replay or self.bug("SET-09"):
            if self.bug("SET-17"):
                asyncio.get_running_loop().call_later(0.02, lambda: asyncio.ensure_future(self.replay(s)))
            else:
                await self.replay(s)
        return {}

    async def replay(self, s: Session) -> None:
        for role, mid, text in list(s.history):
            if self.bug("SET-13") and role == "user":
                mid = f"{mid}-again"
            if self.bug("SET-12"):
                mid = "same"
            content = [{"type": "text", "text": text}]
            if not self.v2:
                kind = "user_message_chunk" if role == "user" else "agent_message_chunk"
                await self.update(s.sid, {"sessionUpdate": kind, "messageId": mid, "content": content[0]})
            elif role == "agent" and self.bug("SET-15"):
                await self.update(
                    s.sid, {"sessionUpdate": "agent_message_chunk", "messageId": mid, "content": content[0]}
                )
            else:
                await self.update(s.sid, {"sessionUpdate": f"{role}_message", "messageId": mid, "content": content})

    async def session_close(self, params: Any) -> Any:
        if self.bug("SET-18") and self.v2:
            raise connection.MethodNotImplemented("session/close")
        s = self.known(params.session_id)
        if self.bug("SET-20/late"):
            self.stop_later(s)
        elif not self.bug("SET-20"):
            await self.stop_turn(s)
        return {}

    # -- the prompt turn -----------------------------------------------------

    async def session_prompt(self, params: Any) -> Any:
        s = self.known(params.session_id)
        blocks = params.to_wire()["prompt"]
        if self.bug("INI-11"):
            raise connection.MethodNotImplemented("session/prompt")
        if self.bug("INI-10") and any(b.get("type") == "resource_link" for b in blocks):
            raise connection.RequestError(-32602, "resource_link is not supported")
        text = " ".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        s.cancelled = False
        n = new_id()
        if self.v2:  # answer at once; the turn goes on and ends with an idle state
            s.turn = asyncio.ensure_future(self.run_turn(s, text, n))
            if self.bug("PL-02/late"):
                await asyncio.shield(s.turn)
            answer = {"messageId": f"u{n}"}  # the id of the user message the turn inserts
            return {**answer, "stopReason": "end_turn"} if self.bug("PL-02") else answer
        s.turn = asyncio.ensure_future(self.run_turn(s, text, n))
        try:
            stop = await asyncio.shield(s.turn)
        except asyncio.CancelledError:  # $/cancel_request: the turn stops too
            await self.stop_turn(s)
            raise
        if self.bug("PRM-14") and stop == "end_turn" or self.bug("PRM-12") and stop == "cancelled":
            asyncio.get_running_loop().call_later(0.01, lambda: asyncio.ensure_future(self.chunk(s, "late", f"a{n}")))
        return {"stopReason": "done" if self.bug("PRM-03") else stop}

    async def chunk(self, s: Session, text: str, mid: str) -> None:
        update: dict[str, Any] = {
            "sessionUpdate": "agent_message_chunk",
            "messageId": mid,
            "content": {"type": "text", "text": text},
        }
        await self.update(s.sid, update)

    async def run_turn(self, s: Session, text: str, n: int) -> str:
        user_id, agent_id = f"u{n}", "msg" if self.bug("PRM-04") or self.bug("PL-05") else f"a{n}"
        s.history.append(("user", user_id, text))
        if self.bug("FS-01"):
            await self.try_request("fs/read_text_file", {"sessionId": s.sid, "path": os.path.join(s.cwd, "x.txt")})
        if self.bug("TERM-01"):
            await self.try_request("terminal/create", {"sessionId": s.sid, "command": "true"})
        if self.v2:
            if not self.bug("PL-03"):
                await self.update(
                    s.sid,
                    {
                        "sessionUpdate": "user_message",
                        "messageId": user_id,
                        "content": [{"type": "text", "text": text}],
                    },
                )
            if not self.bug("PL-04"):
                await self.update(s.sid, {"sessionUpdate": "state_update", "state": "running"})
        said: list[str] = []
        stop = "end_turn"
        while STUCK and not s.cancelled:  # waiting for a model that never answers
            await asyncio.sleep(0.01)
        if STUCK:
            stop = "cancelled"
        for word in [] if STUCK else text.split():
            if s.cancelled:
                stop = "cancelled"
                break
            said.append(word)
            await self.chunk(s, word + " ", agent_id)
            await asyncio.sleep(0.001)
        s.history.append(("agent", agent_id, " ".join(said)))
        save(s)
        if self.v2 and not self.bug("PL-07"):
            await self.update(
                s.sid,
                {
                    "sessionUpdate": "state_update",
                    "state": "idle",
                    "stopReason": "paused" if self.bug("PL-10") and stop == "end_turn" else stop,
                },
            )
            if self.bug("PL-14") and stop == "cancelled":
                await self.chunk(s, "late", agent_id)
        return stop

    async def try_request(self, method: str, params: dict[str, Any]) -> None:
        try:
            await self.conn.request(method, params)
        except Exception:
            pass

    async def stop_turn(self, s: Session) -> None:
        s.cancelled = True
        if s.turn is not None and not s.turn.done():
            await asyncio.shield(s.turn)

    def stop_later(self, s: Session) -> None:
        """A near miss: the turn is told to stop only after the answer has gone out."""
        asyncio.get_running_loop().call_later(0.05, lambda: setattr(s, "cancelled", True))

    async def session_cancel(self, params: Any) -> None:
        if self.bug("PRM-10") or self.bug("PL-12"):  # archive and close still cancel
            return
        if params.session_id in self.sessions:
            self.sessions[params.session_id].cancelled = True

    # -- extensions ----------------------------------------------------------

    async def ext_method(self, method: str, params: Any) -> Any:
        if self.bug("EXT-03"):
            await asyncio.Event().wait()
        if method == "_acp_conformance/wait":  # a request that takes a while, for $/cancel_request
            await asyncio.sleep(float(params.get("seconds", 1)))
        return {"pong": params}

    async def ext_notification(self, method: str, params: Any) -> None:
        if self.bug("EXT-05"):
            os._exit(3)
        error = {"code": -32601, "message": f"no method {method}"}
        if self.bug("EXT-05/answered"):
            WRITER.inner.write(json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode() + b"\n")
        if self.bug("EXT-05/answered-no-id"):
            WRITER.inner.write(json.dumps({"jsonrpc": "2.0", "error": error}).encode() + b"\n")


class PatchWriter:
    """The mutants that change lines after the handler answered (the layer would not send them otherwise)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.updates = 0

    def write(self, data: bytes) -> None:
        out = []
        for line in data.split(b"\n"):
            if line:
                out += self.patch(json.loads(line))
        if out:
            self.inner.write(b"".join(json.dumps(m).encode() + b"\n" for m in out))

    def patch(self, m: dict[str, Any]) -> list[dict[str, Any]]:
        result, error = m.get("result"), m.get("error") or {}
        if isinstance(result, dict) and "protocolVersion" in result:
            if MUTANT == "INI-03":
                result["protocolVersion"] = str(result["protocolVersion"])
            if MUTANT == "EXT-01":
                result["vendorFlag"] = True
        if MUTANT == "CAN-01" and error.get("code") == -32800:
            return []
        if MUTANT == "CAN-03" and isinstance(result, dict) and set(result) == {"sessionId"}:
            return [m, m]
        if MUTANT == "SET-03" and isinstance(result, dict) and set(result) == {"sessionId"}:
            result["availableCommands"] = None
        if MUTANT == "EXT-04" and error.get("code") == -32601:
            error["code"] = -32603
        if MUTANT == "RPC-01" and error.get("code") == -32700:
            return []
        if MUTANT == "RPC-01/id" and error.get("code") == -32700:
            m["id"] = 0
        if MUTANT == "RPC-02/internal" and error.get("code") == -32602 and "cwd" in str(error.get("message")):
            error["code"] = -32603
        if MUTANT == "INI-05/v2-as-v1" and isinstance(result, dict) and result.get("protocolVersion") == 2:
            if LAST_ASKED == 2:  # answered as a v1 agent would, though it speaks v2
                info = {"name": "acp-types-reference-agent", "version": "1.0"}
                m["result"] = {"protocolVersion": 1, "agentCapabilities": {}, "agentInfo": info}
        if MUTANT == "RPC-02" and error.get("code") == -32602 and "cwd" in str(error.get("message")):
            return [{"jsonrpc": "2.0", "id": m.get("id"), "result": {"sessionId": "x"}}]
        if (
            MUTANT == "SCH-01"
            and m.get("method") == "session/update"
            and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        ):
            self.updates += 1
            if self.updates == 1:
                m["params"]["update"].pop("content", None)
        return [m]

    async def drain(self) -> None:
        await self.inner.drain()

    def close(self) -> None:
        self.inner.close()


async def main() -> None:
    reader, writer = await connection.stdio_streams()
    if MUTANT == "TRN-01":
        writer.write(b"reference agent starting\n")
    global WRITER
    WRITER = PatchWriter(writer)
    await connection.serve(reader, WRITER, RefAgent, versions=("v1", "v2"))


if __name__ == "__main__":
    if "--mutant" in sys.argv:
        MUTANT = sys.argv[sys.argv.index("--mutant") + 1]
        if MUTANT not in MUTANTS and MUTANT not in NEAR_MISSES:
            sys.exit(f"no mutant {MUTANT!r}")
    if "--slow" in sys.argv:
        SLOW = float(sys.argv[sys.argv.index("--slow") + 1])
    STUCK = "--stuck" in sys.argv
    load()
    asyncio.run(main())
