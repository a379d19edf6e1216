"""Queries over conversations and messages. Callers own the transaction: this reads, adds, marks."""

from collections.abc import Iterable

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from backend.agents.models import Agent
from backend.conversations.models import Conversation, Message, MessageRole, MessageStatus
from backend.errors import NotFound


async def get_conversation(
    db: AsyncSession, conversation_id: str, *, fresh: bool = False
) -> Conversation | None:
    """`fresh` reads the row again even if this session has it (taken under the turn lock)."""
    return await db.get(Conversation, conversation_id, populate_existing=fresh)


async def require_conversation(
    db: AsyncSession, conversation_id: str, *, fresh: bool = False
) -> Conversation:
    conversation = await get_conversation(db, conversation_id, fresh=fresh)
    if conversation is None:
        raise NotFound(f"no conversation {conversation_id!r}")
    return conversation


async def list_messages(db: AsyncSession, conversation_id: str) -> list[Message]:
    result = await db.scalars(
        select(Message).where(Message.conversation_id == conversation_id).order_by(Message.seq)
    )
    return list(result)


async def author_names(db: AsyncSession, messages: Iterable[Message]) -> dict[int, str]:
    """The names of the agents who wrote these messages, by agent id."""
    ids = {m.author_agent_id for m in messages if m.author_agent_id is not None}
    if not ids:
        return {}
    rows = await db.execute(select(Agent.id, Agent.name).where(Agent.id.in_(ids)))
    return {agent_id: name for agent_id, name in rows.tuples()}


async def list_message_token_ids(db: AsyncSession, conversation_id: str) -> list[list[int]]:
    result = await db.scalars(
        select(Message.token_ids).where(Message.conversation_id == conversation_id).order_by(Message.seq)
    )
    return list(result)


async def given_articles(db: AsyncSession, conversation_id: str) -> set[str]:
    """The ids of the help-center articles the model was given beside this conversation's messages."""
    result = await db.scalars(
        select(Message.articles).where(
            Message.conversation_id == conversation_id, Message.articles.is_not(None)
        )
    )
    return {article_id for ids in result for article_id in ids or []}


async def last_reply_text(db: AsyncSession, conversation_id: str) -> str:
    """What the bot or an agent said last ("" before anyone has)."""
    text = await db.scalar(
        select(Message.text)
        .where(
            Message.conversation_id == conversation_id,
            Message.role.in_((MessageRole.ASSISTANT, MessageRole.AGENT)),
        )
        .order_by(Message.seq.desc())
        .limit(1)
    )
    return text or ""


async def fail_abandoned_replies(db: AsyncSession, conversation_id: str) -> None:
    """Replies still "generating" when their conversation's turn lock is free were abandoned:
    the process writing them stopped. Called with the lock held."""
    await db.execute(
        update(Message)
        .where(Message.conversation_id == conversation_id, Message.status == MessageStatus.GENERATING)
        .values(status=MessageStatus.FAILED, error="the reply was cut off when the app stopped")
    )


async def get_message(db: AsyncSession, message_id: int) -> Message:
    message = await db.get(Message, message_id)
    if message is None:
        raise LookupError(f"message {message_id} is missing")
    return message


async def lock_message(db: AsyncSession, conversation_id: str, message_id: int) -> Message | None:
    """The message, read again and locked until the transaction ends, if it is in this conversation."""
    return await db.scalar(
        select(Message)
        .where(Message.id == message_id, Message.conversation_id == conversation_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


async def conversations_per_prompt_version(db: AsyncSession) -> dict[int, int]:
    rows = await db.execute(
        select(Conversation.prompt_version_id, func.count()).group_by(Conversation.prompt_version_id)
    )
    return {version_id: count for version_id, count in rows.tuples()}
