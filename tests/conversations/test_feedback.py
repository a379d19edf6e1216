"""A customer's thumbs up or down on the bot's replies, through the app's services on the real
engine, Postgres and Redis, no HTTP: stored with the reply, announced, staged for webhooks."""

import asyncio

import pytest
from sqlalchemy import select

from backend.conversations.customers import NewConversation
from backend.conversations.feedback import rate_reply
from backend.conversations.models import Message, ReplyFeedback
from backend.errors import Conflict, InvalidInput, NotFound
from backend.events.bus import MESSAGE_FEEDBACK, Event
from backend.outbox.models import Webhook, WebhookDelivery
from tests.helpers import HeldReplies, done_of, new_agent, open_conversation, stored, take_turn

UP, DOWN = ReplyFeedback.UP, ReplyFeedback.DOWN


async def rate(
    services, customer: NewConversation, message_id: int, feedback: ReplyFeedback | None
) -> Message:
    """The customer's feedback, as the widget route gives it: their token opens the conversation."""
    async with services.new_work() as work:
        conversation = await services.customers.authorize(
            work, customer.conversation.id, customer.customer_token
        )
        return await rate_reply(work, conversation, message_id, feedback)


async def events_of(subscription, count: int) -> list[Event]:
    return [await asyncio.wait_for(anext(subscription), timeout=10) for _ in range(count)]


async def test_a_customer_rates_a_reply_changes_their_mind_and_takes_it_back(services):
    hook = Webhook(url="http://127.0.0.1:9/hook", secret="s", events=[MESSAGE_FEEDBACK])
    async with services.new_work() as work:
        work.db.add(hook)
    customer = await open_conversation(services)
    cid = customer.conversation.id
    reply_id = done_of(await take_turn(services, cid, "Can I return a tent?")).message_id
    subscription = await services.bus.subscribe()
    try:
        rated = await rate(services, customer, reply_id, UP)
        assert (rated.id, rated.feedback) == (reply_id, UP) and rated.feedback_at is not None
        again = await rate(services, customer, reply_id, UP)  # a second click on the same thumb
        assert again.feedback_at == rated.feedback_at
        await rate(services, customer, reply_id, DOWN)
        cleared = await rate(services, customer, reply_id, None)
        assert cleared.feedback is None
        events = await events_of(subscription, 3)
    finally:
        await subscription.aclose()

    # One event per change, none for the repeated click: what it is now, and what it was.
    assert [(e.type, e.conversation_id) for e in events] == [(MESSAGE_FEEDBACK, cid)] * 3
    assert [(e.data["feedback"], e.data["previous"]) for e in events] == [
        ("up", None),
        ("down", "up"),
        (None, "down"),
    ]
    assert {(e.data["message_id"], e.data["seq"]) for e in events} == {(reply_id, 2)}
    _, messages = await stored(services, cid)
    assert [(m.role, m.feedback) for m in messages] == [("user", None), ("assistant", None)]
    async with services.new_work() as work:
        deliveries = list(
            await work.db.scalars(
                select(WebhookDelivery)
                .where(WebhookDelivery.webhook_id == hook.id)
                .order_by(WebhookDelivery.id)
            )
        )
    # Each change's delivery was written with it, carrying the event the agents saw.
    assert [d.event_id for d in deliveries] == [e.id for e in events]
    assert [d.payload["data"] for d in deliveries] == [e.data for e in events]
    assert all(d.event_type == MESSAGE_FEEDBACK and d.status == "pending" for d in deliveries)


async def test_the_feedback_stays_with_the_reply(services):
    customer = await open_conversation(services)
    cid = customer.conversation.id
    first = done_of(await take_turn(services, cid, "Do you ship to Norway?")).message_id
    second = done_of(await take_turn(services, cid, "And to Canada?")).message_id
    await rate(services, customer, first, DOWN)
    await rate(services, customer, second, UP)

    _, messages = await stored(services, cid)
    assert [(m.id, m.feedback) for m in messages if m.role == "assistant"] == [(first, DOWN), (second, UP)]
    assert all(m.feedback_at is not None for m in messages if m.role == "assistant")
    async with services.new_work() as work:
        greeting, history = await services.customers.history(work, customer.conversation)
    assert greeting and [m.feedback for m in history] == [None, DOWN, None, UP]


async def test_only_the_bots_complete_replies_in_ones_own_conversation_are_rated(services):
    agent = await new_agent(services)
    customer = await open_conversation(services)
    other = await open_conversation(services)
    cid = customer.conversation.id
    done = done_of(await take_turn(services, cid, "Where is my order?"))
    others_reply = done_of(await take_turn(services, other.conversation.id, "Hello")).message_id
    async with services.new_work() as work:
        agents_reply = await services.inbox.reply(work, cid, agent, "Let me check that for you.")
    _, messages = await stored(services, cid)
    question = messages[0]

    with pytest.raises(InvalidInput, match=f"message {agents_reply.id} is by an agent"):
        await rate(services, customer, agents_reply.id, UP)
    with pytest.raises(InvalidInput, match=f"message {question.id} is by the customer"):
        await rate(services, customer, question.id, DOWN)
    # Another customer's reply is as unknown as one that does not exist, and stays unrated.
    with pytest.raises(NotFound, match=f"no message {others_reply} in this conversation"):
        await rate(services, customer, others_reply, UP)
    with pytest.raises(NotFound):
        await rate(services, customer, 2**31 - 1, UP)

    assert (await rate(services, customer, done.message_id, UP)).feedback == UP
    _, others = await stored(services, other.conversation.id)
    assert [m.feedback for m in others] == [None, None]
    _, messages = await stored(services, cid)
    assert [(m.role, m.feedback) for m in messages] == [("user", None), ("assistant", UP), ("agent", None)]


async def test_a_reply_still_being_written_is_not_rated_yet(make_services, tiny_engine):
    engine = HeldReplies(tiny_engine)
    services = await make_services(engine=engine)
    customer = await open_conversation(services)
    async with services.new_work() as work:
        running = await services.turns.take(work, customer.conversation.id, "How long is the warranty?")
    _, messages = await stored(services, customer.conversation.id)
    writing = messages[-1]
    assert (writing.role, writing.status) == ("assistant", "generating")

    with pytest.raises(Conflict, match=f"message {writing.id} is generating"):
        await rate(services, customer, writing.id, UP)

    engine.go.set()
    done = done_of([event async for event in running.events()])
    assert done.message_id == writing.id
    assert (await rate(services, customer, writing.id, UP)).feedback == UP
