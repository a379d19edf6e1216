"""Both session stores behave the same; the Redis one on the real server."""

import asyncio

import pytest

from backend.conversations.claims import TurnLocks
from backend.conversations.session_store import MemorySessionStore, RedisSessionStore, Session
from backend.redis_client import create_redis
from tests.support import REDIS_URL


@pytest.fixture(params=["redis", "memory"])
async def store(request, redis_prefix):
    if request.param == "redis":
        client = create_redis(REDIS_URL)
        yield RedisSessionStore(client, ttl_s=1, key_prefix=redis_prefix)
        await client.aclose()
    else:
        yield MemorySessionStore(ttl_s=1)


async def test_sessions_round_trip_and_expire(store):
    assert await store.get("c1") is None
    await store.put("c1", Session([1, 2, 3], 2, "hello"))
    assert await store.get("c1") == Session([1, 2, 3], 2, "hello")
    await asyncio.sleep(1.2)
    assert await store.get("c1") is None


async def test_one_turn_lock_per_conversation(store):
    assert await store.try_lock_turn("c2", ttl_s=5)
    assert not await store.try_lock_turn("c2", ttl_s=5)
    assert await store.try_lock_turn("c3", ttl_s=5)
    await store.unlock_turn("c2")
    assert await store.try_lock_turn("c2", ttl_s=5)
    await store.delete("c2")
    assert await store.ping()


async def test_a_turn_lock_is_held_while_a_reply_is_written_and_frees_itself_after(store):
    locks = TurnLocks(store, ttl_s=1)
    async with locks.hold("c4", busy_message="busy"):
        await asyncio.sleep(1.5)  # past the lock's own lifetime: the holder extended it
        assert not await store.try_lock_turn("c4", ttl_s=1)
    assert await store.try_lock_turn("c4", ttl_s=1)  # released where the block ends
    await asyncio.sleep(1.2)  # a holder that died never releases: the lock frees itself
    assert await store.try_lock_turn("c4", ttl_s=1)


async def test_a_redis_that_is_down_raises_instead_of_hanging():
    client = create_redis("redis://127.0.0.1:1/0")
    store = RedisSessionStore(client, ttl_s=10)
    with pytest.raises(Exception, match="(?i)connect"):
        await store.get("c1")
    await client.aclose()
