"""Transcripts of the conversations started in a date range, one row per message, as CSV or JSON.

The rows are read with a server-side cursor in a session of their own and written out as they
come, so an export of a busy month never sits whole in memory. The range is bounded by
`PREFIXDESK_EXPORT_MAX_DAYS`.
"""

import csv
import io
from collections.abc import AsyncIterator
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.bots.models import Bot
from backend.conversations.models import Conversation, Message
from backend.errors import InvalidInput

ROWS_PER_FETCH = 500


class ExportFormat(StrEnum):
    CSV = "csv"
    JSON = "json"


MEDIA_TYPES = {ExportFormat.CSV: "text/csv; charset=utf-8", ExportFormat.JSON: "application/json"}


class TranscriptRow(BaseModel):
    conversation_id: str
    bot: str
    conversation_status: str
    conversation_created_at: datetime
    seq: int
    role: str
    author_agent_id: int | None
    message_status: str
    text: str
    created_at: datetime


COLUMNS = tuple(TranscriptRow.model_fields)


def check_range(start: datetime, end: datetime, max_days: int) -> None:
    days = (end - start).total_seconds() / 86400
    if days > max_days:
        raise InvalidInput(
            f"the range covers {days:.1f} days; an export covers at most {max_days} days "
            "(PREFIXDESK_EXPORT_MAX_DAYS): export it in parts"
        )


async def transcript_rows(
    sessions: async_sessionmaker[AsyncSession], start: datetime, end: datetime, bot: str | None
) -> AsyncIterator[TranscriptRow]:
    """Every message of the conversations started from `start` (inclusive) to `end` (exclusive),
    conversation by conversation, in order."""
    query = (
        select(
            Conversation.id,
            Bot.slug,
            Conversation.status,
            Conversation.created_at,
            Message.seq,
            Message.role,
            Message.author_agent_id,
            Message.status,
            Message.text,
            Message.created_at,
        )
        .select_from(Message)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .join(Bot, Bot.id == Conversation.bot_id)
        .where(Conversation.created_at >= start, Conversation.created_at < end)
        .where(*([Bot.slug == bot] if bot else []))
        .order_by(Conversation.created_at, Conversation.id, Message.seq)
        .execution_options(yield_per=ROWS_PER_FETCH)
    )
    async with sessions() as db:
        result = await db.stream(query)
        async for row in result:
            yield TranscriptRow(**dict(zip(COLUMNS, row, strict=True)))


async def as_csv(rows: AsyncIterator[TranscriptRow]) -> AsyncIterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def line(values: tuple[object, ...]) -> str:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow(values)
        return buffer.getvalue()

    yield line(COLUMNS)
    async for row in rows:
        yield line(tuple(row.model_dump(mode="json").values()))


async def as_json(rows: AsyncIterator[TranscriptRow]) -> AsyncIterator[str]:
    """A JSON array, one row at a time."""
    separator = "["
    async for row in rows:
        yield separator + row.model_dump_json()
        separator = ","
    yield "[]" if separator == "[" else "]"
