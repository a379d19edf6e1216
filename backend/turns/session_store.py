"""The hot session store: a conversation's token ids, ready for its next turn.

Postgres stays the source of truth. A session here is valid only for the message count
it was written at; anything else (expired, flushed, stale, Redis down for a read) means
the prompt is rebuilt from Postgres, token for token the same.
"""

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Protocol

from redis.asyncio import Redis


@dataclass(frozen=True)
class Session:
    token_ids: list[int]  # the whole context so far, without the generation prompt
    message_count: int
    last_message: str = ""


class SessionStore(Protocol):
    async def get(self, conversation_id: str) -> Session | None: ...
    async def put(self, conversation_id: str, session: Session) -> None: ...
    async def delete(self, conversation_id: str) -> None: ...
    async def try_lock_turn(self, conversation_id: str, ttl_s: int) -> bool: ...
    async def unlock_turn(self, conversation_id: str) -> None: ...
    async def extend_turn(self, conversation_id: str, ttl_s: int) -> None: ...
    async def ping(self) -> bool: ...


class MemorySessionStore:
    """For a single app process when no Redis is configured."""

    def __init__(self, ttl_s: int, clock: Callable[[], float] = time.monotonic):
        self._ttl_s = ttl_s
        self._clock = clock
        self._sessions: dict[str, tuple[float, Session]] = {}
        self._turns: dict[str, float] = {}
        self._lock = asyncio.Lock()

    async def get(self, conversation_id: str) -> Session | None:
        entry = self._sessions.get(conversation_id)
        if entry is None or entry[0] < self._clock():
            self._sessions.pop(conversation_id, None)
            return None
        return entry[1]

    async def put(self, conversation_id: str, session: Session) -> None:
        self._sessions[conversation_id] = (self._clock() + self._ttl_s, session)

    async def delete(self, conversation_id: str) -> None:
        self._sessions.pop(conversation_id, None)

    async def try_lock_turn(self, conversation_id: str, ttl_s: int) -> bool:
        async with self._lock:
            now = self._clock()
            if self._turns.get(conversation_id, 0) > now:
                return False
            self._turns[conversation_id] = now + ttl_s
            return True

    async def unlock_turn(self, conversation_id: str) -> None:
        self._turns.pop(conversation_id, None)

    async def extend_turn(self, conversation_id: str, ttl_s: int) -> None:
        if conversation_id in self._turns:
            self._turns[conversation_id] = self._clock() + ttl_s

    async def ping(self) -> bool:
        return True


class RedisSessionStore:
    """Shared by every app process; sessions expire after `ttl_s` of inactivity."""

    def __init__(self, redis: Redis, *, ttl_s: int, key_prefix: str = "prefixdesk:"):
        self._redis = redis  # the process's client, closed by its owner
        self._ttl_s = ttl_s
        self._prefix = key_prefix

    def _session_key(self, conversation_id: str) -> str:
        return f"{self._prefix}session:{conversation_id}"

    def _turn_key(self, conversation_id: str) -> str:
        return f"{self._prefix}turn:{conversation_id}"

    async def get(self, conversation_id: str) -> Session | None:
        raw = await self._redis.get(self._session_key(conversation_id))
        return None if raw is None else Session(**json.loads(raw))

    async def put(self, conversation_id: str, session: Session) -> None:
        await self._redis.set(
            self._session_key(conversation_id),
            json.dumps(asdict(session), separators=(",", ":")),
            ex=self._ttl_s,
        )

    async def delete(self, conversation_id: str) -> None:
        await self._redis.delete(self._session_key(conversation_id))

    async def try_lock_turn(self, conversation_id: str, ttl_s: int) -> bool:
        return bool(await self._redis.set(self._turn_key(conversation_id), "1", nx=True, ex=ttl_s))

    async def unlock_turn(self, conversation_id: str) -> None:
        await self._redis.delete(self._turn_key(conversation_id))

    async def extend_turn(self, conversation_id: str, ttl_s: int) -> None:
        await self._redis.expire(self._turn_key(conversation_id), ttl_s)

    async def ping(self) -> bool:
        return bool(await self._redis.ping())
