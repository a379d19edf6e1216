"""What is stored of bots: each bot, and every version of its fixed prefix that served traffic."""

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from backend.db import Base, utcnow


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
    # Its help center's articles ({id, title, url, text}, canonical order), null if it has none;
    # in the fixed prefix, or brought beside the questions they match when they do not fit.
    knowledge: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)
    knowledge_in_prefix: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
