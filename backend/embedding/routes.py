"""The origins allowed to embed the widget (admin): the settings' list, and the ones added here,
which take effect in every app process without a restart."""

import re
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, status
from pydantic import BaseModel, Field, field_validator
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from backend.agents import audit
from backend.agents.auth import CurrentAdmin
from backend.api.deps import Work, provided
from backend.api.errors import error_responses
from backend.api.inputs import JsonRoute, RowIdPath
from backend.config import WIDGET_ORIGINS_SETTING, normalize_origin
from backend.embedding.cors import ORIGINS_API
from backend.embedding.models import MAX_ORIGIN_CHARS, WidgetOrigin
from backend.embedding.origins import AllowedOrigins
from backend.errors import Conflict, NotFound

router = APIRouter(prefix=ORIGINS_API, tags=["admin: widget origins"], route_class=JsonRoute)
ERRORS = error_responses(401, 403, 404, 409, 422)
Origins = Annotated[AllowedOrigins, Depends(provided(AllowedOrigins))]


# What the schema promises and the validator holds to: scheme://host[:port][/], the port 1-65535.
PORT = "(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
ORIGIN_PATTERN = rf"^[Hh][Tt][Tt][Pp][Ss]?://(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::{PORT})?/?$"


class OriginIn(BaseModel):
    origin: str = Field(
        max_length=MAX_ORIGIN_CHARS,
        description="scheme://host:port of the pages that embed the widget; the port may be left out "
        "when it is the scheme's default.",
        examples=["https://shop.example.com:8443"],
        json_schema_extra={"pattern": ORIGIN_PATTERN},
    )

    @field_validator("origin")
    @classmethod
    def _origin(cls, value: str) -> str:
        normalized = normalize_origin(value)  # says how to write one
        if not re.fullmatch(ORIGIN_PATTERN, value):
            raise ValueError(
                f"{value[:100]!r} is not an origin: write scheme://host:port with nothing around it, "
                "e.g. https://shop.example.com:8443 (a port without leading zeros)"
            )
        return normalized


class OriginOut(BaseModel):
    id: int
    origin: str
    added_by: int | None
    created_at: datetime

    model_config = {"from_attributes": True}


class OriginsOut(BaseModel):
    configured: list[str] = Field(description=f"From {WIDGET_ORIGINS_SETTING} (changed by a restart).")
    added: list[OriginOut] = Field(description="Added here; in effect in every app process at once.")


@router.get("", responses=ERRORS)
async def list_origins(_admin: CurrentAdmin, origins: Origins, work: Work) -> OriginsOut:
    """Every origin allowed to embed the widget besides the server's own."""
    added = await work.db.scalars(select(WidgetOrigin).order_by(WidgetOrigin.id))
    return OriginsOut(
        configured=sorted(origins.configured), added=[OriginOut.model_validate(o) for o in added]
    )


@router.post("", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def add_origin(body: OriginIn, admin: CurrentAdmin, origins: Origins, work: Work) -> OriginOut:
    """Allow pages of this origin to embed the widget, from the next request on, in every process.
    An origin is scheme://host[:port], nothing else (a 422 says how to write one); the change
    is recorded in the audit log."""
    if body.origin in origins.configured:
        raise Conflict(f"{body.origin} is already allowed by {WIDGET_ORIGINS_SETTING}")
    if await work.db.scalar(select(WidgetOrigin.id).where(WidgetOrigin.origin == body.origin)):
        raise Conflict(f"{body.origin} is already allowed")
    added = WidgetOrigin(origin=body.origin, added_by=admin.id)
    work.db.add(added)
    try:
        await work.db.flush()
    except IntegrityError:  # added at the same moment by another request
        raise Conflict(f"{body.origin} is already allowed") from None
    audit.record(work.db, admin, audit.ORIGIN_ADDED, "widget_origin", added.id, origin=added.origin)
    work.after_commit(origins.changed)
    return OriginOut.model_validate(added)


@router.delete("/{origin_id}", status_code=status.HTTP_204_NO_CONTENT, responses=ERRORS)
async def remove_origin(origin_id: RowIdPath, admin: CurrentAdmin, origins: Origins, work: Work) -> None:
    """Stop allowing an origin added here (those of the settings change with a restart); the
    change is recorded in the audit log."""
    added = await work.db.get(WidgetOrigin, origin_id)
    if added is None:
        raise NotFound(f"no added widget origin {origin_id}")
    await work.db.delete(added)
    audit.record(work.db, admin, audit.ORIGIN_REMOVED, "widget_origin", origin_id, origin=added.origin)
    work.after_commit(origins.changed)
