"""Customers' thumbs up and down on bot replies, counted per bot over the replies of a date range."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.conversations.models import Conversation, Message, ReplyFeedback
from backend.prompting.models import Bot


@dataclass
class FeedbackCounts:
    up: int = 0
    down: int = 0
    up_share: float | None = None  # of the rated replies, the share rated up; None when none was rated

    @classmethod
    def of(cls, up: int, down: int) -> "FeedbackCounts":
        return cls(up=up, down=down, up_share=round(up / (up + down), 4) if up + down else None)


def added(counts: Iterable[FeedbackCounts]) -> FeedbackCounts:
    every = list(counts)
    return FeedbackCounts.of(sum(c.up for c in every), sum(c.down for c in every))


async def feedback_per_bot(
    db: AsyncSession, start: datetime, end: datetime, bot: str | None
) -> dict[str, FeedbackCounts]:
    """The feedback on replies written from `start` (inclusive) to `end` (exclusive), as it
    stands now: a rating changed or taken back counts as it is, not as it was."""
    rows = await db.execute(
        select(Bot.slug, Message.feedback, func.count())
        .select_from(Message)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .join(Bot, Bot.id == Conversation.bot_id)
        .where(Message.created_at >= start, Message.created_at < end, Message.feedback.is_not(None))
        .where(*([Bot.slug == bot] if bot else []))
        .group_by(Bot.slug, Message.feedback)
    )
    counted: dict[str, dict[ReplyFeedback | None, int]] = {}
    for slug, feedback, count in rows.tuples():
        counted.setdefault(slug, {})[feedback] = count
    return {
        slug: FeedbackCounts.of(counts.get(ReplyFeedback.UP, 0), counts.get(ReplyFeedback.DOWN, 0))
        for slug, counts in sorted(counted.items())
    }
