"""The conversation record's shapes on the API, shared by the widget's and the agents' routes."""

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field, field_validator

from backend.api.inputs import storable
from backend.conversations.models import Message

# The fields are signed joined by newlines, so none may hold one. The bounds come before the
# text check: after it, pydantic still applies them but leaves them out of the OpenAPI schema,
# which then allowed what the API refuses.
SINGLE_LINE = r"^[^\r\n\x00]*$"
# Something, an @, something: no spaces, control characters or second @. Plain ASCII ranges, not
# `\s`, which each regex engine (the app's, schemathesis', a client's) reads differently.
EMAIL = r"^[^@\x00-\x20\x7f]+@[^@\x00-\x20\x7f]+$"

UserId = Annotated[str, Field(min_length=1, max_length=255, pattern=SINGLE_LINE), AfterValidator(storable)]
Email = Annotated[str, Field(max_length=320, pattern=EMAIL), AfterValidator(storable)]
Name = Annotated[str, Field(min_length=1, max_length=200, pattern=SINGLE_LINE), AfterValidator(storable)]


class IdentityIn(BaseModel):
    """Who the customer is, as the shop's server says; verified only with a matching signature."""

    user_id: UserId | None = Field(default=None, examples=["cus_1042"])
    email: Email | None = Field(default=None, examples=["ada@example.com"])
    name: Name | None = Field(default=None, examples=["Ada Lovelace"])
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


class SourceOut(BaseModel):
    id: str = Field(description="The article's id, as the reply cited it.")
    title: str
    url: str | None = Field(default=None, description="Its public address, if the help center gives one.")
    passage: str | None = Field(
        default=None,
        description="What the reply stands on: the article's passage, or the policy's line (id `policy`).",
    )


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
