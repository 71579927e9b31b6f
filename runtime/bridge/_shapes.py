"""The shapes that differ between v1 and v2, each mapped both ways (``_up``: v1 → v2, ``_down``: v2 → v1).

Pure functions on JSON values: authentication methods, capabilities, config options, modes as
a config option, commands, tool call content and MCP servers. What is not the expected shape
is returned as it came.

Hand-written: the source is runtime/bridge/_shapes.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

from typing import Any

from ._messages import INVALID_PARAMS, Json, obj, on, unmappable


def auth_up(method: Any) -> Any:
    if not isinstance(method, dict):
        return method
    out = {k: v for k, v in method.items() if k != "id"}
    out = {"methodId": method.get("id"), **out}
    if method.get("type") == "terminal":
        env = method.get("env")
        if isinstance(env, dict):
            out["env"] = [{"name": k, "value": v} for k, v in env.items()]
    elif "type" not in method or method.get("type") == "agent":
        out["type"] = "agent"
    return out


def auth_down(method: Any) -> Any:
    if not isinstance(method, dict):
        return method
    out = {k: v for k, v in method.items() if k != "methodId"}
    out = {"id": method.get("methodId"), **out}
    if method.get("type") == "terminal":
        env = method.get("env")
        if isinstance(env, list):
            out["env"] = {e.get("name"): e.get("value") for e in env if isinstance(e, dict)}
    elif method.get("type") == "agent":
        del out["type"]
    return out


def caps_up(result: Json) -> Json:
    ac = obj(result.get("agentCapabilities"))
    sc = obj(ac.get("sessionCapabilities"))
    pc = obj(ac.get("promptCapabilities"))
    mc = obj(ac.get("mcpCapabilities"))
    session: Json = {}
    prompt: Json = {k: {} for k in ("image", "audio", "embeddedContext") if pc.get(k) is True}
    if prompt:
        session["prompt"] = prompt
    mcp: Json = {"stdio": {}}
    for k in ("http", "acp"):
        if mc.get(k) is True:
            mcp[k] = {}
    session["mcp"] = mcp
    for k in ("delete", "archive", "additionalDirectories", "fork"):
        if on(sc.get(k)):
            session[k] = sc[k] if isinstance(sc[k], dict) else {}
    caps: Json = {"session": session}
    if isinstance(ac.get("providers"), dict):
        caps["providers"] = ac["providers"]
    return caps


def caps_down(result: Json) -> Json:
    caps = obj(result.get("capabilities"))
    session = caps.get("session")
    ac: Json = {}
    if isinstance(session, dict):
        ac["loadSession"] = True
        sc: Json = {"list": {}, "resume": {}, "close": {}}
        for k in ("delete", "archive", "additionalDirectories", "fork"):
            if isinstance(session.get(k), dict):
                sc[k] = session[k]
        ac["sessionCapabilities"] = sc
        prompt = obj(session.get("prompt"))
        ac["promptCapabilities"] = {k: True for k in ("image", "audio", "embeddedContext") if on(prompt.get(k))}
        mcp = obj(session.get("mcp"))
        ac["mcpCapabilities"] = {k: True for k in ("http", "acp") if on(mcp.get(k))}
    if isinstance(caps.get("providers"), dict):
        ac["providers"] = caps["providers"]
    return ac


def client_caps_down(params: Json) -> Json:
    """A v2 client's capabilities as v1 clientCapabilities."""
    caps = obj(params.get("capabilities"))
    out: Json = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
    if on(obj(caps.get("auth")).get("terminal")):
        out["auth"] = {"terminal": True}
    if isinstance(caps.get("elicitation"), dict):
        out["elicitation"] = caps["elicitation"]
    return out


def client_caps_up(params: Json) -> Json:
    """A v1 client's capabilities as v2 capabilities."""
    caps = obj(params.get("clientCapabilities"))
    out: Json = {}
    if obj(caps.get("auth")).get("terminal") is True:
        out["auth"] = {"terminal": {}}
    if isinstance(caps.get("elicitation"), dict):
        out["elicitation"] = caps["elicitation"]
    return out


