"""Fixed-window rate limits shared by every app process (Redis), or per process without Redis."""

import time
from collections.abc import Callable
from typing import Protocol

from redis.asyncio import Redis

from backend.config import Settings
from backend.errors import TooManyRequests


class RateLimiter(Protocol):
    async def hit(self, key: str, *, limit: int, window_s: int) -> int | None:
        """Counts one hit; the seconds to wait if `key` is over `limit` in this window, else None."""
        ...


class RedisRateLimiter:
    def __init__(self, redis: Redis, *, key_prefix: str, clock: Callable[[], float] = time.time):
        self._redis = redis  # the process's client, closed by its owner
        self._prefix = f"{key_prefix}ratelimit:"
        self._clock = clock

    async def hit(self, key: str, *, limit: int, window_s: int) -> int | None:
        now = int(self._clock())
        window = now - now % window_s
        redis_key = f"{self._prefix}{key}:{window}"
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.incr(redis_key)
            pipe.expire(redis_key, window_s + 1)
            count, _ = await pipe.execute()
        return window + window_s - now if count > limit else None


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


class RateLimits:
    """The configured limits, per minute: widget requests per client address, messages per conversation."""

    def __init__(self, limiter: RateLimiter, settings: Settings):
        self._limiter = limiter
        self._per_address = settings.rate_limit_requests_per_address
        self._per_conversation = settings.rate_limit_messages_per_conversation

    async def request_from(self, address: str) -> None:
        await self._enforce(f"address:{address}", self._per_address, "requests from this address")

    async def message_to(self, conversation_id: str) -> None:
        await self._enforce(
            f"conversation:{conversation_id}", self._per_conversation, "messages in this conversation"
        )

    async def _enforce(self, key: str, limit: int, what: str, window_s: int = 60) -> None:
        """Raise a 429 with Retry-After when `key` is over its limit. A limiter failure lets it pass."""
        try:
            wait_s = await self._limiter.hit(key, limit=limit, window_s=window_s)
        except Exception:  # an unreachable Redis must not block customers; the turn lock reports it
            return
        if wait_s is not None:
            raise TooManyRequests(
                f"too many {what}; try again in {wait_s} s", headers={"Retry-After": str(max(1, wait_s))}
            )
