"""Erasing a customer's conversations on request (admin)."""

from typing import Annotated, Self

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field, model_validator

from backend.admin.erasure import Erasures
from backend.agents.auth import CurrentAdmin
from backend.api.deps import Work, provided
from backend.api.errors import error_responses
from backend.api.inputs import JsonRoute, StorableText

router = APIRouter(prefix="/api/v1/admin", tags=["admin: records"], route_class=JsonRoute)
ERRORS = error_responses(401, 403, 404, 409, 422)


class ErasureIn(BaseModel):
    """One conversation by its id, or every conversation of one customer by a field of the
    customer context given when it started (for instance `email`)."""

    conversation_id: Annotated[StorableText, Field(max_length=36)] | None = None
    customer_field: Annotated[StorableText, Field(min_length=1, max_length=64)] | None = Field(
        default=None, examples=["email"]
    )
    value: Annotated[StorableText, Field(min_length=1, max_length=500)] | None = Field(
        default=None, examples=["ada@example.com"]
    )

    @model_validator(mode="after")
    def _one_way(self) -> Self:
        by_id = self.conversation_id is not None
        by_customer = self.customer_field is not None or self.value is not None
        if by_id == by_customer:
            raise ValueError("give either conversation_id, or customer_field and value")
        if by_customer and (self.customer_field is None or self.value is None):
            raise ValueError("customer_field and value go together")
        return self


class ErasureOut(BaseModel):
    erased: list[str] = Field(description="The ids of the conversations erased.")


@router.post("/erasures", responses=ERRORS)
async def erase(
    body: ErasureIn,
    admin: CurrentAdmin,
    erasures: Annotated[Erasures, Depends(provided(Erasures))],
    work: Work,
) -> ErasureOut:
    """Erase a customer's conversations: message texts, the customer context, notes and rating
    comments are blanked or deleted (in Postgres, and the session copy in Redis); counts, timings
    and scores stay. Each erased conversation gets an audit entry."""
    if body.conversation_id is not None:
        erased = await erasures.erase_conversation(work, body.conversation_id, admin)
    else:
        assert body.customer_field is not None and body.value is not None
        erased = await erasures.erase_customer(work, body.customer_field, body.value, admin)
    return ErasureOut(erased=erased)
