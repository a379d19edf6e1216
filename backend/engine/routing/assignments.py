"""Which replica holds each conversation's cache, shared by every app process through Redis.

Two processes that route the same conversation at the same moment must agree: a new
assignment is made with SET NX (the first writer wins, the other reads its choice) and a
move with compare-and-set (only from the replica the mover saw).
"""

import time
from collections.abc import Callable
from typing import Protocol

from redis.asyncio import Redis

# Set `new` if the key is missing or still holds `old`; answer what the key holds after.
_MOVE = """
local current = redis.call('GET', KEYS[1])
if current == false or current == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
    return ARGV[2]
end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return current
"""


class Assignments(Protocol):
    async def get(self, key: str) -> str | None: ...

    async def claim(self, key: str, replica: str) -> str:
        """Assign `key` to `replica` unless it is assigned already; the assignment that holds."""
        ...

    async def move(self, key: str, old: str | None, new: str) -> str:
        """Reassign `key` from `old` to `new` unless someone moved it first; the assignment that holds."""
        ...


class MemoryAssignments:
    """One process only (no Redis): the same contract, in a dict with expiry."""

    def __init__(self, ttl_s: float, clock: Callable[[], float] = time.monotonic):
        self._ttl_s = ttl_s
        self._clock = clock
        self._entries: dict[str, tuple[str, float]] = {}

    async def get(self, key: str) -> str | None:
        entry = self._entries.get(key)
        if entry is None or entry[1] <= self._clock():
            self._entries.pop(key, None)
            return None
        self._entries[key] = (entry[0], self._clock() + self._ttl_s)
        return entry[0]

    async def claim(self, key: str, replica: str) -> str:
        return await self.get(key) or self._set(key, replica)

    async def move(self, key: str, old: str | None, new: str) -> str:
        current = await self.get(key)
        return self._set(key, new) if current is None or current == old else current

    def _set(self, key: str, replica: str) -> str:
        if len(self._entries) > 100_000:  # drop expired entries now and then
            now = self._clock()
            self._entries = {k: v for k, v in self._entries.items() if v[1] > now}
        self._entries[key] = (replica, self._clock() + self._ttl_s)
        return replica


class RedisAssignments:
    def __init__(self, redis: Redis, *, key_prefix: str, ttl_s: int):
        self._redis = redis  # the process's client, closed by its owner
        self._prefix = f"{key_prefix}route:"
        self._ttl_s = int(ttl_s)
        self._move = self._redis.register_script(_MOVE)

    async def get(self, key: str) -> str | None:
        return _text(await self._redis.getex(self._prefix + key, ex=self._ttl_s))

    async def claim(self, key: str, replica: str) -> str:
        if await self._redis.set(self._prefix + key, replica, nx=True, ex=self._ttl_s):
            return replica
        return await self.get(key) or replica

    async def move(self, key: str, old: str | None, new: str) -> str:
        moved = await self._move(keys=[self._prefix + key], args=[old or "", new, self._ttl_s])
        return _text(moved) or new


def _text(value: bytes | str | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value
