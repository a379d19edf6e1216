"""Erasing a customer's conversations on request (admin): a dry run counts what would go, and the
erasure itself needs the conversation id or the customer's value typed again."""

from typing import Annotated, Any, Self

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, model_validator

from backend.admin.erasure import Erasure, Erasures
from backend.agents.auth import CurrentAdmin
from backend.api.deps import Work, provided
from backend.api.errors import error_responses
from backend.api.inputs import JsonRoute, StorableText
from backend.errors import Conflict

router = APIRouter(prefix="/api/v1/admin", tags=["admin: records"], route_class=JsonRoute)
ERRORS = error_responses(401, 403, 404, 409, 422)
TARGETS = ("conversation_id", "customer_field", "value", "confirm")


class ConfirmationMismatch(Conflict):
    code = "confirmation_mismatch"


def exactly_one_way(schema: dict[str, Any]) -> None:
    """The schema says what the validator does: one way at a time, nothing null, and `confirm`
    unless it is a dry run."""
    for name in TARGETS:
        prop = schema["properties"][name]
        prop.update(next(s for s in prop.pop("anyOf") if s.get("type") == "string"))
        prop.pop("default", None)
    customer = [{"required": ["customer_field"]}, {"required": ["value"]}]
    schema["oneOf"] = [
        {"required": ["conversation_id"], "not": {"anyOf": customer}},
        {"required": ["customer_field", "value"], "not": {"required": ["conversation_id"]}},
    ]
    schema["anyOf"] = [
        {"required": ["confirm"]},
        {"required": ["dry_run"], "properties": {"dry_run": {"const": True}}},
    ]


class ErasureIn(BaseModel):
    """One conversation by its id, or every conversation of one customer by a field of the
    customer context given when it started (`email` and `user_id` also match the shop's identity,
    and `email` the address left for the team). `dry_run` counts what would be erased; without
    it, `confirm` must repeat the conversation id or the value."""

    model_config = ConfigDict(json_schema_extra=exactly_one_way)

    conversation_id: Annotated[StorableText, Field(min_length=1, max_length=36)] | None = None
    customer_field: Annotated[StorableText, Field(min_length=1, max_length=64)] | None = Field(
        default=None, examples=["email"]
    )
    value: Annotated[StorableText, Field(min_length=1, max_length=500)] | None = Field(
        default=None, examples=["ada@example.com"]
    )
    confirm: Annotated[StorableText, Field(max_length=500)] | None = Field(
        default=None,
        description="The conversation id, or the value, typed again: required unless dry_run.",
        examples=["ada@example.com"],
    )
    dry_run: bool = Field(default=False, description="Only count what would be erased.")

    @model_validator(mode="after")
    def _one_way(self) -> Self:
        nulls = [name for name in TARGETS if name in self.model_fields_set and getattr(self, name) is None]
        if nulls:
            raise ValueError(f"{nulls[0]} may be left out but not null")
        by_id = self.conversation_id is not None
        by_customer = self.customer_field is not None or self.value is not None
        if by_id == by_customer:
            raise ValueError("give either conversation_id, or customer_field and value")
        if by_customer and (self.customer_field is None or self.value is None):
            raise ValueError("customer_field and value go together")
        if self.confirm is None and not self.dry_run:
            raise ValueError(f"to erase, type the {self.target_name} again in confirm (or set dry_run)")
        return self

    @property
    def target(self) -> str:
        return self.conversation_id if self.conversation_id is not None else self.value or ""

    @property
    def target_name(self) -> str:
        return "conversation id" if self.conversation_id is not None else "value"


class ErasureCountsOut(BaseModel):
    conversations: int
    messages: int = Field(description="Messages whose texts are blanked (they stay counted).")
    identity_records: int = Field(
        description="Customer details deleted: contexts given at the start, the shop's identities of "
        "the customer, e-mail addresses left for the team."
    )
    notes: int
    rating_comments: int


class ErasureOut(BaseModel):
    dry_run: bool
    conversation_ids: list[str] = Field(description="The conversations erased (on a dry run: that would be).")
    counts: ErasureCountsOut

    @classmethod
    def of(cls, erasure: Erasure) -> "ErasureOut":
        counts = ErasureCountsOut.model_validate(erasure.counts, from_attributes=True)
        return cls(dry_run=erasure.dry_run, conversation_ids=erasure.conversation_ids, counts=counts)


@router.post("/erasures", responses=ERRORS)
async def erase(
    body: ErasureIn,
    admin: CurrentAdmin,
    erasures: Annotated[Erasures, Depends(provided(Erasures))],
    work: Work,
) -> ErasureOut:
    """Erase a customer's conversations: message texts, the customer context and identity,
    notes and rating comments are blanked or deleted (in Postgres, and the session copy in
    Redis); counts, timings and scores stay. Each erased conversation gets an audit entry.
    With `dry_run` nothing changes: the answer counts what would go. Otherwise `confirm` must
    repeat the conversation id or the value (a 409 `confirmation_mismatch` if it does not)."""
    if not body.dry_run and (body.confirm or "").strip() != body.target.strip():
        raise ConfirmationMismatch(
            f"confirm must repeat the {body.target_name} exactly ({body.target!r}), not {body.confirm!r}: "
            "nothing was erased"
        )
    if body.conversation_id is not None:
        erased = await erasures.erase_conversation(work, body.conversation_id, admin, dry_run=body.dry_run)
    else:
        assert body.customer_field is not None and body.value is not None
        erased = await erasures.erase_customer(
            work, body.customer_field, body.value, admin, dry_run=body.dry_run
        )
    return ErasureOut.of(erased)
