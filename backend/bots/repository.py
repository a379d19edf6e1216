"""Queries over bots and their prompt versions. Callers own the transaction: this adds and flushes."""

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.bots.models import Bot, PromptVersion
from backend.prompting.assembler import BotPrefix
from backend.prompting.definitions import Bot as BotDefinition


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
            knowledge=bot.knowledge.as_records() if bot.knowledge else None,
            knowledge_in_prefix=prefix.knowledge_in_prefix,
        )
        db.add(version)
        await db.flush()
    return row, version


async def get_prompt_version(db: AsyncSession, version_id: int) -> PromptVersion | None:
    return await db.get(PromptVersion, version_id)


async def get_bot(db: AsyncSession, bot_id: int) -> Bot | None:
    return await db.get(Bot, bot_id)


async def list_bots(db: AsyncSession) -> list[Bot]:
    return list(await db.scalars(select(Bot).order_by(Bot.slug)))


async def list_versions(db: AsyncSession) -> list[PromptVersion]:
    return list(await db.scalars(select(PromptVersion).order_by(PromptVersion.id)))
