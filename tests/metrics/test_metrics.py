"""Metrics: one store all processes write, the admin figures, and Prometheus /metrics."""

import httpx

from backend.agents.models import AgentRole
from backend.metrics.histogram import BOUNDS_MS, bucket_of, percentile
from backend.metrics.recorder import engine_fields
from backend.metrics.store import MemoryMetricsStore, RedisMetricsStore, Reply
from backend.metrics.summary import summarize
from backend.redis_client import create_redis
from tests.helpers import done_event, send, start
from tests.support import REDIS_URL, eventually, make_agent, running_app


def test_percentiles_come_from_merged_buckets():
    counts = [0] * (len(BOUNDS_MS) + 1)
    for value in [40] * 90 + [900] * 10:
        counts[bucket_of(value)] += 1
    assert 35 <= percentile(counts, 0.5) <= 50
    assert 750 <= percentile(counts, 0.95) <= 1000
    assert percentile([0] * len(counts), 0.5) is None


async def test_two_processes_writing_one_store_add_up(redis_prefix):
    prefix = f"{redis_prefix}twostores:"
    clients = [create_redis(REDIS_URL) for _ in range(2)]
    first, second = (RedisMetricsStore(client, key_prefix=prefix) for client in clients)
    try:
        await first.record_reply(Reply("shop-en", True, 100, 900, 700, 640, 41, 800))
        await second.record_reply(Reply("shop-en", True, 300, 1200, 700, 672, 21, 900))
        await second.record_reply(Reply("appliance-zh", False))
        await first.write_gauges("host:1", {"kv_cache_usage": 0.2, "running": 1, "waiting": 0})
        await second.write_gauges("host:2", {"kv_cache_usage": 0.5, "running": 2, "waiting": 3})
        # Each process's engine samples: what vLLM's counters grew by, and its gauges as read.
        started = {
            "prefix_cache_queries": 100,
            "prefix_cache_hits": 90,
            "draft_tokens": 50,
            "accepted_tokens": 30,
        }
        grown = {**started, "prefix_cache_queries": 160, "prefix_cache_hits": 140, "kv_cache_usage": 0.4}
        await first.record_engine(engine_fields(started, {}))
        await first.record_engine(engine_fields(grown, started))
        restarted = {"prefix_cache_queries": 100, "prefix_cache_hits": 80, "running": 2, "waiting": 3}
        await second.record_engine(engine_fields(restarted, {"prefix_cache_queries": 500}))
        summary = (await summarize(first, 900)).model_dump()
    finally:
        for client in clients:
            await client.aclose()
    totals = summary["totals"]
    assert totals["replies"] == 3 and totals["errors"] == 1
    assert totals["replies_per_s"] == round(3 / 900, 3)
    assert totals["hit_rate"] == round(1312 / 1400, 4)
    assert summary["per_bot"]["shop-en"]["replies"] == 2 and summary["per_bot"]["appliance-zh"]["errors"] == 1
    assert 50 <= totals["ttft_ms"]["p50"] <= 300
    assert totals["reply_tokens_per_s"] == round((40 + 20) / 1.7, 1)  # after each first token
    assert summary["engine_now"] == {"processes": 2, "kv_cache_usage": 0.5, "running": 3, "waiting": 3}
    # A counter that went back is a new engine counting from zero: all of it is new.
    assert summary["engine"] == {
        "prefix_cache_queries": 260,
        "prefix_cache_hits": 220,
        "hit_rate": round(220 / 260, 4),
        "draft_tokens": 50,
        "accepted_tokens": 30,
        "draft_acceptance_rate": 0.6,
        "samples": 3,
        "kv_cache_usage_mean": round(0.4 / 3, 4),
        "running_mean": round(2 / 3, 2),
        "waiting_mean": 1.0,
    }
    assert sum(p["replies"] for p in summary["series"]) == 3
    assert sum(p["engine"]["prefix_cache_queries"] for p in summary["series"]) == 260


async def test_idle_buckets_have_no_percentiles_or_hit_rates():
    """A chart leaves a gap where nothing was measured: such a bucket's figures are None, not 0."""
    store = MemoryMetricsStore()
    await store.record_reply(Reply("shop-en", True, 100, 900, 700, 640, 41, 800))
    summary = await summarize(store, 900)
    assert summary.step_s == 10 and len(summary.series) == 90
    idle = [p for p in summary.series if p.replies == 0]
    busy = [p for p in summary.series if p.replies]
    assert len(busy) == 1 and busy[0].total_ms.p95 is not None and busy[0].hit_rate == round(640 / 700, 4)
    assert all(p.total_ms.p95 is None and p.ttft_ms.p99 is None and p.hit_rate is None for p in idle)
    assert all(p.engine.hit_rate is None and p.replies_per_s == 0 for p in idle)
    times = [p.t for p in summary.series]
    assert times == sorted(times) and all(b - a == 10 for a, b in zip(times, times[1:], strict=False))
    assert (await summarize(store, 7200)).step_s == 60


