"""Protocol errors a handler raises and a caller receives, shared by every version of acp_types.

A handler of an incoming request answers with an error by raising
:class:`RequestError` with a code from the version's error table
(``acp_types.v1.RESOURCE_NOT_FOUND`` and the rest) or one of JSON-RPC's own;
a request sent to the peer that is answered with an error raises the same
class on the caller's side. The connection's own failures of a request sent
(:class:`ConnectionClosed`, :class:`ResponseTooLarge`,
:class:`CapabilityNotAdvertised`, :class:`UnsupportedVersion`) are here too.
This module imports nothing heavy, so the
generated ``Agent`` / ``Client`` stubs can use it without loading asyncio.

Hand-written: the source is runtime/_errors.py, which the generator copies
into the package unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

METHOD_NOT_FOUND = -32601
DATA_SHOWN = 300
"""The most characters of ``data`` that ``str(RequestError)`` shows."""


class RequestError(Exception):
    """A JSON-RPC error answer: ``code``, ``message`` and optional ``data``.

    Raise it from a handler to answer the request with this error (the
    message and data go to the peer as they are, so keep secrets out). When a
    request you sent is answered with an error, awaiting it raises this class.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data

    def __str__(self) -> str:
        """``message (code N)``, then ``data`` as compact JSON, cut to :data:`DATA_SHOWN` characters.

        The peer's real reason is often only in ``data``; a long ``data`` is
        cut so that a log line stays a line.
        """
        text = f"{self.message} (code {self.code})"
        if self.data is None:
            return text
        try:
            shown = json.dumps(self.data, separators=(",", ":"), ensure_ascii=False, default=repr)
        except ValueError:  # a circular structure
            shown = repr(self.data)
        if len(shown) > DATA_SHOWN:
            shown = shown[: DATA_SHOWN - 1] + "\u2026"
        return f"{text}: {shown}"

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC error object: ``{"code": ..., "message": ...}`` and ``data`` when set."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class MethodNotImplemented(RequestError):
    """The handler does not implement the method: answered with -32601 (method not found)."""

    def __init__(self, method: str) -> None:
        super().__init__(METHOD_NOT_FOUND, f"method not implemented: {method}", None)
        self.method = method


def not_implemented(method: str) -> MethodNotImplemented:
    """The error the generated ``Agent`` / ``Client`` stubs raise for a method a subclass leaves out."""
    return MethodNotImplemented(method)


class ConnectionClosed(ConnectionError):
    """The connection ended (end of input, the peer exited, or ``close()``) before the answer came."""


class ResponseTooLarge(ConnectionError):
    """The peer answered with a message longer than the transport's limit: it was skipped unread."""

    def __init__(self, method: str, rid: int | str | None, limit: int) -> None:
        super().__init__(f"the answer to {method!r} (request {rid!r}) was longer than {limit} bytes and was skipped")
        self.method = method
        self.id = rid
        self.limit = limit


class CapabilityNotAdvertised(PermissionError):
    """Strict mode: the peer did not advertise the capability that gates ``method``."""

    def __init__(self, method: str, capability: str) -> None:
        super().__init__(f"{method!r} needs the capability {capability!r}, which the agent did not advertise")
        self.method = method
        self.capability = capability


class UnsupportedVersion(ConnectionError):
    """The agent answered ``initialize`` with a protocol version this client does not speak."""

    def __init__(self, protocol_version: Any, versions: Sequence[str]) -> None:
        super().__init__(
            f"the agent answered protocolVersion {protocol_version!r}; this client speaks " + ", ".join(versions)
        )
        self.protocol_version = protocol_version
