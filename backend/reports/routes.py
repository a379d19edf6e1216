"""The reports endpoint."""

from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query

from backend.agents.auth import CurrentAgent
from backend.api.deps import Work
from backend.api.errors import error_responses
from backend.api.inputs import StorableText
from backend.errors import InvalidInput
from backend.reports.service import as_utc, build_report

router = APIRouter(prefix="/api/v1/reports", tags=["agents: reports"])


@router.get("", responses=error_responses(401, 403, 422))
async def report(
    _agent: CurrentAgent,
    work: Work,
    from_: Annotated[
        datetime | None, Query(alias="from", description="Start (inclusive); default 7 days ago.")
    ] = None,
    to: Annotated[datetime | None, Query(description="End (exclusive); default now.")] = None,
    bot: Annotated[StorableText | None, Query(max_length=64)] = None,
) -> dict[str, Any]:
    """Conversations, messages, resolved by the bot vs handed off, first human response time and
    resolution time (both from the handoff on: the bot's time is excluded), overall and per bot."""
    try:
        end = as_utc(to).astimezone(UTC) if to else datetime.now(UTC)
        start = as_utc(from_).astimezone(UTC) if from_ else end - timedelta(days=7)
    except OverflowError:  # near year 1 or 9999, in UTC or 7 days back
        raise InvalidInput("'from' and 'to' must lie between the years 1 and 9999 in UTC") from None
    if start >= end:
        raise InvalidInput("'from' must be before 'to'")
    result = await build_report(work.db, start, end, bot)
    return {
        **result,
        "total": asdict(result["total"]),
        "per_bot": {slug: asdict(r) for slug, r in result["per_bot"].items()},
    }
