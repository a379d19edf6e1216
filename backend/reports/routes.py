"""The reports endpoints: the whole report, the bot's replies alone (doubts and feedback), and
the transcripts' export (admin)."""

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.agents import audit
from backend.agents.auth import CurrentAdmin, CurrentAgent
from backend.api.deps import Work, provided
from backend.api.errors import error_responses
from backend.api.inputs import DayOrMoment, StorableText
from backend.config import Settings
from backend.errors import InvalidInput
from backend.reports.exports import (
    MEDIA_TYPES,
    ExportFormat,
    TranscriptRow,
    as_csv,
    as_json,
    check_range,
    transcript_rows,
)
from backend.reports.replies import added, replies_per_bot
from backend.reports.service import as_utc, build_report

router = APIRouter(prefix="/api/v1/reports", tags=["agents: reports"])


A_DATE = "a day (its start, UTC: 2025-12-04) or a date and time with its offset (2025-12-04T09:30:00Z)"


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime
    bot: str | None


EARLIEST, LATEST = datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)
DEFAULT_SPAN = timedelta(days=7)


def in_utc(moment: datetime) -> datetime:
    """The moment in UTC. Every date the schema allows is taken: one a datetime cannot hold in UTC
    (year 1 or 9999 with an offset) is cut to the earliest or latest, which holds the same data."""
    try:
        return as_utc(moment).astimezone(UTC)
    except OverflowError:
        return EARLIEST if moment.year == 1 else LATEST


def week_before(end: datetime) -> datetime:
    return end - DEFAULT_SPAN if end - EARLIEST > DEFAULT_SPAN else EARLIEST


def report_window(
    from_: Annotated[
        DayOrMoment | None,
        Query(alias="from", description=f"Start (inclusive), {A_DATE}; default 7 days before the end."),
    ] = None,
    to: Annotated[DayOrMoment | None, Query(description=f"End (exclusive), {A_DATE}; default now.")] = None,
    bot: Annotated[StorableText | None, Query(max_length=64)] = None,
) -> Window:
    end = in_utc(to) if to else datetime.now(UTC)
    start = in_utc(from_) if from_ else week_before(end)
    if start >= end:
        raise InvalidInput("'from' must be before 'to'")
    return Window(start, end, bot)


ReportWindow = Annotated[Window, Depends(report_window)]


@router.get("", responses=error_responses(401, 403, 422))
async def report(_agent: CurrentAgent, work: Work, window: ReportWindow) -> dict[str, Any]:
    """Conversations started in the range, their messages, resolved by the bot vs handed off (and
    the share handed off), first human response time and resolution time (both from the handoff
    on: the bot's time is excluded), the customers' thumbs up and down on the bot's replies, and
    their 1-5 ratings of resolved conversations given in the range (count, mean, how many of each
    score), overall and per bot."""
    result = await build_report(work.db, window.start, window.end, window.bot)
    return {
        **result,
        "total": asdict(result["total"]),
        "per_bot": {slug: asdict(r) for slug, r in result["per_bot"].items()},
    }


@router.get("/replies", responses=error_responses(401, 403, 422))
async def replies_report(_agent: CurrentAgent, work: Work, window: ReportWindow) -> dict[str, Any]:
    """The bot's replies written in the range, overall and per bot: how many, how many were
    flagged as doubtful, and the customers' thumbs up and down (the admin page's figures)."""
    per_bot = await replies_per_bot(work.db, window.start, window.end, window.bot)
    return {
        "from": window.start,
        "to": window.end,
        "bot": window.bot,
        "total": asdict(added(per_bot.values())),
        "per_bot": {slug: asdict(counts) for slug, counts in per_bot.items()},
    }


@router.get(
    "/transcripts",
    response_model=list[TranscriptRow],
    responses={
        200: {
            "description": "One row per message, streamed: a JSON array, or CSV with a header line.",
            "content": {"text/csv": {"schema": {"type": "string"}}},
        },
        **error_responses(401, 403, 422),
    },
    tags=["admin: records"],
)
async def export_transcripts(
    admin: CurrentAdmin,
    work: Work,
    window: ReportWindow,
    settings: Annotated[Settings, Depends(provided(Settings))],
    sessions: Annotated[async_sessionmaker[AsyncSession], Depends(provided(async_sessionmaker))],
    format_: Annotated[ExportFormat, Query(alias="format")] = ExportFormat.CSV,
) -> StreamingResponse:
    """Every message of the conversations started in the range (at most
    `PREFIXDESK_EXPORT_MAX_DAYS` days; a longer one is 422), in order, as CSV or JSON. The
    export is recorded in the audit log."""
    check_range(window.start, window.end, settings.export_max_days)
    audit.record(
        work.db,
        admin,
        audit.EXPORT,
        "transcripts",
        None,
        start=window.start.isoformat(),
        end=window.end.isoformat(),
        bot=window.bot,
        format=format_.value,
    )
    rows = transcript_rows(sessions, window.start, window.end, window.bot)
    body = as_csv(rows) if format_ == ExportFormat.CSV else as_json(rows)
    stamp = f"{window.start:%Y%m%d}-{window.end:%Y%m%d}"
    return StreamingResponse(
        body,
        media_type=MEDIA_TYPES[format_],
        headers={"Content-Disposition": f'attachment; filename="transcripts-{stamp}.{format_.value}"'},
    )
