"""The three v1 messages (and the v2 chunk) the throughput figures parse, validate and dump.

Each is realistic wire JSON (camelCase) that validates both in
``acp_types.v1`` and in the official SDK's ``acp.schema`` models.
"""

from __future__ import annotations

import json
from typing import Any

AGENT_MESSAGE_CHUNK = {
    "sessionId": "sess_7f3c2a91b04e4d5c",
    "update": {
        "sessionUpdate": "agent_message_chunk",
        "content": {
            "type": "text",
            "text": (
                "I'll start by reading `src/parser.py` to see how the tokenizer "
                "handles escaped quotes, then add a regression test for the "
                "case you reported."
            ),
        },
    },
}

_OLD = "\n".join(f"    tokens.append(Token(kind={i}, text=line[{i}:{i + 4}]))" for i in range(20))
_NEW = _OLD.replace("line[", "source_line[") + "\n    return tokens\n"

TOOL_CALL_UPDATE_DIFF = {
    "sessionId": "sess_7f3c2a91b04e4d5c",
    "update": {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "call_01HZX3K9Q2",
        "title": "Edit src/parser.py",
        "kind": "edit",
        "status": "completed",
        "content": [
            {
                "type": "diff",
                "path": "/home/dev/project/src/parser.py",
                "oldText": _OLD,
                "newText": _NEW,
            }
        ],
        "locations": [{"path": "/home/dev/project/src/parser.py", "line": 42}],
        "rawInput": {
            "file_path": "/home/dev/project/src/parser.py",
            "old_string": "line[",
            "new_string": "source_line[",
            "replace_all": True,
        },
    },
}

INITIALIZE_RESPONSE = {
    "protocolVersion": 1,
    "agentCapabilities": {
        "loadSession": True,
        "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
        "mcpCapabilities": {"http": True, "sse": False},
    },
    "authMethods": [
        {
            "id": "oauth-personal",
            "name": "Log in with your account",
            "description": "Opens a browser to sign in.",
        },
        {
            "id": "api-key",
            "name": "Use an API key",
            "description": "Reads the key from the environment.",
        },
    ],
    "agentInfo": {"name": "example-agent", "title": "Example Agent", "version": "1.4.2"},
}

# The same chunk in v2, where a chunk names the message it belongs to.
V2_CHUNK: dict[str, Any] = {
    "sessionId": "sess_7f3c2a91b04e4d5c",
    "update": {
        "sessionUpdate": "agent_message_chunk",
        "messageId": "msg_01",
        "content": {"type": "text", "text": AGENT_MESSAGE_CHUNK["update"]["content"]["text"]},  # type: ignore[index]
    },
}

# (figure name, JSON-RPC method, "params" or "result", payload)
CASES = [
    ("session/update agent_message_chunk", "session/update", "params", AGENT_MESSAGE_CHUNK),
    ("session/update tool_call_update+diff", "session/update", "params", TOOL_CALL_UPDATE_DIFF),
    ("initialize response", "initialize", "result", INITIALIZE_RESPONSE),
]

# The wire text each case starts from: parsing JSON text is part of the work.
WIRE = {name: json.dumps(payload) for name, _, _, payload in CASES}
