"""The audit log of what agents and admins did (admin), newest first, filtered by who, what and when."""

import re
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, BeforeValidator, Field

from backend.agents import audit
from backend.agents.auth import CurrentAdmin
from backend.agents.models import AuditEntry
from backend.api.deps import Work
from backend.api.errors import error_responses
from backend.api.inputs import JsonRoute, Page, RowIdQuery

router = APIRouter(prefix="/api/v1/admin", tags=["admin: records"], route_class=JsonRoute)
ERRORS = error_responses(401, 403, 422)

# RFC 3339, as the schema's `date-time` says: a bare number is not a date.
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([Zz]|[+-]\d{2}:\d{2})")


def rfc3339(value: object) -> object:
    if isinstance(value, str) and not _RFC3339.fullmatch(value):
        raise ValueError("write a date and time with its offset, e.g. 2025-12-04T00:00:00Z")
    return value


Moment = Annotated[datetime, BeforeValidator(rfc3339)]


class AuditEntryOut(BaseModel):
    id: int
    created_at: datetime
    actor_id: int | None
    actor_name: str
    action: str
    action_label: str = Field(description="The action's name for people, e.g. 'Exported transcripts'.")
    target_type: str
    target_id: str | None
    details: dict[str, Any]

    @classmethod
    def of(cls, entry: AuditEntry) -> "AuditEntryOut":
        return cls(
            id=entry.id,
            created_at=entry.created_at,
            actor_id=entry.actor_id,
            actor_name=entry.actor_name,
            action=entry.action,
            action_label=audit.label(entry.action),
            target_type=entry.target_type,
            target_id=entry.target_id,
            details=entry.details,
        )


class AuditPage(BaseModel):
    items: list[AuditEntryOut]
    total: int
    page: int
    page_size: int


class AuditActionOut(BaseModel):
    action: str
    label: str


@router.get("/audit", responses=ERRORS)
async def audit_log(
    _admin: CurrentAdmin,
    work: Work,
    page: Page = 1,
    page_size: Annotated[int, Query(ge=1, le=200)] = 50,
    actor_id: Annotated[RowIdQuery, Query(description="Only this agent's entries.")] = None,
    action: Annotated[audit.AuditAction | None, Query(description="Only this action.")] = None,
    from_: Annotated[
        Moment | None,
        Query(alias="from", description="Written at or after (RFC 3339, e.g. 2025-12-04T00:00:00Z)."),
    ] = None,
    to: Annotated[Moment | None, Query(description="Written before (exclusive; RFC 3339).")] = None,
) -> AuditPage:
    """Who did what, when, newest first: take-overs and assignments, exports, erasures, API
    tokens created and revoked, agents created, widget origins allowed and removed, prompt
    reloads, webhooks created and deleted. `GET /api/v1/admin/audit/actions` lists the actions
    with their labels; an unknown `action` is a 422 that lists them."""
    only = audit.AuditFilter(actor_id=actor_id, action=action, start=from_, end=to)
    rows, total = await audit.page(work.db, limit=page_size, offset=(page - 1) * page_size, only=only)
    return AuditPage(items=[AuditEntryOut.of(r) for r in rows], total=total, page=page, page_size=page_size)


@router.get("/audit/actions", responses=error_responses(401, 403))
async def audit_actions(_admin: CurrentAdmin) -> list[AuditActionOut]:
    """Every action the audit log records, with its label."""
    return [AuditActionOut(action=a, label=audit.label(a)) for a in audit.ACTIONS]