def _rename_option(option: Any, id_key: tuple[str, str], group_key: tuple[str, str]) -> Any:
    """A config option with its id key and its values' group key renamed (``(from, to)`` each)."""
    if not isinstance(option, dict):
        return option
    out = dict(option)
    if id_key[0] in out:
        out[id_key[1]] = out.pop(id_key[0])
    if isinstance(out.get("options"), list):
        out["options"] = [
            {(group_key[1] if k == group_key[0] else k): v for k, v in o.items()} if isinstance(o, dict) else o
            for o in out["options"]
        ]
    return out


def option_up(option: Any) -> Any:
    return _rename_option(option, ("id", "configId"), ("group", "groupId"))


def option_down(option: Any) -> Any:
    return _rename_option(option, ("configId", "id"), ("groupId", "group"))


MODE_OPTION = "mode"


def mode_option(modes: Json) -> Json:
    return {
        "type": "select",
        "configId": MODE_OPTION,
        "name": "Mode",
        "category": "mode",
        "currentValue": modes.get("currentModeId"),
        "options": [
            {
                k: v
                for k, v in (("value", m.get("id")), ("name", m.get("name")), ("description", m.get("description")))
                if v is not None
            }
            for m in modes.get("availableModes") or []
            if isinstance(m, dict)
        ],
    }


def commands_up(commands: Any) -> Any:
    if not isinstance(commands, list):
        return commands
    out = []
    for c in commands:
        if isinstance(c, dict) and isinstance(c.get("input"), dict) and "type" not in c["input"]:
            c = {**c, "input": {"type": "text", **c["input"]}}
        out.append(c)
    return out


def commands_down(commands: Any) -> Any:
    if not isinstance(commands, list):
        return commands
    out = []
    for c in commands:
        if isinstance(c, dict) and isinstance(c.get("input"), dict) and c["input"].get("type") == "text":
            c = {**c, "input": {k: v for k, v in c["input"].items() if k != "type"}}
        out.append(c)
    return out


def content_up(items: Any) -> Any:
    if not isinstance(items, list):
        return items
    out = []
    for item in items:
        if isinstance(item, dict) and item.get("type") == "diff" and "path" in item:
            op = "modify" if item.get("oldText") is not None else "add"
            change = {"operation": op, "path": item["path"]}
            item = {"type": "diff", "changes": [change], **({"_meta": item["_meta"]} if "_meta" in item else {})}
        elif isinstance(item, dict) and item.get("type") == "terminal":
            continue  # a v1 client terminal: the v2 client has none (the agent was told so)
        out.append(item)
    return out


def content_down(items: Any) -> Any:
    if not isinstance(items, list):
        return items
    out = []
    for item in items:
        if isinstance(item, dict) and item.get("type") == "diff":
            patch = obj(item.get("patch")).get("text")
            paths = [c.get("path") for c in item.get("changes") or [] if isinstance(c, dict)]
            text = patch if isinstance(patch, str) else "changed: " + ", ".join(str(p) for p in paths)
            item = {"type": "content", "content": {"type": "text", "text": text}}
        elif isinstance(item, dict) and item.get("type") not in ("content", "diff"):
            continue  # a v2 display terminal or an unknown kind: v1 has no such content
        out.append(item)
    return out


def servers_down(servers: Any, rid: Any) -> tuple[Any, Json | None]:
    """v2 MCP servers for a v1 agent: stdio untagged with args and env."""
    if not isinstance(servers, list):
        return servers, None
    out = []
    for s in servers:
        if isinstance(s, dict) and s.get("type") == "stdio":
            s = {k: v for k, v in s.items() if k != "type"}
            s.setdefault("args", [])
            s.setdefault("env", [])
        out.append(s)
    return out, None


def servers_up(servers: Any, rid: Any) -> tuple[Any, Json | None]:
    if not isinstance(servers, list):
        return servers, None
    out = []
    for s in servers:
        if isinstance(s, dict):
            if s.get("type") == "sse":
                return None, unmappable(rid, INVALID_PARAMS, "v2 has no SSE MCP servers", field="mcpServers")
            if "type" not in s:
                s = {"type": "stdio", **s}
        out.append(s)
    return out, None


# -- a v2 client in front of a v1 agent -----------------------------------------
