"""The router's decisions and the replica pool's failover, on fake replicas."""

import asyncio
import uuid
from collections import Counter

import pytest

from backend.engine.interface import EngineUnavailable, GenerationResult, TokenDelta
from backend.engine.remote import ReplicaUnavailable, parse_load
from backend.engine.routing import ring
from backend.engine.routing.assignments import MemoryAssignments, RedisAssignments
from backend.engine.routing.pool import ReplicaPool
from backend.engine.routing.router import Balance, Router
from backend.redis_client import create_redis
from tests.support import REDIS_URL

A, B, C = "http://a:8000", "http://b:8000", "http://c:8000"


class FakeReplica:
    """Answers like a replica; `up` and `die_after_first_token` stand for its failures."""

    def __init__(self, url: str):
        self.url = url
        self.model, self.max_model_len = "m", 1024
        self.up = True
        self.die_after_first_token = False
        self.requests: list[tuple[list[int], str | None, int]] = []
        self.sessions: list[str | None] = []
        self.open_streams = 0

    async def probe(self) -> bool:
        return self.up

    async def load(self) -> int:
        return 0

    async def stream(self, prompt_ids, *, max_tokens, request_id=None, cache_salt=None, session=None):
        if not self.up:
            raise ReplicaUnavailable(f"{self.url} refused the connection")
        self.requests.append((list(prompt_ids), cache_salt, max_tokens))
        self.sessions.append(session)
        self.open_streams += 1
        try:
            yield TokenDelta("x", [7])
            if self.die_after_first_token:
                self.up = False
                raise ReplicaUnavailable(f"{self.url} went away")
            yield GenerationResult("x", [7], "length", len(prompt_ids), 0, 0.01, 0.02)
        finally:
            self.open_streams -= 1  # the real replica's connection closes here

    async def aclose(self) -> None:
        pass


async def started_pool(urls, policy="cache_aware", assignments=None) -> tuple[ReplicaPool, dict]:
    fakes = {url: FakeReplica(url) for url in urls}
    router = Router(policy, assignments or MemoryAssignments(3600))
    pool = ReplicaPool(
        list(fakes.values()), router, block_size=32, max_model_len=2048, health_interval_s=3600
    )
    await pool.wait_until_ready(5)
    return pool, fakes


async def reply(pool, prompt, key, salt="salt") -> GenerationResult:
    async for item in pool.stream(prompt, max_tokens=4, cache_salt=salt, affinity_key=key):
        last = item
    return last


def served_by(fakes) -> dict[str, int]:
    return {url: len(fake.requests) for url, fake in fakes.items()}


# -- consistent hashing with bounded load ---------------------------------------------------


def test_a_key_hashes_to_the_same_replica_whatever_the_order_of_the_list():
    for key in (f"conv-{i}" for i in range(50)):
        assert ring.lookup(key, [A, B, C], {}, 1.25) == ring.lookup(key, [C, A, B], {}, 1.25)


def test_keys_spread_over_replicas_and_removing_one_moves_only_its_keys():
    keys = [f"conv-{i}" for i in range(3000)]
    before = {key: ring.lookup(key, [A, B, C], {}, 1.25) for key in keys}
    shares = Counter(before.values())
    assert all(700 < shares[url] < 1300 for url in (A, B, C)), shares
    after = {key: ring.lookup(key, [A, B], {}, 1.25) for key in keys}
    assert all(after[key] == before[key] for key in keys if before[key] != C)


def test_bounded_load_skips_a_replica_at_capacity():
    key = next(k for k in (f"conv-{i}" for i in range(100)) if ring.lookup(k, [A, B], {}, 1.25) == A)
    # 10 requests in flight: capacity ceil(1.25 * 11 / 2) = 7; A has 7, so it is passed over.
    assert ring.lookup(key, [A, B], {A: 7, B: 3}, 1.25) == B
    assert ring.lookup(key, [A, B], {A: 6, B: 4}, 1.25) == A


