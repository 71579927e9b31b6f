"""Plain pydantic models of the agent_message_chunk notification, with none of ACP's rules.

``SessionNotification`` has the shape of the generated v1 models and their
config (same fields and aliases, strict validation, unknown keys kept, written
back with omitted fields left out) but no tolerant receivers and only closed,
native discriminators: the bound of any pydantic model of this message that
keeps ACP's wire form. ``BareSessionNotification`` is the same shape with the
config of the SDK's models (unknown keys dropped, lax, written with
``exclude_none`` so an explicit ``null`` is lost): what a model without those
rules costs. The benchmark reports both beside ours and the SDK's.
"""

# No ``from __future__ import annotations``: the classes are made in a function,
# whose names a postponed annotation could not see.

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Base(BaseModel):
    model_config = ConfigDict(
        extra="allow", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True, strict=True
    )


class _Bare(BaseModel):
    model_config = ConfigDict(validate_by_name=True, validate_by_alias=True, serialize_by_alias=True)


def _models(base: type[BaseModel]) -> type[BaseModel]:
    class TextContent(base):  # type: ignore[misc,valid-type]
        type: Literal["text"]
        text: str
        annotations: dict[str, Any] | None = None
        meta: Annotated[dict[str, Any] | None, Field(alias="_meta")] = None

    class ImageContent(base):  # type: ignore[misc,valid-type]
        type: Literal["image"]
        data: str
        mime_type: Annotated[str, Field(alias="mimeType")]

    class AgentMessageChunk(base):  # type: ignore[misc,valid-type]
        session_update: Annotated[Literal["agent_message_chunk"], Field(alias="sessionUpdate")]
        message_id: Annotated[str | None, Field(alias="messageId")] = None
        content: Annotated[TextContent | ImageContent, Field(discriminator="type")]
        meta: Annotated[dict[str, Any] | None, Field(alias="_meta")] = None

    class PlanUpdate(base):  # type: ignore[misc,valid-type]
        session_update: Annotated[Literal["plan"], Field(alias="sessionUpdate")]

    class SessionNotification(base):  # type: ignore[misc,valid-type]
        session_id: Annotated[str, Field(alias="sessionId")]
        update: Annotated[AgentMessageChunk | PlanUpdate, Field(discriminator="session_update")]
        meta: Annotated[dict[str, Any] | None, Field(alias="_meta")] = None

    return SessionNotification


SessionNotification: Any = _models(_Base)
BareSessionNotification: Any = _models(_Bare)
