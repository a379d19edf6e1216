"""One metrics store for every app process: counts and latency histograms in Redis time buckets.

Two resolutions: 10-second buckets kept 2 hours (the last minutes), 1-minute buckets kept
26 hours (the last hours). Each finished reply increments both, and so does each engine
sample (what vLLM's counters grew by since the last one, and the gauges as read), so every
figure can be summed over any window. The engine's gauges as they are now are also written
per process with a short expiry. Conversations are kept with the time of their latest
reply, so "active in the window" can be counted for any window up to a day.
"""

import json
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from redis.asyncio import Redis

from backend.metrics.histogram import BOUNDS_MS, bucket_of

RESOLUTIONS = {10: 2 * 3600, 60: 26 * 3600}  # bucket seconds -> how long buckets are kept
GAUGE_TTL_S = 15
ACTIVE_KEPT_S = 24 * 3600  # the longest window the admin page offers


@dataclass(frozen=True)
class Reply:
    bot: str
    ok: bool
    ttft_ms: float = 0.0
    total_ms: float = 0.0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    stream_ms: float = 0.0  # from the first token to the last


def reply_fields(reply: Reply) -> dict[str, float]:
    """The counters one reply adds to a bucket, overall and for its bot."""
    fields: dict[str, float] = {}
    for scope in ("all", f"bot:{reply.bot}"):
        fields[f"{scope}:n"] = 1
        if not reply.ok:
            fields[f"{scope}:err"] = 1
            continue
        fields[f"{scope}:pt"] = reply.prompt_tokens
        fields[f"{scope}:ct"] = reply.cached_tokens
        # Tokens after the first, over the time they took: how fast a reply reads.
        fields[f"{scope}:st"] = max(0, reply.completion_tokens - 1)
        fields[f"{scope}:sms"] = round(reply.stream_ms)
        fields[f"{scope}:ttft:{bucket_of(reply.ttft_ms)}"] = 1
        fields[f"{scope}:tot:{bucket_of(reply.total_ms)}"] = 1
    return fields


class MetricsStore(Protocol):
    async def record_reply(self, reply: Reply) -> None: ...
    async def record_engine(self, fields: dict[str, float]) -> None: ...
    async def touch_conversation(self, conversation_id: str) -> None: ...
    async def write_gauges(self, process: str, gauges: dict[str, float]) -> None: ...
    async def buckets(self, step_s: int, start: int, end: int) -> dict[int, dict[str, float]]: ...
    async def gauges(self) -> list[dict[str, float]]: ...
    async def active_conversations(self, window_s: int) -> int: ...


class RedisMetricsStore:
    def __init__(self, redis: Redis, *, key_prefix: str, clock: Callable[[], float] = time.time):
        self._redis = redis  # the process's client, closed by its owner
        self._prefix = f"{key_prefix}metrics:"
        self._clock = clock

    def _bucket_key(self, step_s: int, start: int) -> str:
        return f"{self._prefix}{step_s}:{start}"

    async def record_reply(self, reply: Reply) -> None:
        await self._add(reply_fields(reply))

    async def record_engine(self, fields: dict[str, float]) -> None:
        await self._add(fields)

    async def _add(self, fields: dict[str, float]) -> None:
        now = int(self._clock())
        async with self._redis.pipeline(transaction=False) as pipe:
            for step_s, keep_s in RESOLUTIONS.items():
                key = self._bucket_key(step_s, now - now % step_s)
                for name, amount in fields.items():
                    pipe.hincrby(key, name, int(amount))
                pipe.expire(key, keep_s)
            await pipe.execute()

    async def touch_conversation(self, conversation_id: str) -> None:
        now = self._clock()
        key = f"{self._prefix}active"
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.zadd(key, {conversation_id: now})
            pipe.zremrangebyscore(key, 0, now - ACTIVE_KEPT_S)
            await pipe.execute()

    async def write_gauges(self, process: str, gauges: dict[str, float]) -> None:
        await self._redis.set(f"{self._prefix}gauges:{process}", json.dumps(gauges), ex=GAUGE_TTL_S)

    async def buckets(self, step_s: int, start: int, end: int) -> dict[int, dict[str, float]]:
        starts = list(range(start - start % step_s, end + 1, step_s))
        async with self._redis.pipeline(transaction=False) as pipe:
            for bucket_start in starts:
                pipe.hgetall(self._bucket_key(step_s, bucket_start))
            rows = await pipe.execute()
        return {
            s: {k.decode(): float(v) for k, v in row.items()}
            for s, row in zip(starts, rows, strict=True)
            if row
        }

    async def gauges(self) -> list[dict[str, float]]:
        keys = [key async for key in self._redis.scan_iter(f"{self._prefix}gauges:*")]
        values = await self._redis.mget(keys) if keys else []
        return [json.loads(v) for v in values if v]

    async def active_conversations(self, window_s: int) -> int:
        return int(await self._redis.zcount(f"{self._prefix}active", self._clock() - window_s, "+inf"))


class MemoryMetricsStore:
    """The same, for a single process without Redis."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._buckets: dict[tuple[int, int], dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self._gauges: dict[str, tuple[float, dict[str, float]]] = {}
        self._active: dict[str, float] = {}

    async def record_reply(self, reply: Reply) -> None:
        self._add(reply_fields(reply))

    async def record_engine(self, fields: dict[str, float]) -> None:
        self._add(fields)

    def _add(self, fields: dict[str, float]) -> None:
        now = int(self._clock())
        for step_s, keep_s in RESOLUTIONS.items():
            bucket = self._buckets[(step_s, now - now % step_s)]
            for name, amount in fields.items():
                bucket[name] += amount
            for stale in [k for k in self._buckets if k[0] == step_s and k[1] < now - keep_s]:
                del self._buckets[stale]

    async def touch_conversation(self, conversation_id: str) -> None:
        now = self._clock()
        self._active[conversation_id] = now
        for stale in [c for c, seen in self._active.items() if seen < now - ACTIVE_KEPT_S]:
            del self._active[stale]

    async def write_gauges(self, process: str, gauges: dict[str, float]) -> None:
        self._gauges[process] = (self._clock() + GAUGE_TTL_S, gauges)

    async def buckets(self, step_s: int, start: int, end: int) -> dict[int, dict[str, float]]:
        return {
            s: dict(b)
            for (step, s), b in self._buckets.items()
            if step == step_s and start - step_s < s <= end
        }

    async def gauges(self) -> list[dict[str, float]]:
        now = self._clock()
        return [g for expires, g in self._gauges.values() if expires > now]

    async def active_conversations(self, window_s: int) -> int:
        cutoff = self._clock() - window_s
        return sum(1 for seen in self._active.values() if seen >= cutoff)


__all__ = ["BOUNDS_MS", "MemoryMetricsStore", "MetricsStore", "RedisMetricsStore", "Reply"]
