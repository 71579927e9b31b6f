"""A v1 client in front of a v2 agent: the v1 conversation made from the v2 one.

Hand-written: the source is runtime/bridge/_down.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from ._messages import INTERNAL_ERROR, INVALID_PARAMS, Json, error, obj, unmappable
from ._mode import Mode
from ._session import Session
from ._shapes import auth_down, caps_down, commands_down, content_down, option_down, servers_up

MAX_TOOL_CONTENT = 256
"""Items of a v2 tool call's appended content kept to rewrite it as v1's whole list."""


class DownV1(Mode):
    """The v1 conversation made from a v2 agent's."""

    RENAMES = {"authenticate": "auth/login", "logout": "auth/logout"}

    def init_result(self, result: Json) -> Json:
        out: Json = {"protocolVersion": 1, "agentCapabilities": caps_down(result)}
        if isinstance(result.get("info"), dict):
            out["agentInfo"] = result["info"]
        out["authMethods"] = [auth_down(m) for m in result.get("authMethods") or []]
        if "_meta" in result:
            out["_meta"] = result["_meta"]
        return out

    def setup_result(self, s: Session | None, result: Any) -> tuple[Any, Any]:
        """A v2 setup answer as v1's, and the commands to send after it."""
        if not isinstance(result, dict):
            return result, None
        out = {k: v for k, v in result.items() if k not in ("configOptions", "availableCommands")}
        options = result.get("configOptions")
        if isinstance(options, list):
            out["configOptions"] = [option_down(o) for o in options]
            modes = self.modes(s, options)
            if modes is not None:
                out["modes"] = modes
        return out, result.get("availableCommands") or None

    def modes(self, s: Session | None, options: list[Any]) -> Json | None:
        for o in options:
            if isinstance(o, dict) and o.get("category") == "mode" and o.get("type") == "select":
                values: list[Json] = []
                for v in o.get("options") or []:
                    if isinstance(v, dict) and isinstance(v.get("options"), list):
                        values += [x for x in v["options"] if isinstance(x, dict)]
                    elif isinstance(v, dict):
                        values.append(v)
                if s is not None:
                    s.mode_option, s.mode_value = o.get("configId"), o.get("currentValue")
                return {
                    "currentModeId": o.get("currentValue"),
                    "availableModes": [
                        {
                            k: x[w]
                            for k, w in (("id", "value"), ("name", "name"), ("description", "description"))
                            if x.get(w) is not None
                        }
                        for x in values
                    ],
                }
        return None

    async def setup(self, msg: Json, method: str, sent: Json, sid: Any) -> None:
        async def answered(answer: Json) -> None:
            result = answer.get("result")
            commands = None
            if isinstance(result, dict):
                s = self.session(result.get("sessionId", sid))
                if s is not None:
                    s.replaying = False
                mapped, commands = self.setup_result(s, result)
                answer = {**answer, "result": mapped}
            await self.client(answer)
            the_sid = result.get("sessionId", sid) if isinstance(result, dict) else sid
            if commands:
                await self.update(
                    the_sid,
                    {"sessionUpdate": "available_commands_update", "availableCommands": commands_down(commands)},
                )

        await self.forward_request(msg, method, sent, answered)

    async def client_request(self, msg: Json, method: str, params: Any) -> None:
        rid = msg.get("id")
        p = obj(params)
        if method in self.RENAMES:
            await self.forward_request(msg, self.RENAMES[method], params)
        elif method in ("session/new", "session/load", "session/resume", "session/fork"):
            sent = dict(p)
            if "mcpServers" in p:
                servers, err = servers_up(p.get("mcpServers"), rid)
                if err is not None:
                    await self.client(err)
                    return
                sent["mcpServers"] = servers
            target = method
            if method == "session/load":
                target = "session/resume"
                sent["replayFrom"] = {"type": "start"}
                s = self.session(p.get("sessionId"))
                if s is not None:
                    s.replaying = True
            await self.setup(msg, target, sent, p.get("sessionId"))
        elif method == "session/set_mode":
            s = self.session(p.get("sessionId"), create=False)
            if s is None or s.mode_option is None:
                await self.client(
                    unmappable(rid, INVALID_PARAMS, "the session has no config option of category mode", method=method)
                )
                return
            value = p.get("modeId")
            kept = s

            async def moded(answer: Json) -> None:
                if "result" in answer:
                    kept.mode_value = value
                    answer = {**answer, "result": {}}
                await self.client(answer)

            sent = {"sessionId": s.sid, "configId": s.mode_option, "type": "id", "value": value}
            await self.forward_request(msg, "session/set_config_option", sent, moded)
        elif method == "session/set_config_option":
            sent = dict(p)
            if "type" not in sent:
                sent["type"] = "id"

            async def set_(answer: Json) -> None:
                result = answer.get("result")
                if isinstance(result, dict):
                    options = result.get("configOptions") or []
                    s = self.session(p.get("sessionId"), create=False)
                    if s is not None:
                        self.modes(s, options)
                    answer = {**answer, "result": {**result, "configOptions": [option_down(o) for o in options]}}
                await self.client(answer)

            await self.forward_request(msg, method, sent, set_)
        elif method == "session/prompt":
            s = self.session(p.get("sessionId"))
            if s is None:
                await self.forward_request(msg, method, params)
                return

            async def acked(answer: Json) -> None:
                if "error" in answer:
                    with contextlib.suppress(ValueError):
                        s.prompts.remove(rid)
                    await self.client({**answer, "id": rid})
                elif isinstance(answer.get("result"), dict):
                    mid = answer["result"].get("messageId")
                    if isinstance(mid, str) and len(s.acks) < 64:
                        s.acks.add(mid)

            s.prompts.append(rid)
            await self.request_agent(method, p, acked)
        else:
            await self.forward_request(msg, method, params)

    async def client_notification(self, msg: Json, method: str, params: Any) -> None:
        if method == "$/cancel_request":
            wanted = obj(params).get("requestId")
            for s in self.sessions.values():
                if wanted in s.prompts:
                    await self.agent({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": s.sid}})
                    return
        await self.agent(msg)

    async def agent_gone(self) -> None:
        await super().agent_gone()
        for s in self.sessions.values():
            while s.prompts:
                await self.client(error(s.prompts.popleft(), INTERNAL_ERROR, "acp-bridge: the agent exited"))

    async def agent_request(self, msg: Json, method: str, params: Any) -> None:
        if method == "session/request_permission":
            p = obj(params)
            subject = obj(p.get("subject"))
            if subject.get("type") == "tool_call" and isinstance(subject.get("toolCall"), dict):
                tool = dict(subject["toolCall"])
                if "content" in tool:
                    tool["content"] = content_down(tool["content"])
            else:
                tool = {"toolCallId": f"acp-bridge-permission-{msg.get('id')}", "title": p.get("title")}
            sent: Json = {"sessionId": p.get("sessionId"), "toolCall": tool, "options": p.get("options")}
            if "_meta" in p:
                sent["_meta"] = p["_meta"]
            msg = {**msg, "params": sent}
        await super().agent_request(msg, method, params)

    async def agent_notification(self, msg: Json, method: str, params: Any) -> None:
        known = await self.session_update(msg, method, params)
        if known is None:
            return
        s, p = known
        u = p["update"]
        if u.get("sessionUpdate") == "state_update":
            if u.get("state") == "idle" and s.prompts:
                rid = s.prompts.popleft()
                if u.get("stopReason") is None:
                    await self.client(error(rid, INTERNAL_ERROR, "acp-bridge: the turn ended without a stop reason"))
                    return
                result: Json = {"stopReason": u["stopReason"]}
                if u.get("usage") is not None:
                    result["usage"] = u["usage"]
                await self.client({"jsonrpc": "2.0", "id": rid, "result": result})
            return
        for update in self.translate(s, u):
            await self.client({**msg, "params": {**p, "update": update}})

    def translate(self, s: Session, u: Json) -> list[Json]:
        kind = u.get("sessionUpdate")
        whole = {
            "user_message": "user_message_chunk",
            "agent_message": "agent_message_chunk",
            "agent_thought": "agent_thought_chunk",
        }
        if kind in whole:
            if kind == "user_message" and not s.replaying and (u.get("messageId") in s.acks or s.prompts):
                s.acks.discard(u.get("messageId"))
                return []  # the live turn's own prompt: the v1 client sent it
            content = u.get("content") or []
            rest = {k: v for k, v in u.items() if k not in ("sessionUpdate", "content")}
            return [{"sessionUpdate": whole[kind], **rest, "content": b} for b in content]
        if kind == "tool_call_update":
            tid = u.get("toolCallId")
            out = dict(u)
            if "content" in out:
                out["content"] = content_down(out["content"])
                if isinstance(tid, str) and tid in s.tools and isinstance(out["content"], list):
                    s.tools[tid] = list(out["content"])[:MAX_TOOL_CONTENT]
            if isinstance(tid, str) and tid not in s.tools:
                if len(s.tools) >= MAX_TOOL_CONTENT:
                    s.tools.pop(next(iter(s.tools)))
                s.tools[tid] = list(out.get("content") or [])[:MAX_TOOL_CONTENT]
                out["sessionUpdate"] = "tool_call"
                if not out.get("title"):
                    out["title"] = tid
                return [{k: v for k, v in out.items() if v is not None or k in ("rawInput", "rawOutput")}]
            return [out]
        if kind == "tool_call_content_chunk":
            tid = u.get("toolCallId")
            items = content_down([u.get("content")])
            kept = s.tools.setdefault(str(tid), [])
            if len(kept) < MAX_TOOL_CONTENT:
                kept += items
            return [{"sessionUpdate": "tool_call_update", "toolCallId": tid, "content": list(kept)}]
        if kind in ("terminal_update", "terminal_output_chunk"):
            if not s.warned:
                s.warned = True
                print(f"acp-bridge: v1 has no display terminals; {kind} of session {s.sid} not sent", file=sys.stderr)
            return []
        if kind == "plan_update":
            plan = obj(u.get("plan"))
            if plan.get("type") == "items":
                return [{"sessionUpdate": "plan", "entries": plan.get("entries", [])}]
            return [u]
        if kind == "available_commands_update":
            return [{**u, "availableCommands": commands_down(u.get("availableCommands"))}]
        if kind == "config_option_update":
            options = u.get("configOptions") or []
            before = s.mode_value
            self.modes(s, options)
            changed = [{**u, "configOptions": [option_down(o) for o in options]}]
            if s.mode_option is not None and s.mode_value != before:
                changed.append({"sessionUpdate": "current_mode_update", "currentModeId": s.mode_value})
            return changed
        return [u]


# -- the process ----------------------------------------------------------------
