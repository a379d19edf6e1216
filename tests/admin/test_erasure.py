"""Erasing a customer's conversations through the app's services on the real Postgres and Redis:
texts and identity go from both, the figures stay, the audit entry is part of the same
transaction."""

import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from backend.agents import audit
from backend.agents.models import AgentRole, AuditEntry
from backend.conversations.models import ConversationRating, Note
from backend.conversations.ratings import rate_conversation
from backend.errors import Forbidden
from backend.reports.service import build_report
from tests.helpers import done_of, new_agent, open_conversation, stored, take_turn
from tests.support import eventually


async def session_key_exists(services, key_prefix: str, conversation_id: str) -> bool:
    return bool(await services.redis.exists(f"{key_prefix}session:{conversation_id}"))


async def report_of(services, since: datetime) -> dict:
    async with services.new_work() as work:
        report = await build_report(work.db, since, datetime.now(UTC) + timedelta(minutes=1), "shop-en")
    total = report["total"]
    return {"conversations": total.conversations, "messages": total.messages, "replies": total.replies}


async def live_metrics(services) -> dict[int, dict[str, float]]:
    """The metrics store's per-minute buckets of the last few minutes (in Redis)."""
    now = int(time.time())
    return await services.metrics.store.buckets(60, now - 300, now)


async def audit_entries(services, action: str) -> list[AuditEntry]:
    async with services.new_work() as work:
        return list(await work.db.scalars(select(AuditEntry).where(AuditEntry.action == action)))


async def test_erasing_a_customer_blanks_texts_in_postgres_and_redis_and_keeps_the_figures(
    services, key_prefix
):
    since = datetime.now(UTC) - timedelta(seconds=1)
    admin = await new_agent(services, AgentRole.ADMIN)
    identity = {"name": "Ada Lovelace", "email": "ada@example.com"}
    first = await open_conversation(services, context=identity)
    second = await open_conversation(services, context={"email": "ada@example.com"})
    bystander = await open_conversation(services, context={"email": "grace@example.com"})
    for customer in (first, second, bystander):
        done_of(await take_turn(services, customer.conversation.id, "My order 4471 never came, Ada here"))
    cid = first.conversation.id
    async with services.new_work() as work:
        work.db.add(Note(conversation_id=cid, agent_id=admin.id, text="Ada phoned about order 4471"))
        await services.inbox.resolve(work, cid)
    async with services.new_work() as work:
        conversation = await services.customers.authorize(work, cid, first.customer_token)
        await rate_conversation(work, conversation, 2, "Ada: too slow")
    assert await session_key_exists(services, key_prefix, cid)
    _, before_messages = await stored(services, cid)
    figures = await report_of(services, since)

    async def all_replies_counted() -> dict[int, dict[str, float]] | None:
        buckets = await live_metrics(services)
        return buckets if sum(b.get("all:n", 0) for b in buckets.values()) == 3 else None

    metrics = await eventually(all_replies_counted, what="the three replies counted in the metrics store")

    async with services.new_work() as work:
        erased = await services.erasures.erase_customer(work, "email", "ada@example.com", admin)
    assert sorted(erased) == sorted([cid, second.conversation.id])

    for customer in (first, second):
        conversation, messages = await stored(services, customer.conversation.id)
        assert conversation.context is None and conversation.context_token_ids == []
        assert conversation.erased_at is not None
        assert [(m.text, m.token_ids) for m in messages] == [("", [])] * len(messages)
        assert not await session_key_exists(services, key_prefix, customer.conversation.id)
        with pytest.raises(Forbidden):  # the customer's token opens nothing any more
            async with services.new_work() as work:
                await services.customers.authorize(work, customer.conversation.id, customer.customer_token)
    # What was counted stays: messages, their tokens and timings, the score without its comment.
    _, after_messages = await stored(services, cid)
    kept = ("id", "seq", "role", "status", "prompt_tokens", "cached_tokens", "completion_tokens", "ttft_ms")
    assert [[getattr(m, k) for k in kept] for m in after_messages] == [
        [getattr(m, k) for k in kept] for m in before_messages
    ]
    assert await report_of(services, since) == figures
    assert await live_metrics(services) == metrics
    async with services.new_work() as work:
        rating = await work.db.get(ConversationRating, cid)
        notes = list(await work.db.scalars(select(Note).where(Note.conversation_id == cid)))
    assert (rating.score, rating.comment, notes) == (2, None, [])
    # The other customer keeps everything.
    other, other_messages = await stored(services, bystander.conversation.id)
    assert other.context == {"email": "grace@example.com"} and other.erased_at is None
    assert other_messages[0].text == "My order 4471 never came, Ada here"

    # One audit entry per conversation, naming the field but not the identity.
    entries = await audit_entries(services, audit.ERASE)
    assert sorted(e.target_id for e in entries) == sorted(erased)
    assert {(e.actor_id, e.target_type, e.details["matched_by"]) for e in entries} == {
        (admin.id, "conversation", "customer email")
    }
    assert all("ada@example.com" not in str(e.details) for e in entries)


async def test_erasing_by_id_touches_only_that_conversation(services, key_prefix):
    admin = await new_agent(services, AgentRole.ADMIN)
    one = await open_conversation(services, context={"name": "Lin"})
    two = await open_conversation(services, context={"name": "Lin"})
    for customer in (one, two):
        done_of(await take_turn(services, customer.conversation.id, "Is delivery free?"))
    async with services.new_work() as work:
        assert await services.erasures.erase_conversation(work, one.conversation.id, admin) == [
            one.conversation.id
        ]
    _, messages = await stored(services, one.conversation.id)
    assert {m.text for m in messages} == {""}
    assert not await session_key_exists(services, key_prefix, one.conversation.id)
    kept, kept_messages = await stored(services, two.conversation.id)
    assert kept.context == {"name": "Lin"} and kept_messages[0].text == "Is delivery free?"
    assert await session_key_exists(services, key_prefix, two.conversation.id)


async def test_an_erasure_rolled_back_leaves_no_audit_entry_and_erases_nothing(services, key_prefix):
    admin = await new_agent(services, AgentRole.ADMIN)
    customer = await open_conversation(services, context={"email": "kim@example.com"})
    cid = customer.conversation.id
    done_of(await take_turn(services, cid, "Where is my parcel?"))

    with pytest.raises(RuntimeError):
        async with services.new_work() as work:
            await services.erasures.erase_conversation(work, cid, admin)
            assert (
                len(list(await work.db.scalars(select(AuditEntry).where(AuditEntry.target_id == cid)))) == 1
            )
            raise RuntimeError("the request failed after the erasure")

    conversation, messages = await stored(services, cid)
    assert conversation.context == {"email": "kim@example.com"} and messages[0].text == "Where is my parcel?"
    assert await session_key_exists(services, key_prefix, cid)  # deleted only once committed
    assert [e for e in await audit_entries(services, audit.ERASE) if e.target_id == cid] == []
