"""Webhook subscriptions (admin) and the signature every delivery carries."""

import hashlib
import hmac
import secrets
from datetime import timedelta
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.errors import InvalidInput, NotFound
from backend.events.bus import EVENT_TYPES
from backend.outbox.models import Webhook, WebhookDelivery

SIGNATURE_HEADER = "X-Prefixdesk-Signature"
TIMESTAMP_HEADER = "X-Prefixdesk-Timestamp"


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """HMAC-SHA256 over `timestamp.body`: a receiver checks both, so replays of old bodies fail."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def backoff(attempts: int, base_s: float) -> timedelta:
    return timedelta(seconds=min(base_s * 2 ** (attempts - 1), 3600))


async def create_webhook(db: AsyncSession, *, url: str, events: list[str]) -> Webhook:
    unknown = sorted(set(events) - set(EVENT_TYPES))
    if unknown:
        raise InvalidInput(f"unknown event types {unknown}; known: {list(EVENT_TYPES)}")
    if not url.startswith(("http://", "https://")):
        raise InvalidInput("a webhook URL starts with http:// or https://")
    try:
        host = urlsplit(url).hostname
    except ValueError as error:  # "http://[" and the like
        raise InvalidInput(f"a webhook URL must be a valid URL: {error}") from None
    if not host:
        raise InvalidInput("a webhook URL names a host")
    webhook = Webhook(url=url, secret=secrets.token_urlsafe(32), events=events)
    db.add(webhook)
    await db.flush()
    return webhook


async def list_webhooks(db: AsyncSession) -> list[Webhook]:
    return list(await db.scalars(select(Webhook).order_by(Webhook.id)))


async def delete_webhook(db: AsyncSession, webhook_id: int) -> None:
    webhook = await db.get(Webhook, webhook_id)
    if webhook is None:
        raise NotFound(f"no webhook {webhook_id}")
    await db.delete(webhook)


async def list_deliveries(db: AsyncSession, webhook_id: int) -> list[WebhookDelivery]:
    return list(
        await db.scalars(
            select(WebhookDelivery)
            .where(WebhookDelivery.webhook_id == webhook_id)
            .order_by(WebhookDelivery.id)
        )
    )
