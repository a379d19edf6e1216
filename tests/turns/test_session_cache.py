"""Both session caches and both turn-lock stores behave the same; the Redis ones on the real
server (their TTLs run in real time, so the tests poll for them), the in-process ones on a clock
the test moves."""

from collections.abc import AsyncIterator

import pytest

from backend.redis_client import create_redis
from backend.turns.session_cache import MemorySessionCache, RedisSessionCache, Session
from backend.turns.turn_lock import MemoryTurnLockStore, RedisTurnLockStore, TurnLocks
from tests.support import REDIS_URL, eventually


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class CacheAndLocks:
    """A session cache and a turn-lock store side by side, as the app wires them."""

    def __init__(self, cache, locks):
        self.cache, self.locks = cache, locks

    def __getattr__(self, name):
        return getattr(self.locks if "turn" in name else self.cache, name)


class CountingExtensions:
    """A store that counts how often a turn lock was extended."""

    def __init__(self, store):
        self.store = store
        self.extensions = 0

    def __getattr__(self, name):
        return getattr(self.store, name)

    async def extend_turn(self, conversation_id: str, ttl_s: int) -> None:
        self.extensions += 1
        await self.store.extend_turn(conversation_id, ttl_s)


@pytest.fixture
async def redis_store(redis_prefix) -> AsyncIterator[CacheAndLocks]:
    client = create_redis(REDIS_URL)
    prefix = f"{redis_prefix}sessions:"
    yield CacheAndLocks(
        RedisSessionCache(client, ttl_s=1, key_prefix=prefix), RedisTurnLockStore(client, key_prefix=prefix)
    )
    await client.aclose()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def memory_store(clock) -> CacheAndLocks:
    return CacheAndLocks(MemorySessionCache(ttl_s=1, clock=clock), MemoryTurnLockStore(clock=clock))


@pytest.fixture(params=["redis", "memory"])
def store(request):
    return request.getfixturevalue(f"{request.param}_store")


async def test_sessions_round_trip(store):
    assert await store.get("c1") is None
    await store.put("c1", Session([1, 2, 3], 2, "hello"))
    assert await store.get("c1") == Session([1, 2, 3], 2, "hello")
    await store.delete("c1")
    assert await store.get("c1") is None


async def test_one_turn_lock_per_conversation(store):
    assert await store.try_lock_turn("c2", ttl_s=5)
    assert not await store.try_lock_turn("c2", ttl_s=5)
    assert await store.try_lock_turn("c3", ttl_s=5)
    await store.unlock_turn("c2")
    assert await store.try_lock_turn("c2", ttl_s=5)
    await store.delete("c2")


async def test_memory_sessions_and_locks_expire_after_their_ttl(memory_store, clock):
    await memory_store.put("c1", Session([1], 1))
    assert await memory_store.try_lock_turn("c4", ttl_s=1)
    clock.advance(0.99)
    assert await memory_store.get("c1") == Session([1], 1)
    assert not await memory_store.try_lock_turn("c4", ttl_s=1)
    clock.advance(0.02)
    assert await memory_store.get("c1") is None
    assert await memory_store.try_lock_turn("c4", ttl_s=1)  # a holder that died never releases it


async def test_redis_sessions_and_locks_expire_after_their_ttl(redis_store):
    await redis_store.put("c1", Session([1], 1))
    assert await redis_store.get("c1") == Session([1], 1)
    assert await redis_store.try_lock_turn("c4", ttl_s=1)
    assert not await redis_store.try_lock_turn("c4", ttl_s=1)

    async def expired() -> bool:
        return await redis_store.get("c1") is None

    await eventually(expired, timeout_s=5, what="the session expired")
    # A holder that died never releases the lock: it frees itself.
    await eventually(lambda: redis_store.try_lock_turn("c4", ttl_s=1), timeout_s=5, what="the lock expired")


async def test_a_turn_lock_is_held_past_its_ttl_while_a_reply_is_written(memory_store, clock):
    store = CountingExtensions(memory_store)
    async with TurnLocks(store, ttl_s=1).hold("c5", busy_message="busy"):
        clock.advance(0.9)
        await eventually(lambda: store.extensions >= 1, what="the holder extended the lock")
        clock.advance(0.6)  # past the lock's own lifetime, inside the extended one
        assert not await store.try_lock_turn("c5", ttl_s=1)
    assert await store.try_lock_turn("c5", ttl_s=1)  # released where the block ends


async def test_a_redis_turn_lock_is_held_past_its_ttl_while_a_reply_is_written(redis_store):
    store = CountingExtensions(redis_store)
    async with TurnLocks(store, ttl_s=1).hold("c5", busy_message="busy"):
        # Four extensions, a third of the TTL apart: held for longer than its own lifetime.
        await eventually(lambda: store.extensions >= 4, timeout_s=5, what="the holder extended the lock")
        assert not await store.try_lock_turn("c5", ttl_s=1)
    assert await store.try_lock_turn("c5", ttl_s=1)  # released where the block ends


async def test_a_redis_that_is_down_raises_instead_of_hanging():
    client = create_redis("redis://127.0.0.1:1/0")
    store = RedisSessionCache(client, ttl_s=10)
    with pytest.raises(Exception, match="(?i)connect"):
        await store.get("c1")
    await client.aclose()
