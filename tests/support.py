"""What several test modules share: service addresses, a fresh database, a running app."""

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from sqlalchemy import text

from backend.app import create_app
from backend.config import Settings
from backend.db import create_db_engine

POSTGRES_ADMIN_URL = os.environ.get(
    "PREFIXDESK_TEST_POSTGRES", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
)
REDIS_URL = os.environ.get("PREFIXDESK_TEST_REDIS", "redis://127.0.0.1:6379/0")
TEST_DATABASE = "prefixdesk_test"
CACHE_DIR = Path(os.environ.get("PREFIXDESK_CACHE_DIR", Path.home() / ".cache" / "prefixdesk"))


async def recreate_database(name: str) -> str:
    admin = create_db_engine(POSTGRES_ADMIN_URL)
    async with admin.connect() as connection:
        connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
        await connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        await connection.execute(text(f'CREATE DATABASE "{name}"'))
    await admin.dispose()
    return POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"


@asynccontextmanager
async def running_app(settings: Settings, engine) -> AsyncIterator[httpx.AsyncClient]:
    """The app with its lifespan, on the given engine, ready (warmed) before yielding."""
    app = create_app(settings, engine=engine)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=120) as client:
            for _ in range(600):
                if (await client.get("/readyz")).status_code == 200:
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError(f"app never became ready: {app.state.startup_error}")
            client.app = app
            yield client
