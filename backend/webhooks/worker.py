"""Sends due webhook deliveries, retrying with exponential backoff; never on a chat turn's path."""

import asyncio
import json
import logging
import time

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.db import utcnow
from backend.outbox.models import DeliveryStatus, Webhook, WebhookDelivery
from backend.webhooks.service import SIGNATURE_HEADER, TIMESTAMP_HEADER, backoff, sign

logger = logging.getLogger(__name__)
BATCH = 20


class WebhookWorker:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        *,
        max_attempts: int,
        backoff_base_s: float,
        poll_interval_s: float = 1.0,
        timeout_s: float = 5.0,
    ):
        self.sessions = sessions
        self.max_attempts = max_attempts
        self.backoff_base_s = backoff_base_s
        self.poll_interval_s = poll_interval_s
        self._client = httpx.AsyncClient(timeout=timeout_s, follow_redirects=False)

    async def run(self) -> None:
        while True:
            try:
                sent = await self.send_due()
            except Exception:
                logger.exception("webhook delivery round failed")
                sent = 0
            if sent < BATCH:
                await asyncio.sleep(self.poll_interval_s)

    async def send_due(self) -> int:
        """Claim due deliveries (skipping rows another process holds) and send them."""
        async with self.sessions() as db:
            due = list(
                await db.scalars(
                    select(WebhookDelivery)
                    .where(
                        WebhookDelivery.status == DeliveryStatus.PENDING,
                        WebhookDelivery.next_attempt_at <= utcnow(),
                    )
                    .order_by(WebhookDelivery.id)
                    .limit(BATCH)
                    .with_for_update(skip_locked=True)
                )
            )
            for delivery in due:
                webhook = await db.get(Webhook, delivery.webhook_id)
                if webhook is not None:  # a deleted webhook's deliveries go with it (cascade)
                    await self._attempt(webhook, delivery)
            await db.commit()
        return len(due)

    async def _attempt(self, webhook: Webhook, delivery: WebhookDelivery) -> None:
        body = json.dumps(delivery.payload, ensure_ascii=False, separators=(",", ":")).encode()
        timestamp = str(int(time.time()))
        headers = {
            "content-type": "application/json",
            "user-agent": "prefixdesk-webhooks",
            "X-Prefixdesk-Event": delivery.event_type,
            "X-Prefixdesk-Delivery": delivery.event_id,
            TIMESTAMP_HEADER: timestamp,
            SIGNATURE_HEADER: sign(webhook.secret, timestamp, body),
        }
        delivery.attempts += 1
        try:
            response = await self._client.post(webhook.url, content=body, headers=headers)
            error = None if response.is_success else f"HTTP {response.status_code}"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"
        if error is None:
            delivery.status, delivery.delivered_at, delivery.last_error = (
                DeliveryStatus.DELIVERED,
                utcnow(),
                None,
            )
        elif delivery.attempts >= self.max_attempts:
            delivery.status, delivery.last_error = DeliveryStatus.FAILED, error
        else:
            delivery.last_error = error
            delivery.next_attempt_at = utcnow() + backoff(delivery.attempts, self.backoff_base_s)

    async def close(self) -> None:
        await self._client.aclose()
