"""What a speaker is: the one object that knows how a version writes the app's calls out.

A connection settles its version at ``initialize``; from then on everything version-specific it
writes goes through that version's speaker (:class:`~._v1.V1Speaker`, :class:`~._v2.V2Speaker`):
the answers' fields, the ``session/update`` an event is shown as, the prompt's flow, the replayed
pieces of a message, the requests to the client. The lifecycle (sessions, claims, the store,
queues) is written once, in :mod:`._session` and :mod:`._surface`, and asks the speaker.

This module holds the interface (every method a speaker has, with what it means) and what both
speakers write alike: most of an event's rendering, commands, unified diffs, user content blocks.

Hand-written: the source is runtime/agent/_speaker.py, copied into the package unchanged.
"""

from __future__ import annotations

import abc
import difflib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._values import (
    AuthMethod,
    Command,
    Edit,
    PermissionOption,
    Setup,
    StopReason,
    _setup_from,
    log,
)

if TYPE_CHECKING:
    from acp_types import v1, v2

    from ..connection import AgentConnection

# v1 and v2 models share these class names; the speaker's ``m`` says which module.
_CHUNK: dict[str, Any] = {
    "user": lambda m: m.UserMessageChunk,
    "agent": lambda m: m.AgentMessageChunk,
    "thought": lambda m: m.AgentThoughtChunk,
}
_WHOLE: dict[str, Any] = {
    "user": lambda m: m.UserMessage,
    "agent": lambda m: m.AgentMessage,
    "thought": lambda m: m.AgentThought,
}


def _commands(m: Any, commands: Sequence[Command]) -> list[Any]:
    out = []
    for c in commands:
        extra: dict[str, Any] = {}
        if c.hint is not None:
            extra["input"] = {"hint": c.hint}
        out.append(m.AvailableCommand(name=c.name, description=c.description, **extra))
    return out


def _patch(edit: Edit) -> str:
    rel = edit.path.lstrip("/")
    old = (edit.old_text or "").splitlines(keepends=True)
    new = (edit.new_text or "").splitlines(keepends=True)
    head = [f"diff --git a/{rel} b/{rel}\n"]
    src = "/dev/null" if edit.old_text is None else f"a/{rel}"
    dst = "/dev/null" if edit.new_text is None else f"b/{rel}"
    body = difflib.unified_diff(old, new, src, dst)
    return "".join(head + [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in body])


