"""Erasing a customer's conversations on request: their words and identity go, the figures stay.

Message texts and their token ids (which encode the same words), the customer context, notes,
rating comments and the webhook deliveries that carried any of them are blanked or deleted in
Postgres; the conversation's hot session in Redis is deleted once that is committed. Counts,
timings, cached tokens, feedback and scores stay, so reports and metrics do not change. The
customer token is replaced by one nobody holds: the widget starts afresh. Each erased
conversation gets an audit entry in the same transaction.
"""

import secrets

from sqlalchemy import case, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from backend.agents import audit
from backend.agents.models import Agent
from backend.conversations import repository as repo
from backend.conversations.models import Conversation, ConversationRating, Message, Note
from backend.db import utcnow
from backend.outbox.models import WebhookDelivery
from backend.tokens import digest
from backend.turns.context import ConversationContext
from backend.turns.turn_lock import TurnLocks
from backend.unit_of_work import UnitOfWork

ERASED = "(erased)"
# How long an erasure waits for a bot reply being written in the conversation.
LOCK_WAIT_S = 30


class Erasures:
    def __init__(self, *, locks: TurnLocks, context: ConversationContext):
        self.locks = locks
        self.context = context

    async def erase_conversation(self, work: UnitOfWork, conversation_id: str, by: Agent) -> list[str]:
        await repo.require_conversation(work.db, conversation_id)
        await self._erase(work, conversation_id, by, matched_by="conversation id")
        return [conversation_id]

    async def erase_customer(self, work: UnitOfWork, field: str, value: str, by: Agent) -> list[str]:
        """Every conversation whose customer context has `field` equal to `value` (as text)."""
        ids = list(
            await work.db.scalars(
                select(Conversation.id)
                .where(Conversation.context[field].as_string() == value)
                .order_by(Conversation.created_at)
            )
        )
        for conversation_id in ids:
            # The value is the identity being erased: the audit log names the field only.
            await self._erase(work, conversation_id, by, matched_by=f"customer {field}")
        return ids

    async def _erase(self, work: UnitOfWork, conversation_id: str, by: Agent, *, matched_by: str) -> None:
        # A reply being written would store its text after us: wait until it is stored.
        await self.locks.hold_for(
            work, conversation_id, wait_s=LOCK_WAIT_S, busy_message="the conversation is busy; try again"
        )
        await blank(work.db, conversation_id)
        audit.record(work.db, by, audit.ERASE, "conversation", conversation_id, matched_by=matched_by)

        async def forget_session() -> None:
            await self.context.store.delete(conversation_id)

        work.after_commit(forget_session)


async def blank(db: AsyncSession, conversation_id: str) -> None:
    """Blanks or deletes every text and identity of one conversation; the figures stay."""
    await db.execute(
        update(Message)
        .where(Message.conversation_id == conversation_id)
        # A doubt may quote the reply; it is kept as a mark, so the doubtful replies still count.
        .values(text="", token_ids=[], error=None, doubt=case((Message.doubt.is_(None), None), else_=ERASED))
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
    conversation.customer_token_hash = digest(secrets.token_urlsafe(32))  # a token nobody holds
    conversation.erased_at = utcnow()
    await db.flush()
