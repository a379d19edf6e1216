"""The agents' view of conversations: filtered, searched, paginated."""

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.bots.models import Bot
from backend.conversations.models import Conversation, ConversationRating, ConversationStatus, Message, Note


@dataclass(frozen=True)
class ConversationFilter:
    status: ConversationStatus | None = None
    bot: str | None = None
    assignee_id: int | None = None
    unassigned: bool = False
    text: str | None = None  # searched in the messages and the customer's name and e-mail
    email: str | None = None  # the customer's e-mail, exactly (any case)
    rating_at_most: int | None = None  # rated by the customer, with at most this score


def _filtered(query: Select[Any], f: ConversationFilter) -> Select[Any]:
    if f.status is not None:
        query = query.where(Conversation.status == f.status)
    if f.bot is not None:
        query = query.join(Bot, Bot.id == Conversation.bot_id).where(Bot.slug == f.bot)
    if f.assignee_id is not None:
        query = query.where(Conversation.assignee_id == f.assignee_id)
    if f.unassigned:
        query = query.where(Conversation.assignee_id.is_(None))
    if f.email:
        query = query.where(func.lower(Conversation.customer_email) == f.email.lower())
    if f.rating_at_most is not None:
        rated_low = select(ConversationRating.conversation_id).where(
            ConversationRating.score <= f.rating_at_most
        )
        query = query.where(Conversation.id.in_(rated_low))
    if f.text:
        pattern = "%" + f.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        matching = select(Message.conversation_id).where(Message.text.ilike(pattern, escape="\\"))
        query = query.where(
            Conversation.id.in_(matching)
            | Conversation.customer_email.ilike(pattern, escape="\\")
            | Conversation.customer_name.ilike(pattern, escape="\\")
        )
    return query


async def list_conversations(
    db: AsyncSession, f: ConversationFilter, *, limit: int, offset: int
) -> tuple[list[Conversation], int]:
    total = await db.scalar(_filtered(select(func.count()).select_from(Conversation), f))
    rows = await db.scalars(
        _filtered(select(Conversation), f)
        .order_by(Conversation.updated_at.desc(), Conversation.id)
        .limit(limit)
        .offset(offset)
    )
    return list(rows.unique()), total or 0


async def last_messages(db: AsyncSession, conversation_ids: list[str]) -> dict[str, Message]:
    if not conversation_ids:
        return {}
    newest = (
        select(Message.conversation_id, func.max(Message.seq).label("seq"))
        .where(Message.conversation_id.in_(conversation_ids))
        .group_by(Message.conversation_id)
        .subquery()
    )
    rows = await db.scalars(
        select(Message).join(
            newest, (Message.conversation_id == newest.c.conversation_id) & (Message.seq == newest.c.seq)
        )
    )
    return {m.conversation_id: m for m in rows}


async def ratings_of(db: AsyncSession, conversation_ids: list[str]) -> dict[str, ConversationRating]:
    """The customers' ratings of these conversations, by conversation id (the rated ones only)."""
    if not conversation_ids:
        return {}
    rows = await db.scalars(
        select(ConversationRating).where(ConversationRating.conversation_id.in_(conversation_ids))
    )
    return {rating.conversation_id: rating for rating in rows}


async def list_notes(db: AsyncSession, conversation_id: str) -> list[Note]:
    return list(
        await db.scalars(select(Note).where(Note.conversation_id == conversation_id).order_by(Note.id))
    )
