"""The two sides of a connection, typed by version: :class:`AgentConnection` and :class:`ClientConnection`.

Also :func:`serve`, :func:`serve_transport` and :func:`serve_stdio`, which run
an agent. What a connection does is in :mod:`.core`; this module adds the
side's defaults and ``initialize``, and names no protocol version.

What a type checker sees of this module is the stub beside it in the package,
``sides.pyi``, generated from templates/package/_connection/sides.pyi.jinja2
for the versions in schema/: one overload per version of the constructor,
:meth:`~AgentConnection.on_transport` and :meth:`~AgentConnection.as_version`
(``versions=("v1",)`` gives v1's peer), so a new version types its connections
with no edit here. Checked in place (``mypy runtime``), the module is read as
written, with the version-neutral types below.

Hand-written: the source is runtime/_connection/sides.py, which the generator
copies into the package unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from typing_extensions import Self, TypeVar

from .._errors import RequestError
from .core import Connection, Handler
from .limits import log
from .negotiation import VERSIONS
from .pipes import stdio_streams
from .stdio import Reader, Writer
from .transport import Transport

if TYPE_CHECKING:
    from typing import TypedDict

    from .process import AgentProcess

    class _TransportOptions(TypedDict, total=False):
        """The keyword options of a connection over any transport (see :class:`Connection`)."""

        strict_capabilities: bool
        max_in_flight: int
        max_queued: int
        max_batch: int
        close_timeout: float

    class _Options(_TransportOptions, total=False):
        """The keyword options of a connection over a reader/writer pair."""

        max_line_size: int

    class _SpawnOptions(_Options, total=False):
        env: Mapping[str, str] | None
        cwd: str | None
        stderr: int | None
        exit_timeout: float


__all__ = ["AgentConnection", "ClientConnection", "serve", "serve_stdio", "serve_transport"]

# The types a connection's members have once the version is settled: the
# peer, the peer's side of ``initialize``, the handler. The stub gives each
# its versions' union as the default (and one version's types to a connection
# made for one); read in place they default to Any, as no version is named here.
# Covariant: a v1-only connection is one of "either version", so a handler
# written for ``AgentConnection`` takes it.
_ClientPeerT = TypeVar("_ClientPeerT", covariant=True, default=Any)
_InitRequestT = TypeVar("_InitRequestT", covariant=True, default=Any)
_AgentPeerT = TypeVar("_AgentPeerT", covariant=True, default=Any)
_InitResponseT = TypeVar("_InitResponseT", covariant=True, default=Any)
_AgentHandlerT = TypeVar("_AgentHandlerT", covariant=True, default=object)
_ClientHandlerT = TypeVar("_ClientHandlerT", covariant=True, default=object)


class AgentConnection(Connection[_ClientPeerT, _InitRequestT, _AgentHandlerT]):
    """This process is the agent: ``handler`` implements the version's ``Agent`` methods.

    One agent serves a client of any version in ``versions`` (default: both):
    the client's ``initialize`` settles it, as the protocol says (the version
    asked for when spoken here, else the latest one spoken here). The
    handler reads :attr:`version` to know which models to answer with;
    :attr:`peer` is the typed ``ClientPeer`` of that version.

    For a type checker it is ``AgentConnection[ClientPeer, InitializeRequest,
    Handler]``: made with ``versions=("v1",)`` (or ``("v2",)``) it has that
    version's types; one that speaks both has their unions, and
    :meth:`as_version` narrows it once the version is settled. The handler's
    type is what the factory returns (or the object given).
    """

    side = "agent"
    default_versions = VERSIONS

    @classmethod
    def on_transport(cls, transport: Transport, handler: Handler = None, **options: Any) -> Self:
        """A connection over ``transport`` (see :class:`~acp_types.connection.Transport`), typed as the constructor.

        ``options`` are the constructor's but ``max_line_size``, which is the stdio transport's.
        """
        return cast(Self, cls._on_transport(transport, handler, **options))

    def as_version(self, version: str) -> Self:
        """This connection, typed for ``version``; ``ValueError`` unless it is the settled one."""
        return cast(Self, self._as_version(version))


class ClientConnection(Connection[_AgentPeerT, _InitResponseT, _ClientHandlerT]):
    """This process is the client: ``handler`` implements the version's ``Client`` methods.

    ``versions`` lists the versions spoken, preferred first (default v2,
    then v1). :meth:`initialize` sends the preferred version's request and
    accepts the agent's answer in any listed version; :attr:`version` is
    then the settled one and :attr:`peer` its typed ``AgentPeer``.

    For a type checker it is ``ClientConnection[AgentPeer, InitializeResponse,
    Handler]``, typed like :class:`AgentConnection`: one version's types
    when made for one, else unions that :meth:`as_version` narrows.
    """

    side = "client"
    default_versions = tuple(reversed(VERSIONS))
    process: AgentProcess | None = None
    """The agent's process, for a connection made by :func:`spawn_agent`."""

    @classmethod
    def on_transport(cls, transport: Transport, handler: Handler = None, **options: Any) -> Self:
        """A connection over ``transport`` (see :class:`~acp_types.connection.Transport`), typed as the constructor.

        ``options`` are the constructor's but ``max_line_size``, which is the stdio transport's.
        """
        return cast(Self, cls._on_transport(transport, handler, **options))

    def as_version(self, version: str) -> Self:
        """This connection, typed for ``version``; ``ValueError`` unless it is the settled one."""
        return cast(Self, self._as_version(version))

    async def initialize(
        self,
        params: Any,
        *,
        fallback: Any = None,
    ) -> _InitResponseT:
        """Send ``initialize`` and return the agent's answer, in whichever listed version it came.

        ``params`` is the ``InitializeRequest`` of the version to ask for (a
        listed one; its version is used until the answer settles it). Raises
        :class:`UnsupportedVersion` when the agent answers a version not listed.

        When the agent answers in another version than asked (a v1 agent
        asked v2), it has read a request of the other version, which says
        nothing it can use (a v2 ``initialize`` has no ``clientCapabilities``:
        no ``fs``, no ``terminal``). So ``initialize`` is sent again in the
        settled version: ``fallback`` when given, else the equivalent of
        ``params`` (the client's info, the capabilities both versions share,
        and each capability of a method this handler implements, such as
        ``fs.readTextFile`` for ``fs_read_text_file``); its answer is returned.
        An agent that refuses the repeat keeps the first answer (logged).
        """
        asked = self._version = self._negotiation.asked(params, self._version)
        result = await self.request("initialize", params)
        if self._version is asked:
            return cast(_InitResponseT, result)
        again = (
            fallback
            if fallback is not None
            else self._negotiation.equivalent_initialize(self._version, params, self.handler)
        )
        try:
            return cast(_InitResponseT, await self.request("initialize", again))
        except RequestError as exc:
            log.warning(
                "the agent refused initialize in ACP %s after answering ACP %s to %s: %s",
                self.version,
                self.version,
                asked.name,
                exc,
            )
            return cast(_InitResponseT, result)


