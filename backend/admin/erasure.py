"""Erasing a customer's conversations on request: their words and identity go, the figures stay.

Message texts and their token ids (which encode the same words), the model's withheld texts,
the customer context, the shop's identity of the customer, the e-mail they left, notes, rating
comments and the webhook deliveries that carried any of them are blanked or deleted in Postgres;
the conversation's hot session in Redis is deleted once that is committed. Counts, timings,
cached tokens, feedback and scores stay, so reports and metrics do not change. The customer's
token still names the conversation, so their widget is told it was deleted (a 410). Each erased
conversation gets an audit entry in the same transaction. A dry run counts what would go.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import ColumnElement, case, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from backend.agents import audit
from backend.agents.models import Agent
from backend.conversations import repository as repo
from backend.conversations.models import Conversation, ConversationRating, Message, Note
from backend.db import utcnow
from backend.outbox.models import WebhookDelivery
from backend.turns.context import ConversationContext
from backend.turns.turn_lock import TurnLocks
from backend.unit_of_work import UnitOfWork

ERASED = "(erased)"
# How long an erasure waits for a bot reply being written in the conversation.
LOCK_WAIT_S = 30


@dataclass(frozen=True)
class ErasureCounts:
    """What an erasure blanks or deletes."""

    conversations: int
    messages: int
    identity_records: int  # customer contexts, shop identities and e-mails left for the team
    notes: int
    rating_comments: int


@dataclass(frozen=True)
class Erasure:
    conversation_ids: list[str]
    counts: ErasureCounts
    dry_run: bool


class Erasures:
    def __init__(self, *, locks: TurnLocks, context: ConversationContext):
        self.locks = locks
        self.context = context

    async def erase_conversation(
        self, work: UnitOfWork, conversation_id: str, by: Agent, *, dry_run: bool = False
    ) -> Erasure:
        await repo.require_conversation(work.db, conversation_id)
        return await self._erase(work, [conversation_id], by, "conversation id", dry_run)

    async def erase_customer(
        self, work: UnitOfWork, field: str, value: str, by: Agent, *, dry_run: bool = False
    ) -> Erasure:
        """Every conversation whose customer context has `field` equal to `value` (as text); an
        `email` or `user_id` also matches the shop's identity, and an `email` the one left for
        the team, in any case."""
        ids = list(
            await work.db.scalars(
                select(Conversation.id)
                .where(customer_matches(field, value))
                .order_by(Conversation.created_at)
            )
        )
        # The value is the identity being erased: the audit log names the field only.
        return await self._erase(work, ids, by, f"customer {field}", dry_run)

    async def _erase(
        self, work: UnitOfWork, ids: list[str], by: Agent, matched_by: str, dry_run: bool
    ) -> Erasure:
        if dry_run:
            return Erasure(ids, await count(work.db, ids), dry_run=True)
        for conversation_id in ids:
            # A reply being written would store its text after us: wait until it is stored.
            await self.locks.hold_for(
                work, conversation_id, wait_s=LOCK_WAIT_S, busy_message="the conversation is busy; try again"
            )
        counts = await count(work.db, ids)
        for conversation_id in ids:
            await blank(work.db, conversation_id)
            audit.record(work.db, by, audit.ERASE, "conversation", conversation_id, matched_by=matched_by)
        forget = list(ids)

        async def forget_sessions() -> None:
            for conversation_id in forget:
                await self.context.store.delete(conversation_id)

        work.after_commit(forget_sessions)
        return Erasure(ids, counts, dry_run=False)


def customer_matches(field: str, value: str) -> ColumnElement[bool]:
    in_context = Conversation.context[field].as_string()
    if field == "email":
        wanted = value.lower()
        columns = (in_context, Conversation.customer_email, Conversation.contact_email)
        return or_(*(func.lower(column) == wanted for column in columns))
    if field == "user_id":
        return or_(in_context == value, Conversation.customer_user_id == value)
    matches: ColumnElement[bool] = in_context == value
    return matches


async def count(db: AsyncSession, ids: Sequence[str]) -> ErasureCounts:
    """What erasing these conversations blanks or deletes."""
    if not ids:
        return ErasureCounts(0, 0, 0, 0, 0)
    messages = await db.scalar(select(func.count(Message.id)).where(Message.conversation_id.in_(ids)))
    notes = await db.scalar(select(func.count(Note.id)).where(Note.conversation_id.in_(ids)))
    comments = await db.scalar(
        select(func.count())
        .select_from(ConversationRating)
        .where(ConversationRating.conversation_id.in_(ids), ConversationRating.comment.is_not(None))
    )
    identities = 0
    for row in await db.execute(
        select(
            Conversation.context,
            Conversation.customer_user_id,
            Conversation.customer_email,
            Conversation.customer_name,
            Conversation.contact_email,
        ).where(Conversation.id.in_(ids))
    ):
        context, user_id, email, name, contact_email = row
        identities += bool(context) + any((user_id, email, name)) + bool(contact_email)
    return ErasureCounts(len(ids), messages or 0, identities, notes or 0, comments or 0)


async def blank(db: AsyncSession, conversation_id: str) -> None:
    """Blanks or deletes every text and identity of one conversation; the figures stay."""
    await db.execute(
        update(Message)
        .where(Message.conversation_id == conversation_id)
        # A doubt may quote the reply; it is kept as a mark, so the doubtful replies still count.
        .values(
            text="",
            token_ids=[],
            error=None,
            withheld_text=None,
            doubt=case((Message.doubt.is_(None), None), else_=ERASED),
        )
    )
    await db.execute(delete(Note).where(Note.conversation_id == conversation_id))
    await db.execute(
        update(ConversationRating)
        .where(ConversationRating.conversation_id == conversation_id)
        .values(comment=None)
    )
    sent_about_it = WebhookDelivery.payload["conversation_id"].as_string() == conversation_id
    await db.execute(delete(WebhookDelivery).where(sent_about_it))
    conversation = await repo.require_conversation(db, conversation_id, fresh=True)
    conversation.context = None
    conversation.context_token_ids = []
    conversation.customer_user_id = None
    conversation.customer_email = None
    conversation.customer_name = None
    conversation.identity_verified = False
    conversation.contact_email = None
    conversation.erased_at = utcnow()
    await db.flush()
