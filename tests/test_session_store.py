"""Both session stores behave the same; the Redis one on the real server."""

import asyncio

import pytest

from backend.conversations.context import ConversationContext
from backend.conversations.session_store import MemorySessionStore, RedisSessionStore, Session
from tests.support import REDIS_URL


@pytest.fixture(params=["redis", "memory"])
async def store(request, redis_prefix):
    if request.param == "redis":
        store = RedisSessionStore(REDIS_URL, ttl_s=1, key_prefix=redis_prefix)
    else:
        store = MemorySessionStore(ttl_s=1)
    yield store
    await store.close()


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
    context = ConversationContext(store, lock_ttl_s=1)
    await context.lock("c4", busy_message="busy")
    holding = asyncio.create_task(context.hold("c4"))
    await asyncio.sleep(1.5)  # past the lock's own lifetime: the holder extended it
    assert not await store.try_lock_turn("c4", ttl_s=1)
    holding.cancel()  # the writing process stops (or dies) without unlocking
    await asyncio.sleep(1.2)
    assert await store.try_lock_turn("c4", ttl_s=1)


async def test_a_redis_that_is_down_raises_instead_of_hanging():
    store = RedisSessionStore("redis://127.0.0.1:1/0", ttl_s=10)
    with pytest.raises(Exception, match="(?i)connect"):
        await store.get("c1")
    await store.close()
