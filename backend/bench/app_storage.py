"""Where the app keeps its data during a run: the Postgres and Redis given (its Redis keys removed
afterwards), else a fresh SQLite file and the in-process store."""

import os
from pathlib import Path

from backend.config import Settings


def app_storage(settings: Settings, workdir: Path) -> tuple[Settings, str]:
    """Postgres and Redis when given, else a fresh SQLite file and the in-process store."""
    given = any(os.environ.get(name) for name in ("DATABASE_URL", "PREFIXDESK_DATABASE_URL"))
    if not given:
        settings = settings.model_copy(update={"database_url": f"sqlite+aiosqlite:///{workdir}/bench.db"})
    database = settings.database_url.split(":", 1)[0].split("+", 1)[0]
    store = "redis" if settings.redis_url else "in-process store"
    return settings, f"{database} + {store}"


async def clean_redis(url: str | None, prefix: str) -> None:
    if not url:
        return
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    keys = [key async for key in client.scan_iter(f"{prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()
