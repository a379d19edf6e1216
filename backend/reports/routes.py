"""The reports endpoints: the whole report, and the bot's replies alone (doubts and feedback)."""

from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from backend.agents.auth import CurrentAgent
from backend.api.deps import Work
from backend.api.errors import error_responses
from backend.api.inputs import StorableText
from backend.errors import InvalidInput
from backend.reports.replies import added, replies_per_bot
from backend.reports.service import as_utc, build_report

router = APIRouter(prefix="/api/v1/reports", tags=["agents: reports"])


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime
    bot: str | None


def report_window(
    from_: Annotated[
        datetime | None, Query(alias="from", description="Start (inclusive); default 7 days ago.")
    ] = None,
    to: Annotated[datetime | None, Query(description="End (exclusive); default now.")] = None,
    bot: Annotated[StorableText | None, Query(max_length=64)] = None,
) -> Window:
    try:
        end = as_utc(to).astimezone(UTC) if to else datetime.now(UTC)
        start = as_utc(from_).astimezone(UTC) if from_ else end - timedelta(days=7)
    except OverflowError:  # near year 1 or 9999, in UTC or 7 days back
        raise InvalidInput("'from' and 'to' must lie between the years 1 and 9999 in UTC") from None
    if start >= end:
        raise InvalidInput("'from' must be before 'to'")
    return Window(start, end, bot)


ReportWindow = Annotated[Window, Depends(report_window)]


@router.get("", responses=error_responses(401, 403, 422))
async def report(_agent: CurrentAgent, work: Work, window: ReportWindow) -> dict[str, Any]:
    """Conversations started in the range, their messages, resolved by the bot vs handed off (and
    the share handed off), first human response time and resolution time (both from the handoff
    on: the bot's time is excluded), and the customers' thumbs up and down on the bot's replies,
    overall and per bot."""
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