async def serve(
    reader: Reader,
    writer: Writer,
    handler: Handler,
    *,
    versions: Sequence[str] | None = None,
    strict_capabilities: bool = False,
    **limits: Any,
) -> None:
    """Run an agent on a reader/writer pair until the client goes away (``limits``: see :class:`Connection`).

    ``strict_capabilities=True`` refuses, before sending, a client method the
    client did not advertise (:class:`CapabilityNotAdvertised`).
    """
    async with AgentConnection(
        reader, writer, handler, versions=versions, strict_capabilities=strict_capabilities, **limits
    ) as conn:
        await conn.wait_closed()


async def serve_stdio(
    handler: Handler, *, versions: Sequence[str] | None = None, strict_capabilities: bool = False, **limits: Any
) -> None:
    """Run an agent on this process's stdin/stdout until the client closes stdin.

    It returns once every answer has been written out (or ``close_timeout``
    has passed). ``strict_capabilities`` and ``limits``: as for :func:`serve`.
    """
    reader, writer = await stdio_streams()
    await serve(reader, writer, handler, versions=versions, strict_capabilities=strict_capabilities, **limits)


async def serve_transport(
    transport: Transport,
    handler: Handler,
    *,
    versions: Sequence[str] | None = None,
    strict_capabilities: bool = False,
    **limits: Any,
) -> None:
    """Run an agent on ``transport`` until the client goes away (``limits``: see :class:`Connection`)."""
    conn = AgentConnection.on_transport(
        transport, handler, versions=versions, strict_capabilities=strict_capabilities, **limits
    )
    async with conn:
        await conn.wait_closed()
