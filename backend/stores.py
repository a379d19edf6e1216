"""Where the app's parts keep shared state: Redis when configured, else this process's memory."""

from dataclasses import dataclass

from redis.asyncio import Redis

from backend.api.rate_limits import MemoryRateLimiter, RateLimiter, RedisRateLimiter
from backend.config import Settings
from backend.events.bus import EventBus, MemoryEventBus, RedisEventBus
from backend.metrics.store import MemoryMetricsStore, MetricsStore, RedisMetricsStore
from backend.turns.session_cache import MemorySessionCache, RedisSessionCache, SessionCache
from backend.turns.turn_lock import MemoryTurnLockStore, RedisTurnLockStore, TurnLockStore


@dataclass(frozen=True)
class Stores:
    """Where the parts keep shared state: Redis when configured (shared by every app process),
    else this process's memory."""

    bus: EventBus
    sessions: SessionCache
    turn_locks: TurnLockStore
    metrics: MetricsStore
    rate_limiter: RateLimiter


def build_stores(settings: Settings, redis: Redis | None) -> Stores:
    prefix, ttl_s = settings.redis_key_prefix, settings.session_ttl_seconds
    if redis is None:
        return Stores(
            MemoryEventBus(),
            MemorySessionCache(ttl_s),
            MemoryTurnLockStore(),
            MemoryMetricsStore(),
            MemoryRateLimiter(),
        )
    return Stores(
        RedisEventBus(redis, channel=f"{prefix}events"),
        RedisSessionCache(redis, ttl_s=ttl_s, key_prefix=prefix),
        RedisTurnLockStore(redis, key_prefix=prefix),
        RedisMetricsStore(redis, key_prefix=prefix),
        RedisRateLimiter(redis, key_prefix=prefix),
    )
