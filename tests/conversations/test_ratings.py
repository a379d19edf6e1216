"""A customer's 1-5 rating of their resolved conversation, through the app's services on the real
Postgres and Redis: stored once, announced, staged for webhooks, counted in the report."""

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from backend.conversations.customers import NewConversation
from backend.conversations.models import ConversationRating
from backend.conversations.ratings import rate_conversation
from backend.errors import Conflict
from backend.events.bus import CONVERSATION_RATED
from backend.outbox.models import Webhook, WebhookDelivery
from backend.reports.service import build_report
from tests.helpers import new_agent, open_conversation


async def rate(
    services, customer: NewConversation, score: int, comment: str | None = None
) -> ConversationRating:
    """The customer's rating, as the widget route takes it: their token opens the conversation."""
    async with services.new_work() as work:
        conversation = await services.customers.authorize(
            work, customer.conversation.id, customer.customer_token
        )
        return await rate_conversation(work, conversation, score, comment)


async def resolve(services, conversation_id: str) -> None:
    async with services.new_work() as work:
        await services.inbox.resolve(work, conversation_id)


async def test_a_resolved_conversation_is_rated_once_announced_and_staged_for_webhooks(services):
    hook = Webhook(url="http://127.0.0.1:9/hook", secret="s", events=[CONVERSATION_RATED])
    async with services.new_work() as work:
        work.db.add(hook)
    customer = await open_conversation(services)
    cid = customer.conversation.id
    await resolve(services, cid)
    subscription = await services.bus.subscribe()
    try:
        rated = await rate(services, customer, 4, "Quick and kind.")
        event = await asyncio.wait_for(anext(subscription), timeout=10)
    finally:
        await subscription.aclose()
    assert (rated.conversation_id, rated.score, rated.comment) == (cid, 4, "Quick and kind.")
    assert (event.type, event.conversation_id) == (CONVERSATION_RATED, cid)
    assert event.data == {
        "bot": "shop-en",
        "score": 4,
        "comment": "Quick and kind.",
        "conversation_id": cid,
        "console_url": f"/console#conversation={cid}",
        "api_path": f"/api/v1/conversations/{cid}",
    }

    # A second rating is refused, and the first one stands.
    with pytest.raises(Conflict, match="rated already"):
        await rate(services, customer, 1, "changed my mind")
    async with services.new_work() as work:
        stored = list(
            await work.db.scalars(select(ConversationRating).where(ConversationRating.conversation_id == cid))
        )
        staged = list(
            await work.db.scalars(select(WebhookDelivery).where(WebhookDelivery.webhook_id == hook.id))
        )
    assert [(r.score, r.comment) for r in stored] == [(4, "Quick and kind.")]
    assert [(d.event_type, d.payload["data"]["score"]) for d in staged] == [(CONVERSATION_RATED, 4)]


async def test_only_a_resolved_conversation_takes_a_rating(services):
    customer = await open_conversation(services)
    with pytest.raises(Conflict, match="only a resolved conversation can be rated; this one is bot"):
        await rate(services, customer, 5)
    agent = await new_agent(services)
    async with services.new_work() as work:
        await services.inbox.take_over(work, customer.conversation.id, agent)
    with pytest.raises(Conflict, match="this one is open"):
        await rate(services, customer, 5)
    async with services.new_work() as work:
        assert await work.db.get(ConversationRating, customer.conversation.id) is None


async def test_the_report_counts_ratings_per_bot_with_mean_and_distribution(services):
    since = datetime.now(UTC) - timedelta(seconds=1)
    for bot, score in (("shop-en", 5), ("shop-en", 2), ("shop-en", 5), ("appliance-zh", 3)):
        customer = await open_conversation(services, bot)
        await resolve(services, customer.conversation.id)
        await rate(services, customer, score)
    unrated = await open_conversation(services)
    await resolve(services, unrated.conversation.id)

    async with services.new_work() as work:
        report = await build_report(work.db, since, datetime.now(UTC) + timedelta(seconds=1), None)
        only_zh = await build_report(work.db, since, datetime.now(UTC) + timedelta(seconds=1), "appliance-zh")
    shop = report["per_bot"]["shop-en"].ratings
    assert (shop.count, shop.mean) == (3, 4.0)
    assert shop.distribution == {"1": 0, "2": 1, "3": 0, "4": 0, "5": 2}
    assert (report["total"].ratings.count, report["total"].ratings.mean) == (4, 3.75)
    assert report["total"].ratings.distribution == {"1": 0, "2": 1, "3": 1, "4": 0, "5": 2}
    assert list(only_zh["per_bot"]) == ["appliance-zh"]
    assert (only_zh["total"].ratings.count, only_zh["total"].ratings.mean) == (1, 3.0)
