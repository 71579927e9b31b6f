"""The bridge between ACP v1 and v2: ``python -m acp_types.bridge -- AGENT_CMD...``.

It serves one client, v1 or v2, on its stdin/stdout and spawns the agent
(in a process group of its own). The client's ``initialize`` goes to the
agent carrying both versions' fields; the version the agent answers with
decides the rest:

* the version the client asked for (a client asking for a version the
  bridge does not speak counts as asking for 2, its newest): from then on
  every byte is forwarded unchanged, both ways;
* v1 for a v2 client: the v2 conversation is made from the v1 one
  (:class:`~._up.UpV2`): the prompt acknowledged at once with the inserted user
  message's id, ``user_message``, ``state_update`` running and idle, whole
  message upserts with stable ids, replay through ``session/resume`` with
  ``replayFrom``, modes as a config option, ``auth/login`` for ``authenticate``;
* v2 for a v1 client (:class:`~._down.DownV1`): the prompt answered with the stop
  reason when the turn goes idle, ``session/load`` as a resume with replay,
  modes from the config option of category ``mode``.

Every rule is data in :data:`RULES`; ``python -m acp_types.bridge --table
schema/crossversion.json`` renders them with the schema's cross-version map
as one Markdown table (docs/bridge.md). What cannot be mapped is answered
with a JSON-RPC error whose ``data.bridge`` is ``"unmappable"``.

Message ids made for a v1 agent's messages are derived, never random: the
``n``-th user (agent, thought) message of session ``S`` gets
``uuid5(NAMESPACE, "S/user/n")`` (``agent``, ``thought``), ``n`` counting
from 0 in the order the messages appear in the session's history. A live
turn and a later replay (``session/load`` of the agent) count the same
messages, so a message keeps its id across replays and restarts of the
bridge.

The package reads in the order of its layers, each module importing only those before it:
``_rules`` (the rules as data, docs/bridge.md), ``_messages`` (lines, errors),
``_session`` (a session's counters and stable ids), ``_shapes`` (the v1/v2 shapes, both ways),
``_mode`` (a translating bridge's routing), ``_up`` (v2 client, v1 agent), ``_down`` (v1 client,
v2 agent), ``_router`` (initialize, then bytes or a mode), ``_process`` (the agent's process),
``_cli`` (the command line).

Hand-written: the source is runtime/bridge/__init__.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

from ._cli import main as main  # the command line, also for `python -c "from acp_types.bridge import main"`
from ._messages import UNMAPPABLE
from ._mode import MAX_RECORD_BYTES, MAX_SESSIONS
from ._process import run
from ._rules import RULES, render_table
from ._session import NAMESPACE, message_id

__all__ = [
    "MAX_RECORD_BYTES",
    "MAX_SESSIONS",
    "NAMESPACE",
    "RULES",
    "UNMAPPABLE",
    "message_id",
    "render_table",
    "run",
]
