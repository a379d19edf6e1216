"""Fixed-window rate limits shared by every app process (Redis), or per process without Redis."""

import time
from typing import Protocol

import redis.asyncio as aioredis

from backend.errors import TooManyRequests


class RateLimiter(Protocol):
    async def hit(self, key: str, *, limit: int, window_s: int) -> int | None:
        """Counts one hit; the seconds to wait if `key` is over `limit` in this window, else None."""
        ...

    async def close(self) -> None: ...


class RedisRateLimiter:
    def __init__(self, url: str, *, key_prefix: str):
        self._redis = aioredis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)
        self._prefix = f"{key_prefix}ratelimit:"

    async def hit(self, key: str, *, limit: int, window_s: int) -> int | None:
        now = int(time.time())
        window = now - now % window_s
        redis_key = f"{self._prefix}{key}:{window}"
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.incr(redis_key)
            pipe.expire(redis_key, window_s + 1)
            count, _ = await pipe.execute()
        return window + window_s - now if count > limit else None

    async def close(self) -> None:
        await self._redis.aclose()


class MemoryRateLimiter:
    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    async def hit(self, key: str, *, limit: int, window_s: int) -> int | None:
        now = int(time.time())
        window = now - now % window_s
        bucket = f"{key}:{window}"
        if len(self._counts) > 100_000:  # forget old windows
            self._counts = {k: v for k, v in self._counts.items() if k.endswith(f":{window}")}
        self._counts[bucket] = self._counts.get(bucket, 0) + 1
        return window + window_s - now if self._counts[bucket] > limit else None

    async def close(self) -> None:
        pass


async def enforce(limiter: RateLimiter, key: str, *, limit: int, window_s: int, what: str) -> None:
    """Raise a 429 with Retry-After when `key` is over its limit. A limiter failure lets it pass."""
    try:
        wait_s = await limiter.hit(key, limit=limit, window_s=window_s)
    except Exception:  # an unreachable Redis must not block customers; the turn lock reports it
        return
    if wait_s is not None:
        raise TooManyRequests(
            f"too many {what}; try again in {wait_s} s", headers={"Retry-After": str(max(1, wait_s))}
        )
