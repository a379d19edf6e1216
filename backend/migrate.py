"""Bring a database to the newest schema with Alembic (Postgres or SQLite)."""

from alembic import command
from alembic.config import Config

from backend.config import PROJECT_ROOT


def alembic_config(database_url: str) -> Config:
    config = Config(str(PROJECT_ROOT / "alembic.ini"))
    config.attributes["database_url"] = database_url
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    """Blocking: call from sync code or through `asyncio.to_thread`."""
    command.upgrade(alembic_config(database_url), revision)
