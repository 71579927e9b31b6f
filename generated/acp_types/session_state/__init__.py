"""A session as a client sees it: the protocol's ``session/update`` rules applied, for v1 and v2.

``acp_types.v1.SessionState`` and ``acp_types.v2.SessionState`` take every
``session/update`` of one session, in arrival order, and hold what a client
shows: the messages (keyed by ``messageId``, in the order they first
appeared, with their content blocks), the tool calls, plans, terminals (v2),
available commands, config options, modes (v1), session info, usage and the
run state (v2), each typed with the version's own models::

    state = v2.SessionState()
    state.apply(notification)          # a v2.UpdateSessionNotification (or its wire dict)
    for entry in state.transcript:     # messages and tool calls, in order
        ...

Applying is a pure step: the same updates in the same order give the same
state, in any process. A state compares with ``==``, copies with
:meth:`SessionState.copy`, and is written out with ``to_json()`` and read
back with ``from_json()`` to go on applying later.

Checking the agent: every state keeps ``problems``, the rules the stream
broke, each a :class:`Problem` naming its rule (an id of :data:`RULES`), the
rule's level and source, the offending update and its position in the
stream. A lenient state (the default) checks the rules whose breach makes it
guess how to apply an update (an update for another session, a v1
``tool_call_update`` for an unknown call, undecodable terminal bytes...);
``SessionState(strict=True)`` checks every rule of :data:`RULES`. The mode
changes only the report: both apply every update the same way.

Some rules need to know where turns and replays start and end, which
``session/update`` alone does not say: the client marks them with
:meth:`begin_turn`, :meth:`note_cancel`, :meth:`end_turn` (v1, with the
prompt response) or :meth:`finish` (v2), and :meth:`begin_replay` /
:meth:`end_replay` around a ``session/load`` (v1) or a ``session/resume``
with ``replayFrom`` (v2). The helpers of :mod:`acp_types.client` do this.

As an oracle (a conformance kit watching an agent): make a strict state per
session, call ``begin_turn()`` when a ``session/prompt`` is sent,
``note_cancel()`` when a ``session/cancel`` is, ``apply(params)`` for each
``session/update`` (a wire dict is fine), and ``end_turn(response)`` (v1) or
``finish(response)`` (v2, once the client stops waiting for ``idle``) to
close the turn; wrap replays in ``begin_replay()`` / ``end_replay()``. Then
``problems`` holds every broken rule of ``RULES`` with the offending update
and its position; ``Problem.to_wire()`` and ``Rule`` are plain data.

The package reads top-down, each module importing only those before it:
``_rules`` (:data:`RULES`, :class:`Rule`, :class:`Problem`: what a stream
can break and the report of a breach), ``_values`` (the records a state
holds: :class:`Message`, :class:`ToolCall`, :class:`Terminal`,
:class:`Info`, :class:`Compaction`), ``_saved`` (the JSON layout of a saved
state, read back with :class:`StateFormatError` on a fault) and ``_base``
(``BaseSessionState``, what applying, turns, replays and reporting share).
Each version's own updates and checks are in ``acp_types._state_v1`` and
``acp_types._state_v2``.

Hand-written: the source is runtime/session_state/__init__.py, which the
generator copies into the package unchanged.
"""

from __future__ import annotations

from ._base import BaseSessionState as BaseSessionState
from ._base import _decode_base64 as _decode_base64
from ._base import _is_absolute as _is_absolute
from ._base import _known_values as _known_values
from ._base import _tag as _tag
from ._base import iter_text as iter_text
from ._base import shared_handlers as shared_handlers
from ._rules import RULES, Problem, Rule
from ._rules import Level as Level
from ._saved import FORMAT as FORMAT
from ._saved import StateFormatError
from ._saved import _Reader as _Reader
from ._saved import _wire as _wire
from ._values import Compaction, Info, Message, Terminal, ToolCall

# Beside __all__: importable from here as before the package split (the versions' states use the private ones).

__all__ = [
    "RULES",
    "Compaction",
    "Info",
    "Message",
    "Problem",
    "Rule",
    "StateFormatError",
    "Terminal",
    "ToolCall",
]
