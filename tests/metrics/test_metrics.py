"""Metrics: one store all processes write, the admin figures, and Prometheus /metrics."""

import httpx

from backend.agents.models import AgentRole
from backend.metrics.histogram import BOUNDS_MS, bucket_of, percentile
from backend.metrics.store import RedisMetricsStore, Reply
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
        await first.write_gauges(
            "host:1",
            {
                "kv_cache_usage": 0.2,
                "running": 1,
                "waiting": 0,
                "prefix_cache_queries": 100,
                "prefix_cache_hits": 90,
                "draft_tokens": 50,
                "accepted_tokens": 30,
            },
        )
        await second.write_gauges(
            "host:2",
            {
                "kv_cache_usage": 0.5,
                "running": 2,
                "waiting": 3,
                "prefix_cache_queries": 100,
                "prefix_cache_hits": 80,
            },
        )
        summary = await summarize(first, 900)
    finally:
        for client in clients:
            await client.aclose()
    totals = summary["totals"]
    assert totals["replies"] == 3 and totals["errors"] == 1
    assert totals["hit_rate"] == round(1312 / 1400, 4)
    assert summary["per_bot"]["shop-en"]["replies"] == 2 and summary["per_bot"]["appliance-zh"]["errors"] == 1
    assert 50 <= totals["ttft_ms"]["p50"] <= 300
    assert totals["reply_tokens_per_s"] == round((40 + 20) / 1.7, 1)  # after each first token
    engine = summary["engine"]
    assert engine == {
        "processes": 2,
        "kv_cache_usage": 0.5,
        "running": 3,
        "waiting": 3,
        "vllm_prefix_cache_queries": 200,
        "vllm_prefix_cache_hits": 170,
        "vllm_hit_rate": 0.85,
        "draft_tokens": 50,
        "accepted_tokens": 30,
        "draft_acceptance_rate": 0.6,
    }


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

    async def engine_figures() -> dict | None:
        """The engine's gauges, once sampled (every 2 s) with the prefix cache's hits in them."""
        engine = (await client.get("/api/v1/admin/metrics", headers=admin)).json()["engine"]
        return engine if engine["processes"] >= 1 and engine["vllm_prefix_cache_hits"] > 0 else None

    await eventually(engine_figures, timeout_s=10, interval_s=0.1)


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
