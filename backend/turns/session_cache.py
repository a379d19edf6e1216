"""The hot session cache: a conversation's token ids, ready for its next turn.

Postgres stays the source of truth. A session here is valid only for the message count
it was written at; anything else (expired, flushed, stale, Redis down for a read) means
the prompt is rebuilt from Postgres, token for token the same.
"""

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


class SessionCache(Protocol):
    async def get(self, conversation_id: str) -> Session | None: ...
    async def put(self, conversation_id: str, session: Session) -> None: ...
    async def delete(self, conversation_id: str) -> None: ...


class MemorySessionCache:
    """For a single app process when no Redis is configured."""

    def __init__(self, ttl_s: int, clock: Callable[[], float] = time.monotonic):
        self._ttl_s = ttl_s
        self._clock = clock
        self._sessions: dict[str, tuple[float, Session]] = {}

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


class RedisSessionCache:
    """Shared by every app process; sessions expire after `ttl_s` of inactivity."""

    def __init__(self, redis: Redis, *, ttl_s: int, key_prefix: str = "prefixdesk:"):
        self._redis = redis  # the process's client, closed by its owner
        self._ttl_s = ttl_s
        self._prefix = key_prefix

    def _session_key(self, conversation_id: str) -> str:
        return f"{self._prefix}session:{conversation_id}"

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
