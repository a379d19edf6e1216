"""Outbox rows for events: one delivery per subscribed webhook, added in the change's transaction.

A delivery then exists exactly if its change was committed; the webhook worker sends it later.
"""

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.db import utcnow
from backend.events.bus import EVENT_TYPES, Event
from backend.outbox.models import Webhook, WebhookDelivery


async def stage_deliveries(db: AsyncSession, events: list[Event]) -> None:
    events = [event for event in events if event.type in EVENT_TYPES]  # not those between processes
    if not events:
        return
    hooks = list(await db.scalars(select(Webhook).where(Webhook.active.is_(True))))
    now = utcnow()
    for event in events:
        for hook in hooks:
            if not hook.events or event.type in hook.events:
                db.add(
                    WebhookDelivery(
                        webhook_id=hook.id,
                        event_id=event.id,
                        event_type=event.type,
                        payload={
                            "id": event.id,
                            "type": event.type,
                            "created_at": event.created_at,
                            "conversation_id": event.conversation_id,
                            "data": event.data,
                        },
                        next_attempt_at=now,
                    )
                )
