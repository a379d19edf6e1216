"""What is stored of conversations: conversations, their messages, agents' private notes, the
customers' ratings."""

import enum
from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from backend.bots.models import Bot
from backend.db import Base, string_enum, utcnow


class ConversationStatus(enum.StrEnum):
    BOT = "bot"  # the bot replies
    OPEN = "open"  # waiting for or with a human agent; the bot is silent
    RESOLVED = "resolved"


class HandoffReason(enum.StrEnum):
    CUSTOMER_REQUEST = "customer_request"  # the customer asked for a person
    UNANSWERED = "unanswered"  # the bot could not answer several times in a row
    AGENT = "agent"  # an agent took the conversation over
    DOUBT = "doubt"  # a reply was flagged as doubtful and the bot hands over on doubt


class MessageRole(enum.StrEnum):
    USER = "user"  # the customer
    ASSISTANT = "assistant"  # the bot
    AGENT = "agent"  # a human agent, speaking on the assistant's side of the chat template


HANDOVER = "handoff"  # the finish reason of the bot's message that hands over to a person: no answer


class MessageStatus(enum.StrEnum):
    COMPLETE = "complete"
    GENERATING = "generating"
    FAILED = "failed"
    INTERRUPTED = "interrupted"  # an agent took over while the bot was replying


class ReplyFeedback(enum.StrEnum):
    """What a customer thought of a bot reply: thumbs up or down."""

    UP = "up"
    DOWN = "down"


class Conversation(Base):
    __tablename__ = "conversations"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), index=True)
    prompt_version_id: Mapped[int] = mapped_column(ForeignKey("prompt_versions.id"))
    customer_token_hash: Mapped[str] = mapped_column(String(64))
    context: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    context_token_ids: Mapped[list[int]]
    status: Mapped[ConversationStatus] = mapped_column(
        string_enum(ConversationStatus, "conversation_status"), default=ConversationStatus.BOT, index=True
    )
    # Who the customer is, as the embedding shop says; verified when its server signed it.
    customer_user_id: Mapped[str | None] = mapped_column(String(255))
    customer_email: Mapped[str | None] = mapped_column(String(320), index=True)
    customer_name: Mapped[str | None] = mapped_column(String(200))
    identity_verified: Mapped[bool] = mapped_column(default=False)
    # An address the customer typed in the widget while the team was away: given by them,
    # unverified, and never written over the shop's identity above.
    contact_email: Mapped[str | None] = mapped_column(String(320))
    contact_email_at: Mapped[datetime | None]
    assignee_id: Mapped[int | None] = mapped_column(ForeignKey("agents.id"), index=True)
    # Bumped with every stored message; a cached session is valid only at the same count.
    message_count: Mapped[int] = mapped_column(Integer, default=0)
    # Bot replies in a row that said they could not answer; reset by an answer.
    unanswered_replies: Mapped[int] = mapped_column(Integer, default=0)
    handoff_reason: Mapped[HandoffReason | None] = mapped_column(string_enum(HandoffReason, "handoff_reason"))
    handed_off_at: Mapped[datetime | None]
    first_human_reply_at: Mapped[datetime | None]
    resolved_at: Mapped[datetime | None]
    # When the customer's texts and identity were erased on request (the figures stay).
    erased_at: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    bot: Mapped[Bot] = relationship(lazy="joined")


class Message(Base):
    __tablename__ = "messages"
    __table_args__ = (UniqueConstraint("conversation_id", "seq"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    seq: Mapped[int] = mapped_column(Integer)  # order within the conversation, from 1
    role: Mapped[MessageRole] = mapped_column(string_enum(MessageRole, "message_role"))
    status: Mapped[MessageStatus] = mapped_column(string_enum(MessageStatus, "message_status"))
    author_agent_id: Mapped[int | None] = mapped_column(ForeignKey("agents.id"))
    text: Mapped[str] = mapped_column(Text, default="")
    # The exact ids this message adds to the model's context (wrappers included).
    token_ids: Mapped[list[int]] = mapped_column(default=list)
    prompt_tokens: Mapped[int | None] = mapped_column(Integer)
    cached_tokens: Mapped[int | None] = mapped_column(Integer)
    completion_tokens: Mapped[int | None] = mapped_column(Integer)
    ttft_ms: Mapped[float | None] = mapped_column(Float)
    total_ms: Mapped[float | None] = mapped_column(Float)
    finish_reason: Mapped[str | None] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text)
    # The customer's rating of a bot reply (null: none, or taken back) and when it last changed.
    feedback: Mapped[ReplyFeedback | None] = mapped_column(string_enum(ReplyFeedback, "reply_feedback"))
    feedback_at: Mapped[datetime | None]
    doubt: Mapped[str | None] = mapped_column(Text)  # why a bot reply may be wrong, if it may
    # What the model wrote, when the checks did not let it through (the text is what was shown).
    withheld_text: Mapped[str | None] = mapped_column(Text)
    # A customer's message: the ids of the help-center articles given to the model beside it.
    articles: Mapped[list[str] | None] = mapped_column(JSON)
    # A bot reply: the articles it cites ({id, title, url}), checked against its help center.
    sources: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


class Note(Base):
    """A private note between agents: never shown to the customer, never given to the model."""

    __tablename__ = "notes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id"))
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ConversationRating(Base):
    """The customer's rating of a resolved conversation, 1 to 5, with an optional comment.

    One per conversation: the conversation id is the key, so a second rating cannot be stored.
    """

    __tablename__ = "conversation_ratings"

    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), primary_key=True
    )
    score: Mapped[int] = mapped_column(Integer)
    comment: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
