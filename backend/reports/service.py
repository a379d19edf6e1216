"""Support reports over a date range, overall and per bot. Human times exclude the bot's time."""

from dataclasses import dataclass, field
from datetime import UTC, datetime
from statistics import mean, median
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.bots.models import Bot
from backend.conversations.models import Conversation, ConversationStatus, Message
from backend.reports.ratings import RatingCounts, added_ratings, ratings_per_bot
from backend.reports.replies import ReplyCounts, added, replies_per_bot


def as_utc(moment: datetime) -> datetime:
    """SQLite hands datetimes back without a zone; they were stored in UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _seconds(durations: list[float]) -> dict[str, float | None]:
    if not durations:
        return {"mean": None, "median": None, "count": 0}
    return {"mean": round(mean(durations), 1), "median": round(median(durations), 1), "count": len(durations)}


@dataclass
class BotReport:
    conversations: int = 0
    messages: dict[str, int] = field(default_factory=dict)
    resolved_by_bot: int = 0
    handed_off: int = 0
    handoff_rate: float | None = None  # handed_off / conversations; None without conversations
    first_human_response_s: dict[str, float | None] = field(default_factory=dict)
    resolution_s: dict[str, float | None] = field(default_factory=dict)
    replies: ReplyCounts = field(default_factory=ReplyCounts)
    ratings: RatingCounts = field(default_factory=RatingCounts)


async def build_report(db: AsyncSession, start: datetime, end: datetime, bot: str | None) -> dict[str, Any]:
    conversations = await db.scalars(
        select(Conversation)
        .join(Bot, Bot.id == Conversation.bot_id)
        .where(Conversation.created_at >= start, Conversation.created_at < end)
        .where(*([Bot.slug == bot] if bot else []))
    )
    by_bot: dict[str, list[Conversation]] = {}
    for conversation in conversations.unique():
        by_bot.setdefault(conversation.bot.slug, []).append(conversation)
    counts = await db.execute(
        select(Bot.slug, Message.role, func.count())
        .select_from(Message)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .join(Bot, Bot.id == Conversation.bot_id)
        .where(Message.created_at >= start, Message.created_at < end)
        .where(*([Bot.slug == bot] if bot else []))
        .group_by(Bot.slug, Message.role)
    )
    message_counts: dict[str, dict[str, int]] = {}
    for slug, message_role, count in counts:
        message_counts.setdefault(slug, {})[message_role.value] = count
    replies = await replies_per_bot(db, start, end, bot)
    ratings = await ratings_per_bot(db, start, end, bot)
    per_bot = {
        slug: _summarise(
            by_bot.get(slug, []),
            message_counts.get(slug, {}),
            replies.get(slug, ReplyCounts()),
            ratings.get(slug, RatingCounts()),
        )
        # A conversation started before the range may be rated in it.
        for slug in sorted(by_bot.keys() | ratings.keys())
    }
    every = [c for rows in by_bot.values() for c in rows]
    total_messages: dict[str, int] = {}
    for counts_of_bot in message_counts.values():
        for role, count in counts_of_bot.items():
            total_messages[role] = total_messages.get(role, 0) + count
    return {
        "from": start,
        "to": end,
        "bot": bot,
        "total": _summarise(every, total_messages, added(replies.values()), added_ratings(ratings.values())),
        "per_bot": per_bot,
    }


def _summarise(
    conversations: list[Conversation], messages: dict[str, int], replies: ReplyCounts, ratings: RatingCounts
) -> BotReport:
    handed = [c for c in conversations if c.handed_off_at is not None]
    first_reply = [
        (as_utc(c.first_human_reply_at) - as_utc(c.handed_off_at)).total_seconds()
        for c in handed
        if c.first_human_reply_at and c.handed_off_at
    ]
    resolution = [
        (as_utc(c.resolved_at) - as_utc(c.handed_off_at)).total_seconds()
        for c in handed
        if c.resolved_at and c.handed_off_at
    ]
    return BotReport(
        conversations=len(conversations),
        messages=messages,
        resolved_by_bot=sum(
            1 for c in conversations if c.status == ConversationStatus.RESOLVED and c.handed_off_at is None
        ),
        handed_off=len(handed),
        handoff_rate=round(len(handed) / len(conversations), 4) if conversations else None,
        first_human_response_s=_seconds(first_reply),
        resolution_s=_seconds(resolution),
        replies=replies,
        ratings=ratings,
    )
