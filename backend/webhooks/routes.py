"""Webhook subscriptions (admin)."""

from datetime import datetime
from urllib.parse import urlsplit

from fastapi import APIRouter, status
from pydantic import BaseModel, Field

from backend.agents import audit
from backend.agents.auth import CurrentAdmin
from backend.api.deps import Work
from backend.api.errors import error_responses
from backend.api.inputs import JsonRoute, RowIdPath, StorableText
from backend.events.bus import EVENT_TYPES
from backend.webhooks import service

router = APIRouter(prefix="/api/v1/webhooks", tags=["admin: webhooks"], route_class=JsonRoute)
ERRORS = error_responses(401, 403, 404, 422)


class WebhookIn(BaseModel):
    # The schema states what the service checks (and refuses in words of its own).
    url: StorableText = Field(
        max_length=2000,
        # A host name or IPv4 address (no brackets: a malformed IPv6 literal cannot be parsed),
        # an optional port, then anything.
        json_schema_extra={"pattern": "^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?([/?#]|$)"},
        examples=["https://crm.example.com/hooks/prefixdesk"],
    )
    events: list[str] = Field(
        default_factory=list,
        description="The event types to send; empty for all.",
        json_schema_extra={"items": {"type": "string", "enum": list(EVENT_TYPES)}},
    )


class WebhookOut(BaseModel):
    id: int
    url: str
    events: list[str]
    active: bool
    created_at: datetime

    model_config = {"from_attributes": True}


class WebhookCreated(WebhookOut):
    secret: str = Field(description="Signs each delivery (HMAC-SHA256 of `timestamp.body`); shown once.")


class DeliveryOut(BaseModel):
    id: int
    event_id: str
    event_type: str
    status: str
    attempts: int
    last_error: str | None
    next_attempt_at: datetime
    delivered_at: datetime | None

    model_config = {"from_attributes": True}


@router.get("", responses=ERRORS)
async def list_webhooks(_admin: CurrentAdmin, work: Work) -> list[WebhookOut]:
    return [WebhookOut.model_validate(w) for w in await service.list_webhooks(work.db)]


@router.post("", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def create_webhook(body: WebhookIn, admin: CurrentAdmin, work: Work) -> WebhookCreated:
    webhook = await service.create_webhook(work.db, url=body.url, events=body.events)
    # The host only: a URL's path or query may carry the receiver's own secret.
    audit.record(
        work.db, admin, audit.WEBHOOK_CREATED, "webhook", webhook.id, host=urlsplit(webhook.url).hostname
    )
    return WebhookCreated.model_validate(webhook)


@router.delete("/{webhook_id}", status_code=status.HTTP_204_NO_CONTENT, responses=ERRORS)
async def delete_webhook(webhook_id: RowIdPath, admin: CurrentAdmin, work: Work) -> None:
    await service.delete_webhook(work.db, webhook_id)
    audit.record(work.db, admin, audit.WEBHOOK_DELETED, "webhook", webhook_id)


@router.get("/{webhook_id}/deliveries", responses=ERRORS)
async def list_deliveries(webhook_id: RowIdPath, _admin: CurrentAdmin, work: Work) -> list[DeliveryOut]:
    return [DeliveryOut.model_validate(d) for d in await service.list_deliveries(work.db, webhook_id)]
