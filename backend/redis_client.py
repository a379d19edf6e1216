"""The one Redis client of an app process: every store, the bus and the limiter share its pool."""

import redis.asyncio as aioredis

# A command that waits longer than this has lost Redis: callers fall back or answer 503.
SOCKET_TIMEOUT_S = 5
CONNECT_TIMEOUT_S = 2


def create_redis(url: str) -> aioredis.Redis:
    """Connects lazily: an app whose Redis is down still starts, and its stores report the outage."""
    return aioredis.Redis.from_url(
        url, socket_timeout=SOCKET_TIMEOUT_S, socket_connect_timeout=CONNECT_TIMEOUT_S
    )
