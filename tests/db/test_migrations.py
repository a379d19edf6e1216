"""Alembic migrations run on Postgres and SQLite, up and down."""

import asyncio
import os

from sqlalchemy import inspect

from backend.db import create_db_engine
from backend.migrate import alembic_config, upgrade
from backend.models import Base
from tests.support import drop_database, recreate_database

TABLES = set(Base.metadata.tables) | {"alembic_version"}


async def tables(url: str) -> set[str]:
    engine = create_db_engine(url)
    async with engine.connect() as connection:
        names = await connection.run_sync(lambda sync: set(inspect(sync).get_table_names()))
    await engine.dispose()
    return names


async def up_and_down(url: str) -> None:
    from alembic import command

    await asyncio.to_thread(upgrade, url)
    assert await tables(url) == TABLES
    # The models and the migrations describe the same schema (fails on a forgotten migration).
    await asyncio.to_thread(command.check, alembic_config(url))
    await asyncio.to_thread(command.downgrade, alembic_config(url), "base")
    assert await tables(url) == {"alembic_version"}
    await asyncio.to_thread(upgrade, url)
    assert await tables(url) == TABLES


async def test_migrations_on_postgres():
    name = f"prefixdesk_migrations_test_{os.getpid()}"
    try:
        await up_and_down(await recreate_database(name))
    finally:
        await drop_database(name)


async def test_migrations_on_sqlite(tmp_path):
    await up_and_down(f"sqlite+aiosqlite:///{tmp_path / 'prefixdesk.db'}")
