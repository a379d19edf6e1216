"""Request and response bodies of the widget API."""

import re
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field, StringConstraints, field_validator
from pydantic_core import PydanticCustomError

from backend.api.inputs import MessageText, StorableText, storable
from backend.config import WIDGET_ORIGINS_SETTING
from backend.conversations.models import ReplyFeedback
from backend.conversations.ratings import MAX_COMMENT_CHARS, MAX_SCORE, MIN_SCORE
from backend.conversations.schemas import IdentityIn, MessageOut

MAX_CONTEXT_KEYS = 20
MAX_CONTEXT_VALUE_CHARS = 500
# JSON has no NaN or infinity, though Python's parser reads them: they could not be stored.
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]


class StartConversation(BaseModel):
    bot: str = Field(
        description="The bot's slug, the name of its folder in prompts/.", examples=["shop-en"], max_length=64
    )
    context: dict[StorableText, StorableText | int | FiniteFloat | bool] | None = Field(
        default=None,
        description="Per-customer facts (name, plan, order number) placed after the bot's fixed "
        "prefix so the prefix stays shared.",
        examples=[{"name": "Ada", "plan": "premium"}],
    )
    identity: IdentityIn | None = Field(
        default=None, description="Who the customer is (shown to agents, never given to the model)."
    )

    @field_validator("context")
    @classmethod
    def _bounded(cls, context: dict[str, Any] | None) -> dict[str, Any] | None:
        if context is None:
            return None
        if len(context) > MAX_CONTEXT_KEYS:
            raise ValueError(f"at most {MAX_CONTEXT_KEYS} context entries")
        for key, value in context.items():
            if len(key) > 64 or len(str(value)) > MAX_CONTEXT_VALUE_CHARS:
                raise ValueError(f"context entry {key[:64]!r} is too long")
        return context


class ConversationStarted(BaseModel):
    conversation_id: str
    customer_token: str = Field(
        description="Secret; send as `Authorization: Bearer <token>`. Shown once and stored only hashed."
    )
    bot: str
    greeting: str


class SendMessage(BaseModel):
    text: MessageText = Field(description="What the customer typed.", examples=["Can I return a tent?"])


class FeedbackIn(BaseModel):
    feedback: ReplyFeedback | None = Field(
        description="`up` (helpful) or `down` (not helpful); null takes the rating back.", examples=["up"]
    )


class FeedbackOut(BaseModel):
    message_id: int
    feedback: ReplyFeedback | None
    feedback_at: datetime | None


class History(BaseModel):
    conversation_id: str
    bot: str
    status: str
    greeting: str
    messages: list[MessageOut]


class RatingIn(BaseModel):
    score: int = Field(ge=MIN_SCORE, le=MAX_SCORE, description="1 (poor) to 5 (excellent).", examples=[5])
    comment: (
        Annotated[str, StringConstraints(max_length=MAX_COMMENT_CHARS), AfterValidator(storable)] | None
    ) = Field(default=None, description="Optional, in the customer's words.")


class RatingOut(BaseModel):
    conversation_id: str
    score: int
    comment: str | None
    created_at: datetime

    model_config = {"from_attributes": True}


class RatingState(BaseModel):
    conversation_id: str
    status: str = Field(description="The conversation's status; only a `resolved` one can be rated.")
    language: str = Field(description="The bot's language, for the widget's rating prompt.")
    rating: RatingOut | None = Field(description="The customer's rating; null if not rated yet.")


class WidgetConfig(BaseModel):
    """What the widget needs before it starts: its limits, and whether the page's origin may use it."""

    max_message_chars: int = Field(description="Longer messages are refused with a 413.")
    origin: str | None = Field(
        description="The calling page's origin (its Origin header); null if same-origin."
    )
    origin_allowed: bool = Field(
        description=f"Whether that origin may call the widget API (see {WIDGET_ORIGINS_SETTING})."
    )
    origins_setting: str = Field(
        default=WIDGET_ORIGINS_SETTING, description="Where allowed origins are listed."
    )


class TeamOut(BaseModel):
    """Who answers once the bot has stepped aside, and when: for the widget's header and its
    question for an e-mail address while the team is away."""

    status: str
    language: str = Field(description="The bot's language tag (`en`, `zh-CN`): the customer is told in it.")
    assignee_name: str | None = Field(description="The agent who has the conversation; null while it waits.")
    open_now: bool = Field(description="Within the bot's office hours (always true without them).")
    next_opening: datetime | None = Field(
        description="When the team is next there, in its time zone (ISO 8601); null while open."
    )
    next_opening_text: str | None = Field(
        description="The same for the customer, in the bot's language and the team's time zone.",
        examples=["Monday 14 December, 08:00 (Europe/Amsterdam time)"],
    )
    contact_email: str | None = Field(description="The address the customer left (unverified).")


# A customer's own address: a name, an @ and a domain with a dot ("ada@example" is a typo the
# team could not answer), no spaces or control characters. Stated in the schema as checked:
# pydantic's EmailStr refused addresses its `format: email` allowed (`.test` domains).
CONTACT_EMAIL = r"^[^@\x00-\x20\x7f]+@[^@.\x00-\x20\x7f]+(\.[^@.\x00-\x20\x7f]+)+$"


class ContactEmailIn(BaseModel):
    email: Annotated[str, Field(max_length=320, pattern=CONTACT_EMAIL), AfterValidator(storable)] = Field(
        description="Where the team may answer; stored as given by the customer, unverified.",
        examples=["ada@example.com"],
    )

    @field_validator("email", mode="before")
    @classmethod
    def _an_address(cls, value: Any) -> Any:
        if isinstance(value, str) and not re.fullmatch(CONTACT_EMAIL, value):
            raise PydanticCustomError(
                "value_error", "value is not a valid email address: a name, an @ and a domain, no spaces"
            )
        return value

    @field_validator("email")
    @classmethod
    def _domain_in_lower_case(cls, value: str) -> str:
        name, _, domain = value.rpartition("@")
        return f"{name}@{domain.lower()}"
