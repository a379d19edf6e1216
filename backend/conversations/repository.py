"""Queries, named after what they filter on. Services flush and commit; this reads, adds, marks."""

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from backend.conversations.models import Bot, Conversation, Message, MessageStatus, PromptVersion
from backend.prompting.assembler import BotPrefix
from backend.prompting.bots import Bot as BotDefinition


async def upsert_bot_version(
    db: AsyncSession, bot: BotDefinition, prefix: BotPrefix
) -> tuple[Bot, PromptVersion]:
    """The bot's row and the version row of its current fixed prefix (created if new)."""
    row = await db.scalar(select(Bot).where(Bot.slug == bot.slug))
    if row is None:
        row = Bot(slug=bot.slug, name=bot.name, language=bot.language)
        db.add(row)
        await db.flush()
    else:
        row.name, row.language = bot.name, bot.language
    version = await db.scalar(
        select(PromptVersion).where(PromptVersion.bot_id == row.id, PromptVersion.digest == prefix.digest)
    )
    if version is None:
        version = PromptVersion(
            bot_id=row.id,
            digest=prefix.digest,
            system_prompt=bot.system_prompt,
            greeting=bot.greeting,
            prefix_token_ids=list(prefix.token_ids),
        )
        db.add(version)
        await db.flush()
    return row, version


async def get_conversation(db: AsyncSession, conversation_id: str) -> Conversation | None:
    return await db.get(Conversation, conversation_id)


async def get_prompt_version(db: AsyncSession, version_id: int) -> PromptVersion | None:
    return await db.get(PromptVersion, version_id)


async def list_messages(db: AsyncSession, conversation_id: str) -> list[Message]:
    result = await db.scalars(
        select(Message).where(Message.conversation_id == conversation_id).order_by(Message.seq)
    )
    return list(result)


async def list_message_token_ids(db: AsyncSession, conversation_id: str) -> list[list[int]]:
    result = await db.scalars(
        select(Message.token_ids).where(Message.conversation_id == conversation_id).order_by(Message.seq)
    )
    return list(result)


async def fail_abandoned_replies(db: AsyncSession, conversation_id: str) -> None:
    """Replies still "generating" when their conversation's turn lock is free were abandoned:
    the process writing them stopped. Called with the lock held."""
    await db.execute(
        update(Message)
        .where(Message.conversation_id == conversation_id, Message.status == MessageStatus.GENERATING)
        .values(status=MessageStatus.FAILED, error="the reply was cut off when the app stopped")
    )


async def get_message(db: AsyncSession, message_id: int) -> Message | None:
    return await db.get(Message, message_id)
