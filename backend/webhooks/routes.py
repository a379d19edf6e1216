"""Webhook subscriptions (admin)."""

from datetime import datetime

from fastapi import APIRouter, Request, status
from pydantic import BaseModel, Field

from backend.agents.auth import CurrentAdmin
from backend.api.inputs import JsonRoute, RowIdPath, StorableText
from backend.conversations.schemas import ErrorBody
from backend.events.bus import EVENT_TYPES
from backend.webhooks import service

router = APIRouter(prefix="/api/v1/webhooks", tags=["admin: webhooks"], route_class=JsonRoute)
ERRORS = {code: {"model": ErrorBody} for code in (401, 403, 404, 422)}


class WebhookIn(BaseModel):
    url: StorableText = Field(max_length=2000, examples=["https://crm.example.com/hooks/prefixdesk"])
    events: list[str] = Field(default_factory=list, description=f"Any of {list(EVENT_TYPES)}; empty for all.")


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
async def list_webhooks(_admin: CurrentAdmin, request: Request) -> list[WebhookOut]:
    async with request.app.state.sessions() as db:
        return [WebhookOut.model_validate(w) for w in await service.list_webhooks(db)]


@router.post("", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def create_webhook(body: WebhookIn, _admin: CurrentAdmin, request: Request) -> WebhookCreated:
    async with request.app.state.sessions() as db:
        webhook = await service.create_webhook(db, url=body.url, events=body.events)
        await db.commit()
    return WebhookCreated.model_validate(webhook)


@router.delete("/{webhook_id}", status_code=status.HTTP_204_NO_CONTENT, responses=ERRORS)
async def delete_webhook(webhook_id: RowIdPath, _admin: CurrentAdmin, request: Request) -> None:
    async with request.app.state.sessions() as db:
        await service.delete_webhook(db, webhook_id)
        await db.commit()


@router.get("/{webhook_id}/deliveries", responses=ERRORS)
async def list_deliveries(webhook_id: RowIdPath, _admin: CurrentAdmin, request: Request) -> list[DeliveryOut]:
    async with request.app.state.sessions() as db:
        return [DeliveryOut.model_validate(d) for d in await service.list_deliveries(db, webhook_id)]
