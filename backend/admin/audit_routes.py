"""The audit log of what agents and admins did (admin), newest first."""

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from pydantic import BaseModel

from backend.agents import audit
from backend.agents.auth import CurrentAdmin
from backend.api.deps import Work
from backend.api.errors import error_responses
from backend.api.inputs import JsonRoute, Page

router = APIRouter(prefix="/api/v1/admin", tags=["admin: records"], route_class=JsonRoute)


class AuditEntryOut(BaseModel):
    id: int
    created_at: datetime
    actor_id: int | None
    actor_name: str
    action: str
    target_type: str
    target_id: str | None
    details: dict[str, Any]

    model_config = {"from_attributes": True}


class AuditPage(BaseModel):
    items: list[AuditEntryOut]
    total: int
    page: int
    page_size: int


@router.get("/audit", responses=error_responses(401, 403, 422))
async def audit_log(
    _admin: CurrentAdmin,
    work: Work,
    page: Page = 1,
    page_size: Annotated[int, Query(ge=1, le=200)] = 50,
) -> AuditPage:
    """Take-overs and assignments, exports, erasures, API tokens created and revoked, agents
    created: who, what, when, newest first. Actions: `conversation.take_over`,
    `conversation.assign`, `transcripts.export`, `conversations.erase`, `token.create`,
    `token.revoke`, `agent.create`."""
    rows, total = await audit.page(work.db, limit=page_size, offset=(page - 1) * page_size)
    return AuditPage(
        items=[AuditEntryOut.model_validate(r) for r in rows], total=total, page=page, page_size=page_size
    )
