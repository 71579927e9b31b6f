"""One agent for both versions: write the logic once, the library speaks v1 or v2.

Subclass :class:`App`, implement :meth:`App.prompt` (and whatever else you
support), and serve it::

    from acp_types import agent

    class Echo(agent.App):
        name = "echo"

        async def prompt(self, turn: agent.Turn) -> agent.StopReason:
            await turn.text(turn.prompt_text)
            return "end_turn"

    asyncio.run(agent.serve_stdio(Echo()))

The client's ``initialize`` settles the version; from then on the same code
is written out by that version's rules:

- **The turn.** In v1 the ``session/prompt`` answer (with the stop reason)
  ends the turn. In v2 the answer comes first (the acknowledgement), then a
  ``user_message`` with the prompt, ``state_update`` ``running``, the
  updates, and ``state_update`` ``idle`` with the stop reason. Message ids
  are made here (unique, never reused across turns).
- **Stopping.** ``session/cancel``, ``session/close`` and ``session/archive``
  cancel the running turn's task (``asyncio.CancelledError`` at the agent's
  next ``await``): the turn ends ``cancelled`` (v1's answer, v2's ``idle``)
  and nothing of it is sent after. ``session/archive`` closes the session as
  ``session/close`` does (seed 000). A v2 prompt acknowledged behind the
  running turn is never lost: when the session is closed, archived or
  reopened first, it still gets its ``user_message`` and ``idle``
  (``cancelled``), before the close answer, and never runs.
- **Bounds.** A v2 session accepts :attr:`App.max_queued_prompts` prompts
  behind its running turn (and a connection ``max_in_flight`` turns in all);
  more are refused with -32600 until it goes idle.
- **Who may touch a session.** Each connection acts for a *principal*: by
  default one of its own; :func:`serve_stdio` makes it ``local:<user>`` (whoever
  started the process); a transport sets it with ``serve(..., principal=...)``
  (e.g. from a bearer token); :meth:`App.authenticate` may return one after a
  login. A session belongs to the principal that made it (``Session.owner``).
  Every session method (list, load, resume, prompt, cancel, close, archive,
  unarchive, set_mode, set_config_option) reaches only the caller's sessions:
  another's is answered -32002 as if it did not exist, its cancel is
  ignored, and list shows nothing of it. With ``auth_methods``, every one of
  them (and ``session/new``) is refused with -32000 until the peer logged in.
- **Sessions** live in the app's :class:`~acp_types.store.SessionStore`
  (``App(store=...)``; by default a SQLite file under the user's state
  directory, see :func:`acp_types.store.default_path`), so they outlive the
  process: list, load, resume, archive and close work in a fresh one. The
  store keeps each session's row (cwd, title, ``updatedAt``, archive state,
  owner, its :class:`Setup`) and, in a version-neutral form, everything its
  client was shown: user, agent and thought messages with their ids, tool
  calls with every patch, plans, usage, commands, config and mode, titles.
  An update is in the store before it is written to the client (a batch of
  them in one transaction), so a replay after a crash never lacks what a
  client saw. ``session/list`` pages the store (``cwd`` matched exactly,
  ``archived`` filter with an unknown value refused -32602, opaque cursors
  that survive a restart); ``session/load`` (v1) and ``session/resume``
  with ``replayFrom`` (v2) replay the log by the seeds' rules unless
  :meth:`App.resume` is overridden, text in updates of at most
  :data:`REPLAY_PIECE` characters (in v2 a message rebuilt from chunks
  first gets its update with ``content: []``). A session started in one
  version can be resumed in the other. A session open on a connection in
  one agent process is *claimed*: another process sharing the store gets
  -32600 for it (naming the holder) until it is closed there or that
  process ends. :attr:`App.sessions` holds only the sessions open in this
  process: memory does not grow with the sessions ever served.
- **Commands.** :attr:`Setup.commands` are in v2's ``session/new``,
  ``load`` and ``resume`` answers; v1 has no such field, so a v1 client gets
  an ``available_commands_update`` right after the ``session/new`` answer and
  during ``session/load``/``resume``, before their answer.
- **Capabilities** are derived from what the app implements, and checked
  when it starts: :meth:`App.capabilities` may add to them, and a promise
  without its handler (v2's ``session`` promises ``session/resume`` and
  ``session/close``) is refused by :func:`check` naming what is missing.
- **Conversions.** A diff is given as old and new text: v1 writes
  ``oldText``/``newText``, v2 a ``modify``/``add``/``delete`` change plus a
  ``git_patch``. Modes are v1 modes and, in v2 (which has none), a select
  config option of category ``mode`` with id ``mode``. v1's
  ``fs/read_text_file`` is :meth:`Turn.read_file`, ``None`` where the
  client does not offer it (v2 has no fs methods). Version-only features are
  reached through :attr:`Session.v1` / :attr:`Session.v2` (the typed peer,
  ``None`` in the other version) and :meth:`Session.send`.

The package reads top-down, each module importing only those before it: ``_values`` (the
version-neutral values), ``_speaker`` (what a speaker is, and what both versions write alike),
``_v1`` and ``_v2`` (one speaker per version), ``_session`` (sessions, turns, replays; the one
place a version picks its speaker), ``_app`` (:class:`App`), ``_surface`` (the handler of one
connection: the lifecycle once), ``_serve`` (:func:`check`, :func:`serve`, :func:`serve_stdio`).

Hand-written: the source is runtime/agent/__init__.py, copied into the package unchanged.
"""

from __future__ import annotations

from ._app import App
from ._serve import check, serve, serve_stdio
from ._session import Replay, Session, ToolCall, Turn
from ._session import _Outbox as _Outbox
from ._session import _replay as _replay
from ._session import _session_of as _session_of
from ._session import _state as _state
from ._session import speaker_for as speaker_for
from ._speaker import Speaker as Speaker
from ._surface import _Surface as _Surface
from ._values import ALLOW_OR_REJECT as ALLOW_OR_REJECT
from ._values import AUTH_REQUIRED as AUTH_REQUIRED
from ._values import INVALID_PARAMS as INVALID_PARAMS
from ._values import INVALID_REQUEST as INVALID_REQUEST
from ._values import REPLAY_PIECE as REPLAY_PIECE
from ._values import RESOURCE_NOT_FOUND as RESOURCE_NOT_FOUND
from ._values import ArchivedFilter as ArchivedFilter
from ._values import (
    AuthMethod,
    Command,
    ConfigOption,
    Edit,
    ListQuery,
    Mode,
    Page,
    PermissionOption,
    PlanEntry,
    PromiseBroken,
    SessionInfo,
    Setup,
    StopReason,
)
from ._values import ToolKind as ToolKind
from ._values import ToolStatus as ToolStatus
from ._values import log as log

# Beside __all__: importable from here as before the package split (tests reach a few private ones).

__all__ = [
    "App",
    "AuthMethod",
    "Command",
    "ConfigOption",
    "Edit",
    "ListQuery",
    "Mode",
    "Page",
    "PermissionOption",
    "PlanEntry",
    "PromiseBroken",
    "Replay",
    "Session",
    "SessionInfo",
    "Setup",
    "StopReason",
    "ToolCall",
    "Turn",
    "check",
    "serve",
    "serve_stdio",
]
