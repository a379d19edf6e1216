"""One turn at a time per conversation, whichever app process takes it: the turn lock.

Its store keeps a key per conversation with a time to live; the holder extends it while it
holds it, so the lock of a process that died frees itself.
"""

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Protocol

from redis.asyncio import Redis

from backend.errors import Conflict, ServiceUnavailable
from backend.unit_of_work import UnitOfWork

logger = logging.getLogger(__name__)


class TurnLockStore(Protocol):
    async def try_lock_turn(self, conversation_id: str, ttl_s: int) -> bool: ...
    async def unlock_turn(self, conversation_id: str) -> None: ...
    async def extend_turn(self, conversation_id: str, ttl_s: int) -> None: ...


class MemoryTurnLockStore:
    """For a single app process when no Redis is configured."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._turns: dict[str, float] = {}
        self._lock = asyncio.Lock()

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


class RedisTurnLockStore:
    """Shared by every app process."""

    def __init__(self, redis: Redis, *, key_prefix: str = "prefixdesk:"):
        self._redis = redis  # the process's client, closed by its owner
        self._prefix = key_prefix

    def _turn_key(self, conversation_id: str) -> str:
        return f"{self._prefix}turn:{conversation_id}"

    async def try_lock_turn(self, conversation_id: str, ttl_s: int) -> bool:
        return bool(await self._redis.set(self._turn_key(conversation_id), "1", nx=True, ex=ttl_s))

    async def unlock_turn(self, conversation_id: str) -> None:
        await self._redis.delete(self._turn_key(conversation_id))

    async def extend_turn(self, conversation_id: str, ttl_s: int) -> None:
        await self._redis.expire(self._turn_key(conversation_id), ttl_s)


class TurnLocks:
    """One turn at a time per conversation, whichever app process takes it.

    The lock lives in its store (Redis: shared by every process) with a time to live,
    extended while it is held, so the lock of a process that died frees itself after `ttl_s`.
    """

    def __init__(self, store: TurnLockStore, *, ttl_s: int):
        self.store = store
        self.ttl_s = ttl_s

    @asynccontextmanager
    async def hold(
        self, conversation_id: str, *, busy_message: str, wait_s: float = 0.0
    ) -> AsyncIterator[None]:
        """Held for the block, waiting up to `wait_s` for it; Conflict (409) if it stays busy."""
        await self._acquire(conversation_id, busy_message, wait_s)
        keeping = asyncio.create_task(self._keep(conversation_id))
        try:
            yield
        finally:
            keeping.cancel()
            try:
                await self.store.unlock_turn(conversation_id)
            except Exception as error:
                logger.warning("could not release the turn lock of %s: %s", conversation_id, error)

    async def hold_for(
        self, work: UnitOfWork, conversation_id: str, *, busy_message: str, wait_s: float
    ) -> None:
        """Held until `work` ends, committed or not: nobody appends before this turn is stored."""
        stack = AsyncExitStack()
        await stack.enter_async_context(self.hold(conversation_id, busy_message=busy_message, wait_s=wait_s))
        work.on_close(stack.aclose)

    async def _acquire(self, conversation_id: str, busy_message: str, wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                if await self.store.try_lock_turn(conversation_id, self.ttl_s):
                    return
            except Exception as error:
                raise ServiceUnavailable(
                    "the session store is unavailable; try again shortly", headers={"Retry-After": "5"}
                ) from error
            if time.monotonic() >= deadline:
                raise Conflict(busy_message)
            await asyncio.sleep(0.05)

    async def _keep(self, conversation_id: str) -> None:
        while True:
            await asyncio.sleep(self.ttl_s / 3)
            try:
                await self.store.extend_turn(conversation_id, self.ttl_s)
            except Exception as error:
                logger.warning("could not extend the turn lock of %s: %s", conversation_id, error)
