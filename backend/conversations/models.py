"""What is stored: bots, their prompt versions, conversations and messages."""

import enum
from datetime import UTC, datetime

from sqlalchemy import (
    JSON,
    BigInteger,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy import Enum as SAEnum
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map = {datetime: DateTime(timezone=True), list[int]: JSON}


class ConversationStatus(enum.StrEnum):
    BOT = "bot"  # the bot replies
    OPEN = "open"  # waiting for or with a human agent
    RESOLVED = "resolved"


class MessageRole(enum.StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


class MessageStatus(enum.StrEnum):
    COMPLETE = "complete"
    GENERATING = "generating"
    FAILED = "failed"


def _enum(kind: type[enum.Enum], name: str) -> SAEnum:
    # Stored as plain strings: portable across Postgres and SQLite, easy to extend.
    return SAEnum(
        kind,
        name=name,
        native_enum=False,
        length=16,
        values_callable=lambda members: [m.value for m in members],
    )


class Bot(Base):
    __tablename__ = "bots"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True)
    name: Mapped[str] = mapped_column(String(200))
    language: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class PromptVersion(Base):
    """A bot's fixed prefix exactly as the model saw it; conversations keep theirs."""

    __tablename__ = "prompt_versions"
    __table_args__ = (UniqueConstraint("bot_id", "digest"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id", ondelete="CASCADE"))
    digest: Mapped[str] = mapped_column(String(64))
    system_prompt: Mapped[str] = mapped_column(Text)
    greeting: Mapped[str] = mapped_column(Text)
    prefix_token_ids: Mapped[list[int]]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Conversation(Base):
    __tablename__ = "conversations"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    bot_id: Mapped[int] = mapped_column(ForeignKey("bots.id"), index=True)
    prompt_version_id: Mapped[int] = mapped_column(ForeignKey("prompt_versions.id"))
    customer_token_hash: Mapped[str] = mapped_column(String(64))
    context: Mapped[dict | None] = mapped_column(JSON)
    context_token_ids: Mapped[list[int]]
    status: Mapped[ConversationStatus] = mapped_column(
        _enum(ConversationStatus, "conversation_status"), default=ConversationStatus.BOT
    )
    # Bumped with every stored message; a cached session is valid only at the same count.
    message_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)

    bot: Mapped[Bot] = relationship(lazy="joined")
    prompt_version: Mapped[PromptVersion] = relationship(lazy="raise")


class Message(Base):
    __tablename__ = "messages"
    __table_args__ = (UniqueConstraint("conversation_id", "seq"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    conversation_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.id", ondelete="CASCADE"), index=True
    )
    seq: Mapped[int] = mapped_column(Integer)  # order within the conversation, from 1
    role: Mapped[MessageRole] = mapped_column(_enum(MessageRole, "message_role"))
    status: Mapped[MessageStatus] = mapped_column(_enum(MessageStatus, "message_status"))
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
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
