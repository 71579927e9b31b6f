"""The records a session state holds: :class:`Message`, :class:`ToolCall`, :class:`Terminal`, :class:`Info`, :class:`Compaction`.

Each holds the version's models as they came (``Message[ContentBlock]``...);
``Message`` and ``Terminal`` also keep what a client needs to follow a
growing text or output at the cost of what is new. They know nothing of the
rules (``_rules``) nor of the state that changes them (``_base``).

Hand-written: the source is runtime/session_state/_values.py, which the
generator copies into the package unchanged.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

_Block = TypeVar("_Block")
_Content = TypeVar("_Content")
_Location = TypeVar("_Location")


# -- records ---------------------------------------------------------------
#
# Plain mutable records: the state owns them and changes them in place as
# updates arrive; read them, do not change them (copy the state first).


@dataclass(eq=True)
class Message(Generic[_Block]):
    """A message of the conversation.

    ``role`` is ``user``, ``agent`` or ``thought``. ``content`` holds the
    version's ``ContentBlock`` models. ``message_id`` is ``None`` only for a
    v1 message streamed without one. ``meta`` is the message's own
    ``_meta`` (set by message updates); ``chunk_meta`` maps an index of
    ``content`` to the ``_meta`` of the chunk that appended it (chunk-scoped,
    never merged into ``meta``).

    Following a growing message: ``text`` joins every text block (cached,
    but O(length) again after each change), so a client that redraws on
    every chunk should instead keep ``(revision, text_length)`` and print
    ``text_since(length)`` while ``revision`` is unchanged (O(new text));
    a changed ``revision`` means the text no longer starts with what it was
    (a message update rewrote it): redraw it from ``text``::

        rev, shown = seen.get(msg.message_id, (None, 0))
        if rev in (None, msg.revision):
            print(msg.text_since(shown), end="")
        else:
            print("(rewritten)", msg.text)
        seen[msg.message_id] = (msg.revision, msg.text_length)
    """

    message_id: str | None
    role: str
    content: list[_Block] = field(default_factory=list)
    meta: Any = None
    chunk_meta: dict[int, Any] = field(default_factory=dict)
    turn: int = 0
    """The turn whose message update (or first chunk) last reset the message."""

    def __post_init__(self) -> None:
        # an index of the text blocks of `content`, kept up to date as blocks are appended
        self._indexed: list[_Block] | None = None  # the content list indexed (replacing it re-indexes)
        self._parts: list[str] = []  # the text of each block indexed ("" for a non-text block)
        self._ends: list[int] = []  # where each part ends in the text
        self._joined: str | None = ""
        self._revision = 0

    def __copy__(self) -> Message[_Block]:
        # a copy indexes its own content (sharing the index would let one's appends corrupt the other's)
        twin = Message(self.message_id, self.role, list(self.content), self.meta, dict(self.chunk_meta), self.turn)
        twin._revision = self._revision
        return twin

    def _sync(self) -> None:
        content, parts = self.content, self._parts
        if content is self._indexed and len(content) == len(parts):
            return
        if content is self._indexed and len(content) > len(parts):  # blocks appended: index the new ones
            self._index(content[len(parts) :])
            return
        old = "".join(parts) if self._joined is None else self._joined
        self._indexed, self._parts, self._ends = content, [], []
        self._index(content)
        self._joined = new = "".join(self._parts)
        if not new.startswith(old):  # not a mere extension: a follower must redraw
            self._revision += 1

    def _index(self, blocks: list[_Block]) -> None:
        end = self._ends[-1] if self._ends else 0
        for block in blocks:
            part = getattr(block, "text", "") if getattr(block, "type", None) == "text" else ""
            part = part if isinstance(part, str) else ""
            end += len(part)
            self._parts.append(part)
            self._ends.append(end)
        if blocks:
            self._joined = None

    @property
    def text(self) -> str:
        """The text of the message's text blocks, joined (cached until the content changes)."""
        self._sync()
        if self._joined is None:
            self._joined = "".join(self._parts)
        return self._joined

    @property
    def text_length(self) -> int:
        """``len(text)``, without joining."""
        self._sync()
        return self._ends[-1] if self._ends else 0

    @property
    def revision(self) -> int:
        """Changes each time the text stops being an extension of what it was (chunks only append: it stays)."""
        self._sync()
        return self._revision

    def text_since(self, start: int) -> str:
        """``text[start:]``, at the cost of the text after ``start`` only (what was appended since a follower looked)."""
        self._sync()
        if start <= 0:
            return self.text
        i = bisect.bisect_right(self._ends, start)
        if i >= len(self._parts):
            return ""
        part = self._parts[i]
        head = part[start - (self._ends[i] - len(part)) :]
        return head + "".join(self._parts[i + 1 :]) if i + 1 < len(self._parts) else head


