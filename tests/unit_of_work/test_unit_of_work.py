"""One unit of work: its webhook deliveries are written and its events published only if it
commits; a unit that rolls back announces nothing and leaves nothing behind."""

import asyncio

import pytest
from sqlalchemy import select

from backend.events.bus import CONVERSATION_CREATED, PROMPTS_RELOADED, Event
from backend.outbox.models import Webhook, WebhookDelivery


async def next_event(subscription) -> Event:
    return await asyncio.wait_for(anext(subscription), timeout=10)


async def test_events_and_deliveries_only_on_commit(services):
    hook = Webhook(url="http://127.0.0.1:9/hook", secret="s", events=[])  # every event type
    async with services.new_work() as work:
        work.db.add(hook)
    subscription = await services.bus.subscribe()
    ran: list[str] = []

    async def note(what: str) -> None:
        ran.append(what)

    try:
        with pytest.raises(RuntimeError, match="the route failed"):
            async with services.new_work() as work:
                work.db.add(Webhook(url="http://127.0.0.1:9/rolled-back", secret="s", events=[]))
                work.emit(Event(CONVERSATION_CREATED, "rolled-back", {}))
                work.after_commit(lambda: note("after commit of the rolled-back unit"))
                work.on_close(lambda: note("close of the rolled-back unit"))
                raise RuntimeError("the route failed")
        assert ran == ["close of the rolled-back unit"]

        async with services.new_work() as work:
            work.emit(Event(CONVERSATION_CREATED, "committed", {"bot": "shop-en"}))
            # Between processes only; its own, so this process does not reload.
            work.emit(Event(PROMPTS_RELOADED, "", {"origin": services.reloads.origin}))
            work.after_commit(lambda: note("after commit"))
            work.on_close(lambda: note("close"))
            assert ran == ["close of the rolled-back unit"]  # nothing before the unit ends

        assert ran == ["close of the rolled-back unit", "after commit", "close"]
        # Published in order, after the commit; nothing of the rolled-back unit ever was.
        first, second = await next_event(subscription), await next_event(subscription)
        assert (first.type, first.conversation_id) == (CONVERSATION_CREATED, "committed")
        assert second.type == PROMPTS_RELOADED
    finally:
        await subscription.aclose()

    async with services.new_work() as work:
        hooks = list(await work.db.scalars(select(Webhook.url)))
        deliveries = list(
            await work.db.scalars(select(WebhookDelivery).where(WebhookDelivery.webhook_id == hook.id))
        )
    assert "http://127.0.0.1:9/rolled-back" not in hooks
    # One delivery, for the committed event the webhook subscribes to; none for the rolled-back
    # one, none for an event between processes.
    assert [(d.event_type, d.payload["conversation_id"], d.status) for d in deliveries] == [
        (CONVERSATION_CREATED, "committed", "pending")
    ]
    assert deliveries[0].event_id == first.id and deliveries[0].payload["data"] == {"bot": "shop-en"}


async def test_a_failed_commit_announces_nothing(services):
    """A unit whose commit fails (a constraint) rolls back and neither publishes nor acts."""
    subscription = await services.bus.subscribe()
    ran: list[str] = []

    async def note(what: str) -> None:
        ran.append(what)

    try:
        with pytest.raises(Exception, match="(?i)null"):
            async with services.new_work() as work:
                work.db.add(Webhook(url=None, secret="s", events=[]))  # url is NOT NULL
                work.emit(Event(CONVERSATION_CREATED, "never", {}))
                work.after_commit(lambda: note("after commit"))
        async with services.new_work() as work:
            work.emit(Event(CONVERSATION_CREATED, "marker", {}))
        assert (await next_event(subscription)).conversation_id == "marker"
        assert ran == []
    finally:
        await subscription.aclose()
