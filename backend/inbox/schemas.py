"""Bodies of the agents' API."""

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from backend.api.inputs import MessageText, RowId, StorableText
from backend.conversations.schemas import CustomerOut, MessageOut


class StaffMessageOut(MessageOut):
    """A message as the staff see it: with what the model wrote when the checks did not show it."""

    withheld_text: str | None = Field(
        default=None, description="The reply the model wrote, when the checks showed the customer another."
    )


class ConversationRatingOut(BaseModel):
    """The customer's rating of the conversation once it was resolved."""

    score: int = Field(description="1 (poor) to 5 (excellent).")
    comment: str | None = Field(description="In the customer's words; null if they wrote none.")
    created_at: datetime = Field(description="When the customer rated it.")

    model_config = {"from_attributes": True}


class ConversationSummary(BaseModel):
    id: str
    bot: str
    status: str
    assignee_id: int | None
    handoff_reason: str | None
    customer: CustomerOut | None = Field(description="Who the customer is, if the shop said; null if not.")
    contact_email: str | None = Field(
        description="An address the customer left in the widget while the team was away: given by "
        "them, unverified (the shop's verified identity is `customer`)."
    )
    rating: ConversationRatingOut | None = Field(
        description="The customer's rating once resolved; null if not rated."
    )
    message_count: int
    last_message: str | None
    created_at: datetime
    updated_at: datetime


class HandedBack(ConversationSummary):
    waiting_messages: int = Field(description="Customer messages since the last reply, when handed back.")
    answering_message_id: int | None = Field(
        description="The last of them, which the bot is now answering (its reply reaches the customer "
        "live and the transcript); null if none waited or the bot cannot answer."
    )
    unanswered_reason: str | None = Field(
        description="Why the bot cannot answer the waiting messages (e.g. the engine is unavailable): "
        "they are unanswered, for a person to answer. Null otherwise."
    )


class ConversationPage(BaseModel):
    items: list[ConversationSummary]
    total: int
    page: int
    page_size: int


class NoteOut(BaseModel):
    id: int
    agent_id: int
    text: str
    created_at: datetime

    model_config = {"from_attributes": True}


class Transcript(BaseModel):
    id: str
    bot: str
    status: str
    assignee_id: int | None
    handoff_reason: str | None
    customer: CustomerOut | None = Field(description="Who the customer is, if the shop said; null if not.")
    contact_email: str | None = Field(
        description="An address the customer left in the widget while the team was away: given by "
        "them, unverified (the shop's verified identity is `customer`)."
    )
    rating: ConversationRatingOut | None = Field(
        description="The customer's rating once resolved; null if not rated."
    )
    context: dict[str, Any] | None
    greeting: str
    created_at: datetime
    handed_off_at: datetime | None
    first_human_reply_at: datetime | None
    resolved_at: datetime | None
    messages: list[StaffMessageOut]
    notes: list[NoteOut]


class AgentReply(BaseModel):
    text: MessageText = Field(
        description="The reply, or `/shortcode` to send a canned response.",
        examples=["/returns", "Your refund was sent today."],
    )


class NoteIn(BaseModel):
    text: StorableText = Field(min_length=1, max_length=10_000)


class Assignment(BaseModel):
    agent_id: RowId | None = Field(description="The agent to assign; null to unassign.")
