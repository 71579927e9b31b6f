"""Version negotiation, in one place: which version a connection settles on, and reading ``initialize`` in it.

An agent settles on the version the client's ``initialize`` asks for when it
speaks it, else on the latest it speaks, and reads that ``initialize`` in the
settled version (or, when it does not read there, in the version it asks for,
if this package knows it). A client settles on the version of the agent's
answer when it is one of its own. Nothing else in the connection looks at a
protocol version.

Hand-written: the source is runtime/_connection/negotiation.py, which the
generator copies into the package unchanged.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from acp_types import VERSIONS as _PACKAGE_VERSIONS

from .._errors import UnsupportedVersion
from .._jsonrpc import InvalidResult, MessageError, Request
from .._runtime import MethodSpec, to_wire

__all__ = ["CANCEL_REQUEST", "VERSIONS", "Negotiation", "Version"]

VERSIONS: tuple[str, ...] = tuple(_PACKAGE_VERSIONS)
"""The versions this package speaks, oldest first (``acp_types.VERSIONS``)."""

CANCEL_REQUEST = "$/cancel_request"


class Version:
    """What a connection needs of one version module, looked up once."""

    def __init__(self, name: str) -> None:
        if name not in VERSIONS:
            raise ValueError(f"unknown ACP version {name!r}; known: {', '.join(VERSIONS)}")
        mod = importlib.import_module(f"acp_types.{name}")
        self.name = name
        self.module = mod
        self.number: int = mod.PROTOCOL_VERSION
        self.methods: Mapping[str, MethodSpec] = mod.METHODS
        self.parse: Callable[..., Any] = importlib.import_module(f"acp_types.{name}.messages").parse_message
        self.method_allowed: Callable[[str, Any], bool] = mod.method_allowed
        # v1 gates $/cancel_request by nothing its peers advertise, and agents answer it -32601
        self.sends_cancel = name != "v1" and CANCEL_REQUEST in self.methods


def implements(handler: object, name: str, interface: type | None) -> bool:
    """Whether ``handler`` has a method ``name`` of its own (not the stub of the version's interface)."""
    fn = getattr(type(handler), name, None) or getattr(handler, name, None)
    if fn is None:
        return False
    return interface is None or fn is not getattr(interface, name, None)


class Negotiation:
    """The versions one connection speaks, preferred first, and the rules that pick one of them."""

    def __init__(self, versions: Sequence[str]) -> None:
        if not versions:
            raise ValueError("a connection needs at least one version")
        self.versions = {name: Version(name) for name in versions}
        self.first = self.versions[versions[0]]

    def choose(self, requested: Any) -> Version:
        """The agent's rule: the version asked for when spoken here, else the latest spoken here."""
        for version in self.versions.values():
            if type(requested) is int and version.number == requested:
                return version
        return max(self.versions.values(), key=lambda v: v.number)

    def agent_initialize(self, first: Request | MessageError, read_in: Version) -> tuple[Version, Any]:
        """A client's first ``initialize`` (parsed, or refused, in ``read_in``): the version to settle and the request.

        The request is that of the settled version when it reads there, else
        of the version it asks for, if this package knows it (the agent then
        answers with its own version, and the client decides); when it reads
        in neither, the last :class:`MessageError` is returned instead.
        """
        if isinstance(first, Request):
            params = first.params
            requested = getattr(params, "protocol_version", None)
            wire: Any = first.to_wire()
        else:
            wire = first.data
            params = wire.get("params") if isinstance(wire, Mapping) else None
            requested = params.get("protocolVersion") if isinstance(params, Mapping) else None
        chosen = self.choose(requested)
        if isinstance(first, Request) and chosen is read_in:
            return chosen, first
        result: Any = first
        tried = {read_in.name}
        for name in (chosen.name, *(n for n in VERSIONS if n != chosen.name)):
            version = self.versions.get(name) or Version(name)
            if name in tried or (version is not chosen and version.number != requested):
                continue
            tried.add(name)
            try:
                return chosen, version.parse(wire)
            except MessageError as exc:
                result = exc
        return chosen, result

    def client_answer(self, asked: Version, answer: Any) -> Any:
        """The agent's answer to ``initialize`` (a result model, or an :class:`InvalidResult` in ``asked``).

        ``(version to settle, result model)`` when it is in a version spoken
        here; otherwise the exception the caller gets.
        """
        if isinstance(answer, InvalidResult):
            data = answer.data if isinstance(answer.data, Mapping) else {}
            wire = data.get("result")
        else:
            if getattr(answer, "protocol_version", None) == asked.number:
                return asked, answer
            wire = answer.to_wire()
        number = wire.get("protocolVersion") if isinstance(wire, Mapping) else None
        for version in self.versions.values():
            if version.number == number and version is not asked:
                try:
                    return version, version.methods["initialize"].validate_result(wire)
                except ValidationError as exc:
                    return answer if isinstance(answer, InvalidResult) else exc
        return answer if isinstance(answer, InvalidResult) else UnsupportedVersion(number, list(self.versions))

    def asked(self, params: Any, current: Version) -> Version:
        """The version a client's ``initialize`` params belong to (``current`` when none spoken here)."""
        module = type(params).__module__
        for version in self.versions.values():
            if module.startswith(f"acp_types.{version.name}."):
                return version
        return current

    @staticmethod
    def equivalent_initialize(version: Version, params: Any, handler: object) -> Any:
        """``params`` (an ``initialize`` of another version) as ``version``'s ``InitializeRequest``.

        The client's info, the capabilities both versions share, and each
        capability of a method ``handler`` implements.
        """
        wire = to_wire(params) if isinstance(params, BaseModel) else dict(params)
        info_key, caps_key = ("clientInfo", "clientCapabilities") if version.name == "v1" else ("info", "capabilities")
        other_info = wire.get("clientInfo", wire.get("info"))
        other_caps = wire.get("clientCapabilities", wire.get("capabilities"))
        request: dict[str, Any] = {"protocolVersion": version.number}
        if isinstance(other_info, Mapping):
            request[info_key] = dict(other_info)
        caps: dict[str, Any] = {}
        spec = version.methods["initialize"]
        for key, value in other_caps.items() if isinstance(other_caps, Mapping) else ():
            try:  # a capability both versions have, in the same shape
                spec.validate_params({**request, caps_key: {key: value}})
                caps[key] = value
            except ValidationError:
                continue
        interface = getattr(version.module, "Client", None)
        for method in version.methods.values():
            path = method.capability
            if method.side != "client" or path is None or path[0] != caps_key or len(path) < 2:
                continue
            if not implements(handler, method.handler, interface):
                continue
            if len(path) == 2:
                caps[path[1]] = True
            else:
                node = caps.setdefault(path[1], {})
                if isinstance(node, dict):
                    node[path[2]] = True
        request[caps_key] = caps
        try:
            return spec.validate_params(request)
        except ValidationError:  # the other version's info does not fit: send without it
            request.pop(info_key, None)
            return spec.validate_params(request)
