"""The remote transport's limits and the address rules it is secure by default with.

Hand-written: the source is runtime/remote/_limits.py, which the generator copies into the package unchanged.
"""

from __future__ import annotations

import dataclasses
import ipaddress

from ..connection import DEFAULT_MAX_LINE_SIZE

PATH = "/acp"
"""The one endpoint of both profiles, as in the RFD."""

HEADER_CONNECTION_ID = "Acp-Connection-Id"
HEADER_SESSION_ID = "Acp-Session-Id"


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one server allows each peer, with the defaults; docs/remote.md has what a peer sees at each.

    The names and defaults of ``max_buffered_bytes``, ``output_stall``, ``max_session_streams`` and
    ``max_id_length`` are the TypeScript SDK's (``maxBufferedBytes``...), so a peer sees the same
    server whichever SDK serves it. The connection's own limits (``max_in_flight``, ``max_queued``...)
    apply below these as on stdio.
    """

    max_connections: int = 1000
    """Open connections of both profiles; one more ``initialize`` POST is answered 503, one more WebSocket
    upgrade 503."""
    max_message_size: int = DEFAULT_MAX_LINE_SIZE
    """Bytes of one POST body (413 beyond) or one WebSocket frame (closed with 1009 beyond)."""
    max_buffered_bytes: int = 64 * 1024 * 1024
    """Bytes of output a peer may leave unread (SSE streams without or behind their reader, a WebSocket's
    queue); at it the agent's writes wait, and so do the peer's requests (a POST is answered once room
    is made)."""
    output_stall: float = 60.0
    """Seconds a peer may read none of the agent's output while the agent (past 64 KiB unsent, or at
    ``max_buffered_bytes``) or the peer's next request waits on it; then its connection is closed (the
    SSE streams end, a WebSocket is closed with 1008)."""
    max_session_streams: int = 1024
    """Session streams of one connection that buffer output with no reader attached; one more ends
    the connection (a POST naming a new session is answered 400)."""
    max_id_length: int = 1024
    """Characters of a request id or session id; a longer one is answered 400 (HTTP) or closes the
    WebSocket with 1008."""
    idle_timeout: float = 600.0
    """Seconds a Streamable HTTP connection may go with no request and no open stream; then it is
    ended as a DELETE would (later requests get 404)."""
    request_timeout: float = 30.0
    """Seconds a POST body may take to arrive whole; a slower one is answered 408."""
    header_timeout: float = 10.0
    """Seconds a request's line and headers may take to arrive whole, from the socket's opening or the
    previous answer; then the socket is closed (uvicorn has no such deadline of its own). Only
    :func:`acp_types.remote.serve` applies it."""
    max_sockets: int = 4096
    """Open sockets of the server (uvicorn's ``limit_concurrency``, SSE streams and slow clients included);
    a request beyond it is answered 503. Only :func:`acp_types.remote.serve` applies it."""
    ping_interval: float | None = 20.0
    """Seconds between WebSocket pings; a peer that answers none within ``ping_interval`` more is closed."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is not None and not value > 0:
                raise ValueError(f"Limits.{field.name} must be positive")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, maybe in brackets) is this machine only."""
    host = host.strip("[]").lower()
    if host in ("localhost", "localhost.", "ip6-localhost") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_of(netloc: str) -> str:
    """The host of ``host[:port]`` (brackets kept off an IPv6 address)."""
    if netloc.startswith("["):
        return netloc[1 : netloc.find("]")] if "]" in netloc else netloc
    if netloc.count(":") > 1:  # a bare IPv6 address
        return netloc
    return netloc.rpartition(":")[0] if ":" in netloc else netloc