class Speaker(abc.ABC):
    """One version's way of writing; subclasses fill in what differs (the abstract methods). Stateless: one per version."""

    version: str
    """The version's name (``v1``, ``v2``), kept with what only it can replay (prompts' blocks, raw updates)."""

    @property
    @abc.abstractmethod
    def m(self) -> Any:
        """The version's models module."""
        raise NotImplementedError

    # -- the handshake and the session answers ------------------------------

    @abc.abstractmethod
    def capabilities(self, *, listing: bool, archive: bool, auth: bool) -> dict[str, Any]:
        """What :meth:`App.capabilities` advertises by default, as wire JSON."""
        raise NotImplementedError

    @abc.abstractmethod
    def initialize_json(self, caps: Mapping[str, Any], name: str, version: str) -> dict[str, Any]:
        """An ``initialize`` answer's wire JSON (what :func:`check` validates the capabilities in)."""
        raise NotImplementedError

    @abc.abstractmethod
    def initialize(
        self, caps: Mapping[str, Any], auth_methods: Sequence[AuthMethod], name: str, version: str, title: str | None
    ) -> Any:
        """The ``initialize`` answer."""
        raise NotImplementedError

    @abc.abstractmethod
    def config(self, setup: Setup) -> list[Any]:
        """The session's config options (in v2 its modes among them)."""
        raise NotImplementedError

    @abc.abstractmethod
    def setup_fields(self, setup: Setup | None) -> dict[str, Any]:
        """The fields a ``session/new``, ``load`` or ``resume`` answer has for ``setup``."""
        raise NotImplementedError

    @abc.abstractmethod
    def commands_update(self, setup: Setup) -> Any | None:
        """The update telling the commands when the answers cannot (``None``: they are in the answer)."""
        raise NotImplementedError

    # -- the turn -------------------------------------------------------------

    @abc.abstractmethod
    async def prompt(self, run: Callable[[], Awaitable[StopReason]], queue: Callable[[], None], user_id: str) -> Any:
        """The ``session/prompt`` answer: ``run`` the turn inside it (v1), or ``queue`` it behind it (v2)."""
        raise NotImplementedError

    @abc.abstractmethod
    def user_shown(self, user_id: str, prompt: Sequence[Any]) -> Any | None:
        """The prompt as shown back live (``None``: it is not)."""
        raise NotImplementedError

    def running(self) -> Any | None:
        """The update saying a turn runs (``None``: the version has no such state)."""
        return None

    def idle(self, reason: StopReason | None) -> Any | None:
        """The update ending a queued turn (``reason`` ``None``: the app's turn failed)."""
        return None

    def asking(self) -> Any | None:
        """The update saying the turn waits on the user."""
        return None

    @abc.abstractmethod
    async def ask_permission(
        self, conn: AgentConnection, session_id: str, tool_id: str, title: str, options: Sequence[PermissionOption]
    ) -> str | None:
        """``session/request_permission``; the chosen option's id, ``None`` when the client cancelled it."""
        raise NotImplementedError

    def reads_files(self, conn: AgentConnection) -> bool:
        """Whether the version has ``fs/read_text_file`` and the client offers it."""
        return False

    async def read_file(
        self, conn: AgentConnection, session_id: str, path: str, line: int | None, limit: int | None
    ) -> str:
        """``fs/read_text_file`` (only where :meth:`reads_files`)."""
        raise NotImplementedError

    def peer_v1(self, conn: AgentConnection) -> v1.ClientPeer | None:
        return None

    def peer_v2(self, conn: AgentConnection) -> v2.ClientPeer | None:
        return None

    def owns(self, update: Any) -> bool:
        """Whether ``update`` is one of this version's models."""
        return type(update).__module__.startswith(f"acp_types.{self.version}.")

    @abc.abstractmethod
    def notification(self, session_id: str, update: Any) -> Any:
        """The ``session/update`` params carrying ``update``."""
        raise NotImplementedError

    # -- events ---------------------------------------------------------------

    def blocks(self, data: Mapping[str, Any]) -> list[Any]:
        """A kept prompt's content blocks; blocks the other version cannot say become their text."""
        m = self.m
        if data.get("v") == self.version:
            return [
                m.UserMessageChunk.model_validate(
                    {"sessionUpdate": "user_message_chunk", "messageId": "-", "content": b}
                ).content
                for b in data["content"]
            ]
        out = []
        for block in data["content"]:
            try:
                out.append(
                    m.UserMessageChunk.model_validate(
                        {"sessionUpdate": "user_message_chunk", "messageId": "-", "content": block}
                    ).content
                )
            except ValueError:
                log.warning(
                    "a %s content block of type %r has no %s form: replayed as text",
                    data.get("v"),
                    block.get("type"),
                    self.version,
                )
                if block.get("text"):
                    out.append(m.TextContent(text=block["text"]))
        return out

    @abc.abstractmethod
    def tool_content(self, text: str | None, edits: Sequence[Edit]) -> list[Any]:
        """A tool call's content: its text, then its edits."""
        raise NotImplementedError

    def update(self, kind: str, mid: str | None, data: Mapping[str, Any]) -> Any | None:
        """The ``session/update`` an event is shown as, live or replayed (``None``: nothing to show)."""
        m = self.m
        if kind in ("agent", "thought"):
            return _CHUNK[kind](m)(message_id=mid, content=m.TextContent(text=data["text"]))
        if kind == "user":
            return self._user(mid, data)
        if kind == "tool":
            fields: dict[str, Any] = {
                k: data[k] for k in ("title", "kind", "status", "raw_input", "raw_output") if k in data
            }
            if "locations" in data:
                fields["locations"] = [m.ToolCallLocation(path=p) for p in data["locations"]]
            if "content" in data:
                edits = [Edit(*e) for e in data["content"]["edits"]]
                fields["content"] = self.tool_content(data["content"]["text"], edits)
            return self._tool(data["id"], bool(data.get("new")), fields)
        if kind == "plan":
            return self._plan([m.PlanEntry(content=c, status=st, priority=p) for c, st, p in data["entries"]])
        if kind == "usage":
            return m.UsageUpdate(used=data["used"], size=data["size"])
        if kind == "commands":
            return m.AvailableCommandsUpdate(available_commands=_commands(m, [Command(*c) for c in data["commands"]]))
        if kind == "title":
            return m.SessionInfoUpdate(title=data["title"])
        if kind == "mode":
            return self._mode(data["setup"])
        if kind == "config":
            return m.ConfigOptionUpdate(config_options=self.config(_setup_from(data["setup"])))
        if kind == "raw":
            return self._raw(data["update"]) if data["v"] == self.version else None
        log.warning("an event of unknown kind %r is not shown", kind)
        return None

    @abc.abstractmethod
    def _user(self, mid: str | None, data: Mapping[str, Any]) -> Any | None:
        raise NotImplementedError

    @abc.abstractmethod
    def _tool(self, tool_id: str, new: bool, fields: dict[str, Any]) -> Any:
        raise NotImplementedError

    @abc.abstractmethod
    def _plan(self, entries: list[Any]) -> Any:
        raise NotImplementedError

    @abc.abstractmethod
    def _mode(self, setup: Mapping[str, Any]) -> Any:
        raise NotImplementedError

    @abc.abstractmethod
    def _raw(self, wire: Any) -> Any:
        """An update kept as wire JSON (:meth:`Session.send`), as this version's model."""
        raise NotImplementedError

    # -- replay ----------------------------------------------------------------

    @abc.abstractmethod
    def piece(self, kind: str, mid: str, text: str, first: bool, last: bool) -> list[Any]:
        """The updates of one piece of a replayed message (``first``: its first on the wire; ``last``: of a stretch)."""
        raise NotImplementedError

    @abc.abstractmethod
    def message(self, role: str, text: str, mid: str, pieces: Sequence[str]) -> list[Any]:
        """The updates of one message an app replays itself (:meth:`Replay.message`), cut in ``pieces``."""
        raise NotImplementedError

    @abc.abstractmethod
    def user_replay(self, mid: str, blocks: Sequence[Any]) -> list[Any]:
        """The updates of a replayed prompt."""
        raise NotImplementedError
