"""Erasing a customer's conversations through the app's services on the real Postgres and Redis:
texts and identity go from both, the figures stay, the audit entry is part of the same
transaction; a dry run counts the same and changes nothing."""

import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from backend.agents import audit
from backend.agents.models import AgentRole, AuditEntry
from backend.conversations.models import (
    Conversation,
    ConversationRating,
    Message,
    MessageRole,
    MessageStatus,
    Note,
)
from backend.conversations.ratings import rate_conversation
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
        preview = await services.erasures.erase_customer(
            work, "email", "ADA@example.com", admin, dry_run=True
        )
    assert preview.dry_run and sorted(preview.conversation_ids) == sorted([cid, second.conversation.id])
    # Two turns each (greeting aside: a message and a reply); two contexts; one note, one comment.
    assert vars(preview.counts) == {
        "conversations": 2,
        "messages": 4,
        "identity_records": 2,
        "notes": 1,
        "rating_comments": 1,
    }
    untouched, _ = await stored(services, cid)
    assert untouched.context == identity and untouched.erased_at is None
    assert [
        e for e in await audit_entries(services, audit.ERASE) if e.target_id in preview.conversation_ids
    ] == []

    async with services.new_work() as work:
        erased = await services.erasures.erase_customer(work, "email", "ada@example.com", admin)
    assert not erased.dry_run and sorted(erased.conversation_ids) == sorted(preview.conversation_ids)
    assert erased.counts == preview.counts

    for customer in (first, second):
        conversation, messages = await stored(services, customer.conversation.id)
        assert conversation.context is None and conversation.context_token_ids == []
        assert conversation.erased_at is not None
        assert [(m.text, m.token_ids) for m in messages] == [("", [])] * len(messages)
        assert not await session_key_exists(services, key_prefix, customer.conversation.id)
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
    entries = [
        e for e in await audit_entries(services, audit.ERASE) if e.target_id in erased.conversation_ids
    ]
    assert sorted(e.target_id for e in entries) == sorted(erased.conversation_ids)
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
        erased = await services.erasures.erase_conversation(work, one.conversation.id, admin)
    assert erased.conversation_ids == [one.conversation.id] and erased.counts.conversations == 1
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


async def test_the_shops_identity_and_the_address_left_for_the_team_go_too(services):
    """An e-mail matches the customer context, the identity the shop passed and the address the
    customer left, in any case; each is an identity record, and all of them are deleted."""
    admin = await new_agent(services, AgentRole.ADMIN)
    email = "Noor@Example.com"
    by_context = await open_conversation(services, context={"email": email.lower()})
    by_identity = await open_conversation(services)
    by_contact = await open_conversation(services, context={"name": "Noor"})
    bystander = await open_conversation(services, context={"email": "other@example.com"})
    async with services.new_work() as work:
        shop = await work.db.get(Conversation, by_identity.conversation.id)
        shop.customer_user_id, shop.customer_email, shop.customer_name = "u-17", email, "Noor"
        left = await work.db.get(Conversation, by_contact.conversation.id)
        left.contact_email = email.upper()
        withheld = Message(
            conversation_id=left.id,
            seq=1,
            role=MessageRole.ASSISTANT,
            status=MessageStatus.COMPLETE,
            text="Quoted lines",
            withheld_text="Noor, your parcel 4471 left on Monday",
        )
        work.db.add(withheld)

    async with services.new_work() as work:
        preview = await services.erasures.erase_customer(work, "email", email, admin, dry_run=True)
    matched = sorted(c.conversation.id for c in (by_context, by_identity, by_contact))
    assert sorted(preview.conversation_ids) == matched
    # The first a context; the second an identity; the third a context and an address left.
    assert (preview.counts.identity_records, preview.counts.messages) == (4, 1)

    async with services.new_work() as work:
        await services.erasures.erase_customer(work, "email", email, admin)
    for conversation_id in matched:
        conversation, messages = await stored(services, conversation_id)
        identity = (conversation.customer_user_id, conversation.customer_email, conversation.customer_name)
        assert identity == (None, None, None) and conversation.contact_email is None
        assert [(m.text, m.withheld_text) for m in messages] == [("", None)] * len(messages)
    other, _ = await stored(services, bystander.conversation.id)
    assert other.context == {"email": "other@example.com"} and other.erased_at is None
