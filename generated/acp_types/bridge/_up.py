"""A v2 client in front of a v1 agent: the v2 conversation made from the v1 one.

Hand-written: the source is runtime/bridge/_up.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

from ._messages import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Json,
    error,
    obj,
    on,
    unmappable,
)
from ._mode import Mode
from ._session import Session
from ._shapes import (
    MODE_OPTION,
    auth_up,
    caps_up,
    commands_up,
    content_up,
    mode_option,
    option_up,
    servers_down,
)

MAX_QUEUED_PROMPTS = 16
"""Prompts a v2 client may have accepted and waiting per session behind a v1 agent (which takes one at a time)."""


class UpV2(Mode):
    """The v2 conversation made from a v1 agent's."""

    RENAMES = {"auth/login": "authenticate", "auth/logout": "logout"}

    def caps(self) -> tuple[Json, Json]:
        ac = obj(self.agent_init.get("agentCapabilities"))
        return ac, obj(ac.get("sessionCapabilities"))

    def init_result(self, result: Json) -> Json:
        out: Json = {
            "protocolVersion": 2,
            "info": result.get("agentInfo") or {"name": "unnamed v1 agent (through acp-bridge)", "version": "0"},
            "capabilities": caps_up(result),
        }
        if result.get("authMethods"):
            out["authMethods"] = [auth_up(m) for m in result["authMethods"]]
        if "_meta" in result:
            out["_meta"] = result["_meta"]
        return out

    def setup_result(self, s: Session | None, result: Any) -> Any:
        """A v1 answer of session/new, load, resume or fork as v2's."""
        if not isinstance(result, dict):
            return result
        out = {k: v for k, v in result.items() if k not in ("modes", "configOptions")}
        options = [option_up(o) for o in result.get("configOptions") or []]
        modes = result.get("modes")
        if s is not None:
            s.modes = modes if isinstance(modes, dict) else None
            s.options = options
        if isinstance(modes, dict) and not any(obj(o).get("category") == "mode" for o in options):
            options = [*options, mode_option(modes)]
        if options:
            out["configOptions"] = options
        return out

    def options_of(self, s: Session) -> list[Json]:
        if s.modes is not None and not any(obj(o).get("category") == "mode" for o in s.options):
            return [*s.options, mode_option(s.modes)]
        return list(s.options)

    async def client_request(self, msg: Json, method: str, params: Any) -> None:
        rid = msg.get("id")
        p = obj(params)
        ac, sc = self.caps()
        if method in self.RENAMES:
            await self.forward_request(msg, self.RENAMES[method], params)
        elif method in ("terminal/cancel", "tool_call/cancel"):
            await self.client(unmappable(rid, METHOD_NOT_FOUND, f"{method} has no v1 equivalent", method=method))
        elif method == "session/new" or method == "session/fork":
            servers, err = servers_down(p.get("mcpServers"), rid)
            sent = {**p, "mcpServers": servers if servers is not None else []} if method == "session/new" else p

            async def created(answer: Json) -> None:
                result = answer.get("result")
                if isinstance(result, dict):
                    # a fork starts with its parent's history, which the bridge did not count in it
                    s = self.session(result.get("sessionId"), known_start=method == "session/new")
                    answer = {**answer, "result": self.setup_result(s, result)}
                await self.client(answer)

            await self.forward_request(msg, method, sent, created)
        elif method == "session/resume":
            await self.resume(msg, p)
        elif method == "session/list" and not on(sc.get("list")):
            await self.client(unmappable(rid, METHOD_NOT_FOUND, "the v1 agent cannot list sessions", method=method))
        elif method == "session/close" and not on(sc.get("close")):
            await self.agent(
                {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": p.get("sessionId")}}
            )
            await self.client({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "session/set_config_option":
            await self.set_option(msg, p)
        elif method == "session/prompt":
            await self.prompt(msg, p)
        else:
            await self.forward_request(msg, method, params)

    async def set_option(self, msg: Json, p: Json) -> None:
        s = self.session(p.get("sessionId"), create=False)
        if s is not None and s.modes is not None and p.get("configId") == MODE_OPTION:
            value = p.get("value")

            async def moded(answer: Json) -> None:
                if "result" in answer and s.modes is not None:
                    s.modes = {**s.modes, "currentModeId": value}
                    answer = {**answer, "result": {"configOptions": self.options_of(s)}}
                await self.client(answer)

            await self.forward_request(msg, "session/set_mode", {"sessionId": s.sid, "modeId": value}, moded)
            return
        sent = {k: v for k, v in p.items() if not (k == "type" and v == "id")}  # v1's value id has no type

        async def set_(answer: Json) -> None:
            result = answer.get("result")
            if isinstance(result, dict) and s is not None:
                s.options = [option_up(o) for o in result.get("configOptions") or []]
                answer = {**answer, "result": {**result, "configOptions": self.options_of(s)}}
            elif isinstance(result, dict):
                answer = {
                    **answer,
                    "result": {**result, "configOptions": [option_up(o) for o in result.get("configOptions") or []]},
                }
            await self.client(answer)

        await self.forward_request(msg, "session/set_config_option", sent, set_)

    async def resume(self, msg: Json, p: Json) -> None:
        rid = msg.get("id")
        ac, sc = self.caps()
        sid = p.get("sessionId")
        replay = p.get("replayFrom")
        if replay is not None and obj(replay).get("type") != "start":
            await self.client(unmappable(rid, INVALID_PARAMS, "v1 replays only from the start", field="replayFrom"))
            return
        servers, _ = servers_down(p.get("mcpServers"), rid)
        base = {k: v for k, v in p.items() if k not in ("replayFrom", "mcpServers")}
        base["mcpServers"] = servers if servers is not None else []
        s = self.session(sid, create=False)
        can_load = ac.get("loadSession") is True
        if s is not None and s.record is not None and replay is not None:
            record = [list(r) for r in s.record]
            kept = s

            async def resumed(answer: Json) -> None:
                kept.ignored = max(0, kept.ignored - 1)
                if "result" in answer:
                    for role, mid, blocks in record:
                        kind = {"user": "user_message", "agent": "agent_message", "thought": "agent_thought"}[role]
                        await self.update(kept.sid, {"sessionUpdate": kind, "messageId": mid, "content": blocks})
                    answer = {**answer, "result": self.setup_result(kept, answer["result"])}
                await self.client(answer)

            if on(sc.get("resume")):
                await self.forward_request(msg, "session/resume", base, resumed)
            else:
                s.ignored += 1
                await self.forward_request(msg, "session/load", base, resumed)
            return
        if s is not None and not s.epoch and replay is None and on(sc.get("resume")):
            kept = s  # followed from its start: its counts hold, nothing to load

            async def plain_resume(answer: Json) -> None:
                if "result" in answer:
                    answer = {**answer, "result": self.setup_result(kept, answer["result"])}
                await self.client(answer)

            await self.forward_request(msg, "session/resume", base, plain_resume)
            return
        if can_load:
            fresh = Session(str(sid), known_start=True)
            if s is not None:  # keep what the bridge knows beyond the counts
                fresh.modes, fresh.options = s.modes, s.options
            if isinstance(sid, str):
                self.sessions[sid] = fresh
                if s is not None:
                    self.record_bytes -= s.record_bytes
            fresh.replaying = True
            if replay is None:
                fresh.silent += 1

            async def loaded(answer: Json) -> None:
                fresh.replaying = False
                fresh.silent = 0
                if "result" in answer:
                    answer = {**answer, "result": self.setup_result(fresh, answer["result"])}
                await self.client(answer)

            await self.forward_request(msg, "session/load", base, loaded)
            return
        if replay is not None:
            await self.client(
                unmappable(
                    rid,
                    INVALID_PARAMS,
                    "cannot replay: the v1 agent has no session/load and this bridge did not follow the session",
                    field="replayFrom",
                )
            )
            return
        if not on(sc.get("resume")):
            await self.client(unmappable(rid, METHOD_NOT_FOUND, "the v1 agent can neither resume nor load"))
            return
        s = self.session(sid)

        async def plain(answer: Json) -> None:
            if "result" in answer:
                answer = {**answer, "result": self.setup_result(s, answer["result"])}
            await self.client(answer)

        await self.forward_request(msg, "session/resume", base, plain)

    async def prompt(self, msg: Json, p: Json) -> None:
        rid = msg.get("id")
        s = self.session(p.get("sessionId"))
        if s is None:
            await self.forward_request(msg, "session/prompt", p)
            return
        if len(s.waiting) >= MAX_QUEUED_PROMPTS:
            await self.client(
                error(rid, INVALID_REQUEST, f"acp-bridge: {len(s.waiting)} prompts wait on this session already")
            )
            return
        user = s.new_id("user")  # numbered when accepted, so in the order of the session's history
        await self.client({"jsonrpc": "2.0", "id": rid, "result": {"messageId": user}})
        s.waiting.append([user, p, False])
        await self.start_next(s)

    async def start_next(self, s: Session) -> None:
        """Start the session's next accepted prompt, unless one is running (a v1 agent takes one at a time)."""
        while not s.running and s.waiting:
            user, p, cancelled = s.waiting.popleft()
            blocks: list[Any] = p["prompt"] if isinstance(p.get("prompt"), list) else []
            s.begin_user(mid=user)
            if s.record is not None:
                for i, block in enumerate(blocks or [{"type": "text", "text": ""}]):
                    self.record(s, "user", user, block, i == 0)
            await self.update(s.sid, {"sessionUpdate": "user_message", "messageId": user, "content": blocks})
            if cancelled:  # cancelled while it waited: it never reaches the agent
                await self.update(s.sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"})
                continue
            if self.gone:
                exited = {"code": INTERNAL_ERROR, "message": "acp-bridge: the agent exited"}
                idle = {"sessionUpdate": "state_update", "state": "idle", "_meta": {"acpBridge": {"error": exited}}}
                await self.update(s.sid, idle)
                continue
            await self.update(s.sid, {"sessionUpdate": "state_update", "state": "running"})
            s.running = True
            await self.request_agent("session/prompt", p, self.ended(s))

    def ended(self, s: Session) -> Callable[[Json], Awaitable[None]]:
        async def ended(answer: Json) -> None:
            idle: Json = {"sessionUpdate": "state_update", "state": "idle"}
            result = answer.get("result")
            if isinstance(result, dict):
                if result.get("stopReason") is not None:
                    idle["stopReason"] = result["stopReason"]
                if result.get("usage") is not None:
                    idle["usage"] = result["usage"]
            else:
                idle["_meta"] = {"acpBridge": {"error": answer.get("error")}}
                print(f"acp-bridge: the v1 agent refused a prompt: {answer.get('error')}", file=sys.stderr)
            await self.update(s.sid, idle)
            s.running = False
            await self.start_next(s)

        return ended

    async def client_notification(self, msg: Json, method: str, params: Any) -> None:
        if method == "$/cancel_request":
            if obj(params).get("requestId") not in self.to_agent_pending:
                return  # answered already (a v2 prompt's acknowledgement): nothing to cancel
        if method == "session/cancel":
            s = self.session(obj(params).get("sessionId"), create=False)
            for waiting in s.waiting if s is not None else ():
                waiting[2] = True
        await self.agent(msg)

    async def agent_request(self, msg: Json, method: str, params: Any) -> None:
        rid = msg.get("id")
        if method.startswith(("fs/", "terminal/")):
            print(f"acp-bridge: refused the v1 agent's {method}: a v2 client has none", file=sys.stderr)
            await self.agent(
                unmappable(rid, METHOD_NOT_FOUND, f"{method}: the v2 client has no such method", method=method)
            )
            return
        if method == "session/request_permission":
            p = obj(params)
            tool = obj(p.get("toolCall"))
            if "content" in tool:
                tool = {**tool, "content": content_up(tool["content"])}
            sent: Json = {
                "sessionId": p.get("sessionId"),
                "title": tool.get("title") or "Permission requested",
                "subject": {"type": "tool_call", "toolCall": tool},
                "options": p.get("options"),
            }
            if "_meta" in p:
                sent["_meta"] = p["_meta"]
            msg = {**msg, "params": sent}
        await super().agent_request(msg, method, params)

    async def agent_notification(self, msg: Json, method: str, params: Any) -> None:
        known = await self.session_update(msg, method, params)
        if known is None:
            return
        s, p = known
        if s.ignored:
            return  # a session/load's replay of what the bridge replays from its record
        for update in self.translate(s, p["update"]):
            if not s.silent:
                await self.client({**msg, "params": {**p, "update": update}})

    def translate(self, s: Session, u: Json) -> list[Json]:
        kind = u.get("sessionUpdate")
        roles = {"user_message_chunk": "user", "agent_message_chunk": "agent", "agent_thought_chunk": "thought"}
        if kind in roles:
            role = roles[kind]
            if (
                role == "user"
                and not (s.replaying or s.silent)
                and s.current["user"] is not None
                and s.last_role == "user"
            ):
                mid, first = s.current["user"][1], False  # the agent echoing the live prompt
            else:
                mid, first = s.message(role, u.get("messageId"))
            block = u.get("content")
            self.record(s, role, mid, block, first)
            rest = {k: v for k, v in u.items() if k not in ("sessionUpdate", "messageId", "content")}
            if first:
                whole = {"user": "user_message", "agent": "agent_message", "thought": "agent_thought"}[role]
                return [{"sessionUpdate": whole, "messageId": mid, "content": [block], **rest}]
            return [{**u, "messageId": mid}]
        if kind in ("tool_call", "tool_call_update"):
            out = {**u, "sessionUpdate": "tool_call_update"}
            if "content" in out:
                out["content"] = content_up(out["content"])
            return [out]
        if kind == "plan":
            plan = {"type": "items", "planId": "plan", "entries": u.get("entries", [])}
            return [{"sessionUpdate": "plan_update", "plan": plan, **({"_meta": u["_meta"]} if "_meta" in u else {})}]
        if kind == "available_commands_update":
            return [{**u, "availableCommands": commands_up(u.get("availableCommands"))}]
        if kind == "current_mode_update":
            if s.modes is None:
                return []
            s.modes = {**s.modes, "currentModeId": u.get("currentModeId")}
            return [{"sessionUpdate": "config_option_update", "configOptions": self.options_of(s)}]
        if kind == "config_option_update":
            s.options = [option_up(o) for o in u.get("configOptions") or []]
            return [{**u, "configOptions": self.options_of(s)}]
        return [u]


# -- a v1 client in front of a v2 agent -----------------------------------------
