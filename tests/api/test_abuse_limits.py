"""Limits that keep one client from taking the desk down: 429 with Retry-After, nothing stored."""

import asyncio
import time

import httpx
import pytest
from pydantic import ValidationError

from backend.api.rate_limits import RateLimits, RedisRateLimiter
from backend.config import Settings
from tests.helpers import HeldReplies, auth, done_event, parse_sse, send, start
from tests.support import eventually, running_app


def inside_one_window(client: httpx.AsyncClient, settings: Settings) -> None:
    """Fixed windows reset on the minute: the app's limits counted on a clock stopped mid-minute,
    so that a burst cannot straddle a reset."""
    now = time.time()
    mid_minute = now - now % 60 + 30
    services = client.app.state.services
    limiter = RedisRateLimiter(services.redis, key_prefix=settings.redis_key_prefix, clock=lambda: mid_minute)
    client.app.state.provided.add(RateLimits, RateLimits(limiter, settings))


async def test_a_conversation_over_its_message_rate_gets_429(tiny_settings, tiny_engine):
    settings = tiny_settings.model_copy(update={"rate_limit_messages_per_conversation": 2})
    async with running_app(settings, tiny_engine) as client:
        inside_one_window(client, settings)
        conversation = await start(client)
        done_event(await send(client, conversation, "one"))
        done_event(await send(client, conversation, "two"))
        url = f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages"
        third = await client.post(url, json={"text": "three"}, headers=auth(conversation))
        assert third.status_code == 429 and int(third.headers["retry-after"]) >= 1
        assert "too many messages in this conversation" in third.json()["detail"]
        texts = [m["text"] for m in (await client.get(url, headers=auth(conversation))).json()["messages"]]
        assert "three" not in texts and len(texts) == 4


async def test_a_client_address_over_its_request_rate_gets_429(tiny_settings, tiny_engine):
    settings = tiny_settings.model_copy(update={"rate_limit_requests_per_address": 3})
    async with running_app(settings, tiny_engine) as client:
        transport = httpx.ASGITransport(app=client.app, client=("198.51.100.23", 40000))
        inside_one_window(client, settings)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as far_away:
            statuses = [
                (await far_away.post("/api/v1/widget/conversations", json={"bot": "shop-en"})).status_code
                for _ in range(4)
            ]
            assert statuses == [201, 201, 201, 429]
        # Another address is not affected.
        neighbour = httpx.ASGITransport(app=client.app, client=("198.51.100.24", 40000))
        async with httpx.AsyncClient(transport=neighbour, base_url="http://test") as next_door:
            assert (
                await next_door.post("/api/v1/widget/conversations", json={"bot": "shop-en"})
            ).status_code == 201


async def test_beyond_the_reply_queue_customers_get_429_not_a_slow_death(tiny_settings, tiny_engine):
    settings = tiny_settings.model_copy(update={"max_pending_replies": 1})
    engine = HeldReplies(tiny_engine)  # the first reply holds the only slot until the test lets it go
    async with running_app(settings, engine) as client:
        first, second = await start(client), await start(client)

        def post(conversation: dict):
            return client.post(
                f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages",
                json={"text": "Tell me a long story"},
                headers=auth(conversation),
            )

        replying = asyncio.create_task(post(first))
        slots = client.app.state.services.claims.slots
        await eventually(lambda: slots.taken == 1, what="the first reply took the slot")
        refused = await post(second)
        engine.go.set()
        accepted = await replying

        assert (accepted.status_code, refused.status_code) == (200, 429)
        assert refused.headers["retry-after"] == "5" and "busy" in refused.json()["detail"]
        done_event(parse_sse(accepted.text))
        counts = []
        for c in (first, second):
            history = await client.get(
                f"/api/v1/widget/conversations/{c['conversation_id']}/messages", headers=auth(c)
            )
            counts.append(len(history.json()["messages"]))
        assert counts == [2, 0]  # the refused message was never accepted


async def test_pages_carry_security_headers(client):
    page = await client.get("/")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY" and page.headers["x-content-type-options"] == "nosniff"
    api = await client.post("/api/v1/widget/conversations", json={"bot": "shop-en"})
    assert api.headers["x-content-type-options"] == "nosniff" and "content-security-policy" not in api.headers


def test_production_refuses_the_development_secret():
    with pytest.raises(ValidationError, match="PREFIXDESK_SECRET_KEY"):
        Settings(environment="production")
    assert Settings(environment="production", secret_key="k" * 40).environment == "production"


async def test_only_allowed_origins_may_embed_the_widget(tiny_settings, tiny_engine):
    settings = tiny_settings.model_copy(update={"widget_origins": ["https://shop.example.com"]})
    async with running_app(settings, tiny_engine) as client:
        preflight = {
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type",
        }
        allowed = await client.options(
            "/api/v1/widget/conversations", headers={"origin": "https://shop.example.com", **preflight}
        )
        assert allowed.headers["access-control-allow-origin"] == "https://shop.example.com"
        refused = await client.options(
            "/api/v1/widget/conversations", headers={"origin": "https://evil.example.net", **preflight}
        )
        assert "access-control-allow-origin" not in refused.headers
        started = await client.post(
            "/api/v1/widget/conversations",
            json={"bot": "shop-en"},
            headers={"origin": "https://evil.example.net"},
        )
        # The browser would hide this answer from the other origin's script.
        assert "access-control-allow-origin" not in started.headers
