"""CloudEvents 1.0 envelope with Cortex's `orgid` / `tenantid` extension attributes."""

from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID, uuid4

from pydantic import BaseModel, ConfigDict, Field


class Envelope(BaseModel):
    """One event on the wire. Attribute names are CloudEvents' own (lowercase), `data` is the payload."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, max_length=200, description="Unique event id; also sent as Nats-Msg-Id.")
    source: str = Field(min_length=1, max_length=500, description="URI-reference of the producer.")
    type: str = Field(min_length=1, max_length=200, description="Event type, e.g. `kb.document.upserted`.")
    specversion: Literal["1.0"] = "1.0"
    time: datetime = Field(description="When the event happened (RFC 3339).")
    subject: str | None = Field(default=None, max_length=500, description="The entity the event is about.")
    datacontenttype: Literal["application/json"] = "application/json"
    orgid: UUID = Field(description="Organization the event belongs to; equals the subject's org token.")
    tenantid: str | None = Field(default=None, max_length=200, description="Tenant of the organization.")
    data: dict[str, Any] = Field(description="The payload, validated against the model for `type`.")

    def to_wire(self) -> bytes:
        return self.model_dump_json(exclude_none=True).encode()


def new_envelope(
    *,
    event_type: str,
    source: str,
    org_id: UUID,
    data: dict[str, Any],
    subject: str | None = None,
    tenant_id: str | None = None,
    event_id: str | None = None,
) -> Envelope:
    return Envelope(
        id=event_id or str(uuid4()),
        source=source,
        type=event_type,
        time=datetime.now(UTC),
        subject=subject,
        orgid=org_id,
        tenantid=tenant_id,
        data=data,
    )