@dataclass(eq=True)
class ToolCall(Generic[_Content, _Location]):
    """A tool call: the fields its updates patched, ``content`` with the version's ``ToolCallContent`` models.

    A field never given (or cleared with ``null`` in v2) is ``None``; a
    status never given means ``pending`` by the protocol's default.
    """

    tool_call_id: str
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    content: list[_Content] = field(default_factory=list)
    locations: list[_Location] = field(default_factory=list)
    raw_input: Any = None
    raw_output: Any = None
    name: str | None = None
    meta: Any = None
    chunk_meta: dict[int, Any] = field(default_factory=dict)


@dataclass(eq=True)
class Terminal:
    """A display-only terminal (v2): ``output`` holds the decoded bytes (snapshots replace, chunks append).

    The bytes are kept in a growing buffer, so a chunk costs its own size;
    ``output`` makes ``bytes`` of the whole once per change. To follow a
    running command, keep ``(revision, output_size)`` and read
    ``output_since(size)`` while ``revision`` is unchanged (a snapshot that
    replaced the bytes with others changes it).
    """

    terminal_id: str
    command: str | None = None
    cwd: str | None = None
    output_meta: Any = None
    exit_status: Any = None
    meta: Any = None
    _buffer: bytearray = field(default_factory=bytearray, repr=False)
    _cache: bytes | None = field(default=b"", compare=False, repr=False)
    _revision: int = field(default=0, compare=False, repr=False)

    @property
    def output(self) -> bytes:
        """Every byte of output, decoded."""
        if self._cache is None:
            self._cache = bytes(self._buffer)
        return self._cache

    @output.setter
    def output(self, data: bytes) -> None:
        """A snapshot: replaces every byte held."""
        if not data.startswith(self._buffer):  # not a mere extension: a follower must redraw
            self._revision += 1
        self._buffer = bytearray(data)
        self._cache = None

    def append(self, data: bytes) -> None:
        """Add a chunk's bytes at the end (amortized O(len(data)))."""
        self._buffer += data
        self._cache = None

    @property
    def output_size(self) -> int:
        return len(self._buffer)

    @property
    def revision(self) -> int:
        """Changes each time a snapshot replaces the output with bytes that do not extend it (chunks leave it)."""
        return self._revision

    def output_since(self, start: int) -> bytes:
        """``output[start:]``, at the cost of those bytes only."""
        return bytes(self._buffer[max(start, 0) :])

    @property
    def exited(self) -> bool:
        return self.exit_status is not None

    def text(self, errors: str = "replace") -> str:
        """The output decoded as UTF-8 (the bytes are whole, so a character split across chunks decodes once)."""
        return self._buffer.decode("utf-8", errors)


@dataclass(eq=True)
class Info:
    """Session metadata from ``session_info_update``; ``None`` means never given (or cleared)."""

    title: str | None = None
    updated_at: str | None = None
    archived: bool | None = None
    meta: Any = None


@dataclass(eq=True)
class Compaction:
    """A context compaction (unstable surface): its status, summary blocks and error."""

    compaction_id: str
    status: Any = None
    summary: list[Any] = field(default_factory=list)
    error: str | None = None
