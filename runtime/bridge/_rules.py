"""The bridge's rules as data (:data:`RULES`), and docs/bridge.md, which renders them with the schema's map.

Each rule says what the bridge does with one thing the two versions do differently; the modules
after this one carry them out. ``python -m acp_types.bridge --table schema/crossversion.json``
prints :func:`render_table`'s text, and tests/test_bridge.py holds docs/bridge.md equal to it.

Hand-written: the source is runtime/bridge/_rules.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RULES: tuple[tuple[str, str, str, str], ...] = (
    # (client → agent, what v1 has, what v2 has, what the bridge does); "v2 → v1" is a v2 client in front
    # of a v1 agent, "v1 → v2" a v1 client in front of a v2 agent; "—" where a version has nothing
    (
        "both",
        "initialize",
        "initialize",
        "the client's request reaches the agent with the other version's fields added (clientCapabilities and "
        "clientInfo, or capabilities and info); the version the agent answers with picks the mode",
    ),
    (
        "both",
        "same version at both ends",
        "same version at both ends",
        "every byte after initialize is forwarded unchanged, both ways",
    ),
    ("both", "—", "protocolVersion the bridge does not speak", "read as 2, the newest the bridge speaks"),
    (
        "v2 → v1",
        "InitializeResponse",
        "InitializeResponse",
        "agentCapabilities become capabilities (session present; prompt and mcp booleans become {} markers; "
        "stdio always), agentInfo becomes info (a placeholder if absent), an auth method's id becomes methodId "
        "(type agent where untagged), a terminal method's env map a list",
    ),
    ("v2 → v1", "authenticate, logout", "auth/login, auth/logout", "sent as authenticate, logout"),
    (
        "v2 → v1",
        "session/prompt answered with stopReason",
        "session/prompt acknowledged, state_update",
        "answered at once with the inserted user message's id; user_message and state_update running follow, "
        "then the v1 prompt goes out; its answer becomes state_update idle with the stop reason and usage (an "
        "error answer: idle without a stop reason, the error in _meta.acpBridge.error); a v1 agent takes one "
        "prompt at a time: the next accepted one starts (user_message, running) when the previous goes idle, "
        "at most MAX_QUEUED_PROMPTS wait (more are refused -32600), one cancelled while waiting ends idle "
        "cancelled without reaching the agent",
    ),
    (
        "v2 → v1",
        "messageId optional",
        "messageId required",
        "made: uuid5(NAMESPACE, '<sessionId>/<user|agent|thought>/<n>'), n counting that role's messages of the "
        "session from 0 in history order; a v1 messageId only tells where a message starts; a session the bridge "
        "did not follow from its start (resumed without load, or forked) gets ids that also hold a random epoch",
    ),
    (
        "v2 → v1",
        "user_message_chunk, agent_message_chunk, agent_thought_chunk",
        "user_message, agent_message, agent_thought, *_chunk",
        "the first chunk of a message becomes the whole-message update with that block, the next ones chunks "
        "with the message's id",
    ),
    (
        "v2 → v1",
        "session/load",
        "session/resume with replayFrom start",
        "replayed from the bridge's record when it followed the session from its start (the agent gets "
        "session/resume, or session/load with its replay not sent); else session/load, its replay "
        "translated; else refused (-32602, unmappable); another replayFrom is refused (-32602, unmappable)",
    ),
    (
        "v2 → v1",
        "session/load, session/resume",
        "session/resume without replayFrom",
        "session/resume when the bridge followed the session from its start and the agent can resume; else "
        "session/load with its replay counted and not sent when the agent can load (so later ids are the ones a "
        "replay gives); else session/resume (the session's new ids then hold a random epoch)",
    ),
    (
        "v2 → v1",
        "session/close (capability)",
        "session/close (baseline)",
        "forwarded when advertised; else session/cancel and the answer {}",
    ),
    (
        "v2 → v1",
        "session/list (capability)",
        "session/list (baseline)",
        "forwarded when advertised; else refused (-32601, unmappable)",
    ),
    (
        "v2 → v1",
        "modes, session/set_mode, current_mode_update",
        "config option of category mode",
        "the v1 modes become a select option (configId 'mode') added to configOptions; setting it is "
        "session/set_mode, answered with every option; current_mode_update becomes config_option_update",
    ),
    (
        "v2 → v1",
        "SessionConfigOption.id, group",
        "configId, groupId",
        "renamed; a value id's type 'id' is dropped on the way to v1",
    ),
    (
        "v2 → v1",
        "tool_call, tool_call_update",
        "tool_call_update",
        "both become tool_call_update; a diff becomes changes (modify, or add without oldText, of its path); "
        "terminal content is left out (the v1 agent was told the client has no terminals)",
    ),
    ("v2 → v1", "plan", "plan_update", "plan_update of type items with planId 'plan'"),
    ("v2 → v1", "available_commands_update input {hint}", "input {type: text, hint}", "type text added"),
    (
        "v2 → v1",
        "McpServer stdio (untagged, args and env required)",
        "McpServer stdio (type stdio)",
        "type dropped, args and env default to []",
    ),
    (
        "v2 → v1",
        "session/request_permission toolCall",
        "title, subject tool_call",
        "title from the tool call's (or 'Permission requested'), the tool call as subject",
    ),
    (
        "v2 → v1",
        "fs/*, terminal/* (client methods)",
        "—",
        "the agent is told the client has neither (clientCapabilities all false); a request anyway is refused to "
        "the agent (-32601, unmappable) and logged",
    ),
    ("v2 → v1", "—", "terminal/cancel, tool_call/cancel", "refused (-32601, unmappable)"),
    ("v2 → v1", "—", "batch (JSON array)", "refused with id null (-32600, unmappable): v1 has no batches"),
    (
        "v2 → v1",
        "—",
        "$/cancel_request of an acknowledged prompt",
        "not forwarded: the request is answered already (session/cancel stops the turn)",
    ),
    (
        "v1 → v2",
        "InitializeResponse",
        "InitializeResponse",
        "capabilities become agentCapabilities (loadSession and list, resume, close when session is present; {} "
        "markers become booleans), info becomes agentInfo, methodId becomes id (type agent dropped)",
    ),
    ("v1 → v2", "authenticate, logout", "auth/login, auth/logout", "sent as auth/login, auth/logout"),
    (
        "v1 → v2",
        "session/prompt answered with stopReason",
        "session/prompt acknowledged, state_update",
        "sent as a v2 prompt; the acknowledgement is kept; the client is answered with the stop reason and usage "
        "of the session's next state_update idle (one prompt after another, in order); an idle without a stop "
        "reason is answered -32603; $/cancel_request of the prompt becomes session/cancel",
    ),
    ("v1 → v2", "—", "user_message of the live turn", "not sent: the v1 client sent that prompt itself"),
    (
        "v1 → v2",
        "user_message_chunk, agent_message_chunk, agent_thought_chunk",
        "user_message, agent_message, agent_thought",
        "one chunk per content block, with the message's id",
    ),
    ("v1 → v2", "—", "state_update running, requires_action", "not sent"),
    ("v1 → v2", "session/load", "session/resume with replayFrom start", "sent so, the replay translated"),
    (
        "v1 → v2",
        "session/set_mode",
        "session/set_config_option",
        "of the session's option of category mode (type id); refused (-32602, unmappable) when there is none",
    ),
    (
        "v1 → v2",
        "modes, current_mode_update",
        "select config option of category mode",
        "modes added to setup answers from that option; current_mode_update sent when its value changes",
    ),
    ("v1 → v2", "—", "availableCommands of setup answers", "sent as available_commands_update after the answer"),
    (
        "v1 → v2",
        "tool_call, tool_call_update",
        "tool_call_update, tool_call_content_chunk",
        "the first tool_call_update of an id becomes tool_call (title: its title or the id); a content chunk "
        "becomes tool_call_update with the whole content so far (kept up to MAX_TOOL_CONTENT items)",
    ),
    (
        "v1 → v2",
        "diff {path, oldText, newText}",
        "diff {changes, patch}",
        "a content block of text: the patch text, or the changed paths",
    ),
    (
        "v1 → v2",
        "—",
        "terminal_update, terminal_output_chunk, terminal content",
        "not sent (v1 terminals are the client's); logged once per session",
    ),
    ("v1 → v2", "plan", "plan_update of type items", "plan with its entries; other plan_update types as they are"),
    (
        "v1 → v2",
        "session/request_permission toolCall",
        "subject tool_call",
        "the subject's tool call; without one, a tool call made of the title",
    ),
    ("v1 → v2", "McpServer sse", "—", "refused (-32602, unmappable): v2 removed the transport"),
    (
        "both",
        "—",
        "proxy/initialize (the bridge as a middle member of a chain)",
        "refused (-32601, unmappable): a proxy must keep protocolVersion; the bridge is the last member",
    ),
    ("both", "_-prefixed and unknown methods", "_-prefixed and unknown methods", "forwarded unchanged"),
    (
        "both",
        "a line over max_line_size",
        "a line over max_line_size",
        "a client's is answered -32600 with id null, an agent's dropped with a line on stderr",
    ),
    (
        "both",
        "the agent exits",
        "the agent exits",
        "every request in flight is answered -32603 (a v2 client's turn ends idle without a stop reason, the "
        "error in _meta.acpBridge.error), then the bridge exits with the agent's exit code",
    ),
    (
        "both",
        "the client leaves, SIGTERM, SIGHUP",
        "the client leaves, SIGTERM, SIGHUP",
        "the agent's stdin closes; its process group gets SIGTERM, then SIGKILL",
    ),
)


def render_table(crossversion: Path) -> str:
    """docs/bridge.md: the schema's cross-version map and the bridge's rules as one table."""
    data = json.loads(crossversion.read_text(encoding="utf-8"))
    out = [
        "# The v1 ⇄ v2 bridge: every mapping",
        "",
        "Generated by `python -m acp_types.bridge --table schema/crossversion.json` from the bridge's rules",
        "(`acp_types.bridge.RULES`) and `schema/crossversion.json` (what corresponds between the versions).",
        "Do not edit by hand: `tests/test_bridge.py` holds this file equal to what the command prints.",
        "",
        "`client → agent`: `v2 → v1` is a v2 client in front of a v1 agent, `v1 → v2` a v1 client in front",
        'of a v2 agent. An error the bridge answers for what it cannot map has `data.bridge` `"unmappable"`.',
        "The rows from the map (`from`: methods, fields, capabilities, types) are what the rules above apply to:",
        "the bridge applies each rename; what one version alone has is mapped by a rule above, refused with",
        "that error, or (a session update no rule names) forwarded as it is.",
        "",
        "| from | client → agent | v1 | v2 | what the bridge does |",
        "| --- | --- | --- | --- | --- |",
    ]

    def cell(text: Any) -> str:
        return "—" if text is None else str(text).replace("|", "\\|").replace("\n", " ")

    for direction, v1, v2, how in RULES:
        out.append(f"| bridge | {direction} | {cell(v1)} | {cell(v2)} | {cell(how)} |")
    for kind in ("methods", "fields", "capabilities", "types"):
        for row in data.get(kind, []):
            v1, v2, note = row.get("v1"), row.get("v2"), row.get("note")
            if v1 is not None and v2 is not None:
                how = "renamed"
            elif v1 is None:
                how = "v2 only"
            else:
                how = "v1 only"
            if note:
                how = f"{how}: {note}"
            out.append(f"| {kind} | both | {cell(v1 and f'`{v1}`')} | {cell(v2 and f'`{v2}`')} | {cell(how)} |")
    return "\n".join(out) + "\n"
