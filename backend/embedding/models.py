"""Origins an admin allowed to embed the widget, beside the ones in the settings."""

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from backend.db import Base, utcnow

MAX_ORIGIN_CHARS = 300


class WidgetOrigin(Base):
    __tablename__ = "widget_origins"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    origin: Mapped[str] = mapped_column(String(MAX_ORIGIN_CHARS), unique=True)  # normalized
    added_by: Mapped[int | None] = mapped_column(ForeignKey("agents.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