# -- the router -----------------------------------------------------------------------------


async def test_a_conversation_sticks_to_its_replica_while_loads_change():
    router = Router("cache_aware", MemoryAssignments(3600))
    first = await router.choose("c1", [A, B], {A: 0, B: 0})
    other = B if first == A else A
    # Its replica is busier but within the thresholds (8 more and 1.5x): it stays.
    assert await router.choose("c1", [A, B], {first: 8, other: 1}) == first


async def test_imbalance_past_the_threshold_overrides_affinity_and_moves_the_conversation():
    router = Router("cache_aware", MemoryAssignments(3600), Balance(abs_threshold=8, rel_threshold=1.5))
    first = await router.choose("c1", [A, B], {})
    other = B if first == A else A
    assert await router.choose("c1", [A, B], {first: 12, other: 2}) == other
    # The move sticks: the conversation's history is now there.
    assert await router.choose("c1", [A, B], {first: 0, other: 3}) == other


async def test_a_new_conversation_prefers_a_replica_warm_with_its_bot_prefix():
    router = Router("cache_aware", MemoryAssignments(3600))
    chosen = {await router.choose(f"c{i}", [A, B, C], {}, warm=[C]) for i in range(20)}
    assert chosen == {C}


async def test_round_robin_ignores_affinity():
    router = Router("round_robin", MemoryAssignments(3600))
    assert [await router.choose("c1", [A, B], {}) for _ in range(4)] == [A, B, A, B]


async def test_two_processes_sharing_redis_route_a_conversation_alike():
    prefix = f"prefixdesk-test-routing-{uuid.uuid4().hex[:8]}:"
    clients = [create_redis(REDIS_URL) for _ in range(2)]
    stores = [RedisAssignments(client, key_prefix=prefix, ttl_s=60) for client in clients]
    first, second = (Router("cache_aware", store) for store in stores)
    try:
        # They see different loads, so hashing alone could disagree; the shared assignment decides.
        for i in range(20):
            key = f"conv-{i}"
            a, b = await asyncio.gather(
                first.choose(key, [A, B, C], {A: 0, B: 3, C: 3}),
                second.choose(key, [A, B, C], {A: 3, B: 3, C: 0}),
            )
            assert a == b
            assert await second.choose(key, [A, B, C], {}) == a
        # Racing moves off a dead replica end on one choice.
        moves = await asyncio.gather(stores[0].move("conv-0", A, B), stores[1].move("conv-0", A, C))
        assert moves[0] == moves[1]
    finally:
        keys = [key async for key in clients[0].scan_iter(f"{prefix}*")]
        await clients[0].delete(*keys)
        for client in clients:
            await client.aclose()


async def test_without_its_routing_state_the_router_still_hashes_consistently():
    class Broken(MemoryAssignments):
        async def get(self, key):
            raise ConnectionError("redis is away")

    router = Router("cache_aware", Broken(3600))
    assert await router.choose("c1", [A, B], {}) == ring.lookup("c1", [A, B], {}, 1.25)


def test_load_is_read_from_the_replicas_prometheus_text():
    text = (
        "# HELP vllm:num_requests_running x\n"
        'vllm:num_requests_running{engine="0",model_name="m"} 3.0\n'
        'vllm:num_requests_waiting{engine="0",model_name="m"} 2.0\n'
        'vllm:num_requests_waiting_by_reason{reason="x"} 9.0\n'
    )
    assert parse_load(text) == 5


# -- the pool -------------------------------------------------------------------------------


async def test_a_bot_prefix_is_warmed_on_every_replica_and_a_conversation_stays_on_one():
    pool, fakes = await started_pool([A, B])
    async for _ in pool.stream([1] * 64, max_tokens=1, cache_salt="bot"):
        pass
    assert served_by(fakes) == {A: 1, B: 1}
    for turn in range(4):
        await reply(pool, [1] * (64 + turn), "c1", salt="bot")
    assert sorted(served_by(fakes).values()) == [1, 5]
    home = next(fake for fake in fakes.values() if len(fake.requests) == 5)
    assert home.sessions == [None, "c1", "c1", "c1", "c1"]  # for a session-aware router in front


