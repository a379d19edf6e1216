"""Customers' ratings of resolved conversations per bot over a date range: how many, their mean,
and how many of each score."""

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.bots.models import Bot
from backend.conversations.models import Conversation, ConversationRating
from backend.conversations.ratings import MAX_SCORE, MIN_SCORE

SCORES = range(MIN_SCORE, MAX_SCORE + 1)


def _no_ratings() -> dict[str, int]:
    return {str(score): 0 for score in SCORES}


@dataclass
class RatingCounts:
    count: int = 0
    mean: float | None = None  # None when nothing was rated
    distribution: dict[str, int] = field(default_factory=_no_ratings)  # score ("1".."5") -> ratings

    @classmethod
    def of(cls, distribution: dict[str, int]) -> "RatingCounts":
        count = sum(distribution.values())
        total = sum(int(score) * n for score, n in distribution.items())
        return cls(count, round(total / count, 2) if count else None, distribution)


def added_ratings(counts: Iterable[RatingCounts]) -> RatingCounts:
    distribution = _no_ratings()
    for each in counts:
        for score, n in each.distribution.items():
            distribution[score] += n
    return RatingCounts.of(distribution)


async def ratings_per_bot(
    db: AsyncSession, start: datetime, end: datetime, bot: str | None
) -> dict[str, RatingCounts]:
    """The ratings given from `start` (inclusive) to `end` (exclusive)."""
    rows = await db.execute(
        select(Bot.slug, ConversationRating.score, func.count())
        .select_from(ConversationRating)
        .join(Conversation, Conversation.id == ConversationRating.conversation_id)
        .join(Bot, Bot.id == Conversation.bot_id)
        .where(ConversationRating.created_at >= start, ConversationRating.created_at < end)
        .where(*([Bot.slug == bot] if bot else []))
        .group_by(Bot.slug, ConversationRating.score)
    )
    distributions: dict[str, dict[str, int]] = {}
    for slug, score, n in rows.tuples():
        distributions.setdefault(slug, _no_ratings())[str(score)] = n
    return {slug: RatingCounts.of(distribution) for slug, distribution in sorted(distributions.items())}
