"""A plain pydantic model of the agent_message_chunk notification, with none of ACP's rules.

It has the shape of the generated v1 models (same fields, aliases, strict
validation, unknown keys kept) but no tolerant receivers and only closed,
native discriminators. Its throughput is the bound for any pydantic-based
model of this message: the benchmark reports it beside ours and the SDK's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Base(BaseModel):
    model_config = ConfigDict(
        extra="allow", validate_by_name=True, validate_by_alias=True, serialize_by_alias=True, strict=True
    )


class TextContent(_Base):
    type: Literal["text"]
    text: str
    annotations: dict[str, Any] | None = None
    meta: Annotated[dict[str, Any] | None, Field(alias="_meta")] = None


class ImageContent(_Base):
    type: Literal["image"]
    data: str
    mime_type: Annotated[str, Field(alias="mimeType")]


class AgentMessageChunk(_Base):
    session_update: Annotated[Literal["agent_message_chunk"], Field(alias="sessionUpdate")]
    message_id: Annotated[str | None, Field(alias="messageId")] = None
    content: Annotated[TextContent | ImageContent, Field(discriminator="type")]
    meta: Annotated[dict[str, Any] | None, Field(alias="_meta")] = None


class PlanUpdate(_Base):
    session_update: Annotated[Literal["plan"], Field(alias="sessionUpdate")]


class SessionNotification(_Base):
    session_id: Annotated[str, Field(alias="sessionId")]
    update: Annotated[AgentMessageChunk | PlanUpdate, Field(discriminator="session_update")]
    meta: Annotated[dict[str, Any] | None, Field(alias="_meta")] = None
