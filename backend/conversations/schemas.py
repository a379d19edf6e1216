"""Request and response bodies of the widget API."""

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, EmailStr, Field, StringConstraints, field_validator

from backend.api.inputs import StorableText, storable
from backend.config import WIDGET_ORIGINS_SETTING
from backend.conversations.models import Message, ReplyFeedback
from backend.conversations.ratings import MAX_COMMENT_CHARS, MAX_SCORE, MIN_SCORE

MAX_CONTEXT_KEYS = 20
MAX_CONTEXT_VALUE_CHARS = 500
# JSON has no NaN or infinity, though Python's parser reads them: they could not be stored.
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]


SingleLine = Annotated[StorableText, Field(pattern=r"^[^\r\n]*$")]


class IdentityIn(BaseModel):
    """Who the customer is, as the shop's server says; verified only with a matching signature."""

    user_id: SingleLine | None = Field(default=None, min_length=1, max_length=255, examples=["cus_1042"])
    email: SingleLine | None = Field(
        default=None, max_length=320, pattern=r"^[^@\s]+@[^@\s]+$", examples=["ada@example.com"]
    )
    name: SingleLine | None = Field(default=None, min_length=1, max_length=200, examples=["Ada Lovelace"])
    signature: str | None = Field(
        default=None,
        pattern=r"^[0-9a-fA-F]{64}$",
        description='Hex HMAC-SHA256 of `user_id + "\\n" + email + "\\n" + name` (a missing field is '
        "empty) under the server's identity secret, computed by the shop's server. Without it the "
        "identity is unverified; a wrong one is refused (403).",
    )


class CustomerOut(BaseModel):
    user_id: str | None
    email: str | None
    name: str | None
    verified: bool = Field(
        description="Signed by the shop's server; unverified identities are trusted for nothing."
    )


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
    text: StorableText = Field(description="What the customer typed.", examples=["Can I return a tent?"])


class SourceOut(BaseModel):
    id: str = Field(description="The article's id, as the reply cited it.")
    title: str
    url: str | None = Field(default=None, description="Its public address, if the help center gives one.")


class MessageOut(BaseModel):
    id: int
    seq: int
    role: str
    status: str
    author_agent_id: int | None = None
    author_name: str | None = Field(default=None, description="The agent's name, on an agent's message.")
    text: str
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    completion_tokens: int | None = None
    ttft_ms: float | None = None
    total_ms: float | None = None
    finish_reason: str | None = None
    doubt: str | None = Field(
        default=None, description="Why the checks think a bot reply may be wrong, if they do."
    )
    feedback: str | None = Field(
        default=None, description="The customer's rating of a bot reply, `up` or `down`; null if none."
    )
    feedback_at: datetime | None = None
    sources: list[SourceOut] = Field(
        default_factory=list,
        description="The help-center articles a bot reply cites, each checked against the bot's articles.",
    )
    created_at: datetime

    model_config = {"from_attributes": True}

    @field_validator("sources", mode="before")
    @classmethod
    def _no_sources(cls, value: object) -> object:
        return [] if value is None else value

    @classmethod
    def of(cls, message: Message, author_names: Mapping[int, str]) -> "MessageOut":
        """The message, with its agent's name (`author_names`: agent id to name)."""
        out = cls.model_validate(message)
        if message.author_agent_id is not None:
            out.author_name = author_names.get(message.author_agent_id)
        return out


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
    language: str = Field(description="The bot's language (`en`, `zh`): the customer is told in it.")
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


class ContactEmailIn(BaseModel):
    email: EmailStr = Field(
        max_length=320,
        description="Where the team may answer; stored as given by the customer, unverified.",
        examples=["ada@example.com"],
    )