async def test_a_reply_cut_short_releases_its_replica_at_once():
    pool, fakes = await started_pool([A, B])
    stream = pool.stream([1, 2, 3], max_tokens=4, cache_salt="bot", affinity_key="c1")
    assert isinstance(await anext(stream), TokenDelta)
    await stream.aclose()  # an agent took over
    assert all(fake.open_streams == 0 for fake in fakes.values())
    assert pool.loads() == {A: 0, B: 0}


async def test_a_dead_replica_is_left_and_its_conversation_continues_elsewhere():
    pool, fakes = await started_pool([A, B])
    await reply(pool, [1, 2], "c1")
    home = next(url for url, fake in fakes.items() if fake.requests)
    fakes[home].up = False
    result = await reply(pool, [1, 2, 3], "c1")  # refused before any token: moved, not failed
    assert result.finish_reason == "length"
    other = B if home == A else A
    assert len(fakes[other].requests) == 1 and home not in pool.healthy
    assert await pool.router.assignments.get("c1") == other
    assert not pool.is_dead


async def test_a_replica_dying_mid_reply_is_an_engine_error():
    pool, fakes = await started_pool([A, B])
    await reply(pool, [1], "c1")
    home = next(url for url, fake in fakes.items() if fake.requests)
    fakes[home].die_after_first_token = True
    with pytest.raises(EngineUnavailable):
        await reply(pool, [1, 2], "c1")
    assert home not in pool.healthy
    assert (await reply(pool, [1, 2], "c1")).token_ids == [7]  # the customer's retry is served


async def test_a_replica_that_comes_back_is_warmed_before_it_takes_traffic():
    pool, fakes = await started_pool([A, B])
    fakes[B].up = False
    await pool.check_health()
    assert pool.healthy == {A}
    async for _ in pool.stream([5] * 40, max_tokens=1, cache_salt="bot"):
        pass
    assert fakes[B].requests == []
    fakes[B].up = True
    await pool.check_health()
    assert pool.healthy == {A, B}
    assert fakes[B].requests == [([5] * 40, "bot", 1)]


async def test_the_pool_is_dead_only_when_no_replica_answers():
    pool, fakes = await started_pool([A, B])
    fakes[A].up = False
    await pool.check_health()
    assert not pool.is_dead
    fakes[B].up = False
    await pool.check_health()
    assert pool.is_dead
    with pytest.raises(EngineUnavailable):
        await reply(pool, [1], "c1")
    pool.shutdown()


def test_replica_urls_come_comma_separated_or_as_json(monkeypatch):
    from backend.config import Settings

    monkeypatch.setenv("PREFIXDESK_ENGINE", "remote")
    monkeypatch.setenv("PREFIXDESK_ENGINE_URLS", "http://a:8000/, http://b:8000")
    assert Settings().engine_urls == ["http://a:8000", "http://b:8000"]
    monkeypatch.setenv("PREFIXDESK_ENGINE_URLS", '["http://c:8000"]')
    assert Settings().engine_urls == ["http://c:8000"]
    monkeypatch.setenv("PREFIXDESK_ENGINE_URLS", "")
    with pytest.raises(ValueError, match="ENGINE_URLS"):
        Settings()


async def test_with_one_url_a_router_in_front_chooses_and_no_routing_state_is_kept():
    assignments = MemoryAssignments(3600)
    pool, fakes = await started_pool([A], assignments=assignments)
    await reply(pool, [1, 2], "c1")
    assert len(fakes[A].requests) == 1 and fakes[A].sessions == ["c1"]
    assert await assignments.get("c1") is None
    pool.shutdown()