async def test_active_conversations_follow_the_window(redis_prefix):
    """A conversation counts as active in every window that holds its latest reply."""
    client = create_redis(REDIS_URL)
    clock = [1_000_000.0]
    stores = [
        RedisMetricsStore(client, key_prefix=f"{redis_prefix}active:", clock=lambda: clock[0]),
        MemoryMetricsStore(clock=lambda: clock[0]),
    ]
    try:
        for store in stores:
            await store.touch_conversation("two-hours-ago")
            clock[0] += 2 * 3600 - 600
            await store.touch_conversation("ten-minutes-ago")
            clock[0] += 600
            counts = [await store.active_conversations(w) for w in (900, 3600, 6 * 3600 + 1)]
            assert counts == [1, 1, 2], type(store).__name__
            clock[0] += 25 * 3600  # past the longest window: forgotten
            await store.touch_conversation("now")
            assert await store.active_conversations(24 * 3600) == 1
            clock[0] = 1_000_000.0
    finally:
        await client.aclose()


async def test_admin_metrics_need_an_admin_and_follow_the_traffic(client):
    _, agent = await make_agent(client.app)
    _, admin = await make_agent(client.app, AgentRole.ADMIN)
    assert (await client.get("/api/v1/admin/metrics", headers=agent)).status_code == 403
    before = (await client.get("/api/v1/admin/metrics", headers=admin)).json()
    conversation = await start(client)
    replies = [done_event(await send(client, conversation, q)) for q in ("Hi", "Do you ship to Norway?")]
    after = (await client.get("/api/v1/admin/metrics", headers=admin)).json()
    assert after["totals"]["replies"] == before["totals"]["replies"] + 2
    added_cached = after["totals"]["cached_tokens"] - before["totals"]["cached_tokens"]
    assert added_cached == sum(r["cached_tokens"] for r in replies)
    assert after["active_conversations"] >= 1
    assert after["totals"]["replies_per_s"] == round(after["totals"]["replies"] / 900, 3)
    assert (await client.get("/api/v1/admin/metrics?window=59", headers=admin)).status_code == 422

    async def engine_figures() -> dict | None:
        """The engine's figures, once sampled (every 2 s) with the prefix cache's hits in them."""
        figures = (await client.get("/api/v1/admin/metrics", headers=admin)).json()
        sampled = figures["engine_now"]["processes"] >= 1 and figures["engine"]["prefix_cache_hits"] > 0
        return figures if sampled else None

    figures = await eventually(engine_figures, timeout_s=10, interval_s=0.1)
    assert figures["engine"]["samples"] >= 1 and figures["engine"]["kv_cache_usage_mean"] is not None


async def test_prometheus_metrics_have_the_apps_and_vllms_own(client, tiny_settings, tiny_engine):
    conversation = await start(client)
    done_event(await send(client, conversation, "Hello"))
    text = (await client.get("/metrics")).text  # the test transport is a loopback peer
    for name in (
        "prefixdesk_replies_total",
        "prefixdesk_reply_time_to_first_token_seconds_bucket",
        "prefixdesk_cached_tokens_total",
        "prefixdesk_reply_stream_tokens_total",
        "prefixdesk_reply_stream_seconds_total",
        "prefixdesk_http_requests_total",
        "vllm:prefix_cache_queries_total",
        "vllm:prefix_cache_hits_total",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:kv_cache_usage_perc",
    ):
        assert name in text, name
    remote = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=client.app, client=("203.0.113.9", 4000)), base_url="http://test"
    )
    assert (await remote.get("/metrics")).status_code == 403
    settings = tiny_settings.model_copy(update={"metrics_token": "scrape-secret"})
    async with running_app(settings, tiny_engine) as scraper:
        assert (await scraper.get("/metrics")).status_code == 403  # a token, once set, is needed
        assert (
            await scraper.get("/metrics", headers={"Authorization": "Bearer scrape-secret"})
        ).status_code == 200


async def test_the_apps_cached_tokens_agree_with_vllms_own_counter(client):
    """vLLM counts prefix-cache hits in tokens: for the same replies, both ledgers must agree."""
    stats = client.app.state.services.engine.current.stats
    conversation = await start(client)
    before = stats.as_dict()
    replies = [done_event(await send(client, conversation, q)) for q in ("Hello", "Do you ship to Norway?")]
    after = stats.as_dict()
    assert sum(r["cached_tokens"] for r in replies) > 0
    assert after["prefix_cache_hits"] - before["prefix_cache_hits"] == sum(
        r["cached_tokens"] for r in replies
    )
    assert after["prefix_cache_queries"] - before["prefix_cache_queries"] == sum(
        r["prompt_tokens"] for r in replies
    )
