"""The bot's replies per bot over a date range: how many, how many were flagged as doubtful,
and the customers' thumbs up and down on them."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.bots.models import Bot
from backend.conversations.models import (
    HANDOVER,
    Conversation,
    Message,
    MessageRole,
    MessageStatus,
    ReplyFeedback,
)


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


@dataclass
class ReplyCounts:
    replies: int = 0  # complete bot replies
    doubtful: int = 0  # of them, flagged by the reply checks
    doubtful_share: float | None = None
    up: int = 0
    down: int = 0
    up_share: float | None = None  # of the rated replies, the share rated up; None when none was rated

    @classmethod
    def of(cls, replies: int, doubtful: int, up: int, down: int) -> "ReplyCounts":
        return cls(replies, doubtful, _share(doubtful, replies), up, down, _share(up, up + down))


def added(counts: Iterable[ReplyCounts]) -> ReplyCounts:
    every = list(counts)
    return ReplyCounts.of(
        *(sum(getattr(c, name) for c in every) for name in ("replies", "doubtful", "up", "down"))
    )


async def replies_per_bot(
    db: AsyncSession, start: datetime, end: datetime, bot: str | None
) -> dict[str, ReplyCounts]:
    """The bot replies written from `start` (inclusive) to `end` (exclusive), with their doubt
    and feedback as they stand now: a rating changed or taken back counts as it is."""
    rows = await db.execute(
        select(
            Bot.slug,
            func.count(),
            func.count(Message.doubt),
            func.count().filter(Message.feedback == ReplyFeedback.UP),
            func.count().filter(Message.feedback == ReplyFeedback.DOWN),
        )
        .select_from(Message)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .join(Bot, Bot.id == Conversation.bot_id)
        .where(Message.created_at >= start, Message.created_at < end)
        .where(Message.role == MessageRole.ASSISTANT, Message.status == MessageStatus.COMPLETE)
        .where(Message.finish_reason.is_distinct_from(HANDOVER))  # the handover is no answer
        .where(*([Bot.slug == bot] if bot else []))
        .group_by(Bot.slug)
        .order_by(Bot.slug)
    )
    return {
        slug: ReplyCounts.of(replies, doubtful, up, down)
        for slug, replies, doubtful, up, down in rows.tuples()
    }
