"""Which origins may embed the widget: the settings' list, and the one admins keep in Postgres.

Every cross-origin request asks, so the stored list is read through a short-lived cache: in
Redis when there is one (shared by every app process; a change deletes it, so all processes see
the change at their next request), else in this process. If neither Redis nor Postgres answers,
the settings' list still does.
"""

import json
import logging
import time
from collections.abc import Callable, Iterable

from redis.asyncio import Redis
from redis.exceptions import RedisError
from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from backend.config import normalize_origin
from backend.embedding.models import WidgetOrigin

logger = logging.getLogger(__name__)


class AllowedOrigins:
    def __init__(
        self,
        configured: Iterable[str],
        sessions: async_sessionmaker[AsyncSession],
        redis: Redis | None,
        *,
        key_prefix: str,
        ttl_s: float,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.configured = frozenset(configured)
        self.sessions = sessions
        self.redis = redis
        self.key = f"{key_prefix}widget-origins"
        self.ttl_s = ttl_s
        self.clock = clock
        self._local: tuple[float, frozenset[str]] | None = None  # (read at, origins), without Redis

    async def allows(self, origin: str | None) -> bool:
        """Whether a page of `origin` (the request's Origin header) may call the widget API."""
        try:
            origin = normalize_origin(origin or "")
        except ValueError:
            return False  # "null" (a sandboxed frame, a file) or garbage
        return origin in self.configured or origin in await self.stored()

    async def stored(self) -> frozenset[str]:
        """The origins admins added; empty (not cached) while Postgres is out of reach."""
        try:
            return await self._cached()
        except (SQLAlchemyError, OSError) as error:
            logger.warning("widget origins: database unavailable (%s); the settings' list only", error)
            return frozenset()

    async def _cached(self) -> frozenset[str]:
        if self.redis is None:
            if self._local is None or self.clock() - self._local[0] > self.ttl_s:
                self._local = (self.clock(), await self._read())
            return self._local[1]
        try:
            cached = await self.redis.get(self.key)
            if cached is not None:
                return frozenset(json.loads(cached))
            origins = await self._read()
            await self.redis.set(self.key, json.dumps(sorted(origins)), px=max(1, int(self.ttl_s * 1000)))
            return origins
        except RedisError as error:
            logger.warning("widget origins: Redis unavailable (%s); reading Postgres", error)
            return await self._read()

    async def changed(self) -> None:
        """The stored list changed (after its commit): every process reads it again."""
        self._local = None
        if self.redis is not None:
            try:
                await self.redis.delete(self.key)
            except RedisError as error:  # the cached copy expires by itself
                logger.warning("widget origins: could not clear the cache (%s)", error)

    async def _read(self) -> frozenset[str]:
        async with self.sessions() as db:
            return frozenset(await db.scalars(select(WidgetOrigin.origin)))
