"""What the admin page shows, computed from the metrics store over a window.

Every figure but `engine.now` is summed over the window's buckets; a bucket in which nothing
happened gives None (not zero) for what needs something to measure (percentiles, hit rates),
so a chart leaves a gap there.
"""

import time
from collections import defaultdict
from collections.abc import Iterable

from backend.metrics.histogram import BOUNDS_MS, percentile
from backend.metrics.schemas import (
    EngineFigures,
    EngineNow,
    MetricsSummary,
    Quantiles,
    ReplyFigures,
    SeriesPoint,
)
from backend.metrics.store import MetricsStore

QUANTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


def _share(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _quantiles(bucket: dict[str, float], name: str) -> Quantiles:
    counts = [int(bucket.get(f"{name}:{i}", 0)) for i in range(len(BOUNDS_MS) + 1)]
    return Quantiles(**{q: percentile(counts, share) for q, share in QUANTILES.items()})


def _replies(bucket: dict[str, float], scope: str, seconds: float) -> ReplyFigures:
    replies = bucket.get(f"{scope}:n", 0)
    prompt, cached = bucket.get(f"{scope}:pt", 0), bucket.get(f"{scope}:ct", 0)
    stream_ms = bucket.get(f"{scope}:sms", 0)
    return ReplyFigures(
        replies=int(replies),
        errors=int(bucket.get(f"{scope}:err", 0)),
        replies_per_s=round(replies / seconds, 3),
        prompt_tokens=int(prompt),
        cached_tokens=int(cached),
        hit_rate=_share(cached, prompt),
        reply_tokens_per_s=round(bucket.get(f"{scope}:st", 0) / (stream_ms / 1000), 1) if stream_ms else None,
        ttft_ms=_quantiles(bucket, f"{scope}:ttft"),
        total_ms=_quantiles(bucket, f"{scope}:tot"),
    )


def _engine(bucket: dict[str, float]) -> EngineFigures:
    """vLLM's own counters over the window (every request the engine ran: replies, the yes/no
    judges, prefix warm-ups), and the gauges' mean over the samples taken in it."""
    queries, hits = bucket.get("engine:pq", 0), bucket.get("engine:ph", 0)
    drafted, accepted = bucket.get("engine:dt", 0), bucket.get("engine:at", 0)
    samples = bucket.get("engine:samples", 0)
    return EngineFigures(
        prefix_cache_queries=int(queries),
        prefix_cache_hits=int(hits),
        hit_rate=_share(hits, queries),
        draft_tokens=int(drafted),
        accepted_tokens=int(accepted),
        draft_acceptance_rate=_share(accepted, drafted),
        samples=int(samples),
        kv_cache_usage_mean=round(bucket.get("engine:kv_ppm", 0) / 1_000_000 / samples, 4)
        if samples
        else None,
        running_mean=round(bucket.get("engine:running", 0) / samples, 2) if samples else None,
        waiting_mean=round(bucket.get("engine:waiting", 0) / samples, 2) if samples else None,
    )


def _engine_now(gauges: list[dict[str, float]]) -> EngineNow:
    usage = [g["kv_cache_usage"] for g in gauges if "kv_cache_usage" in g]
    return EngineNow(
        processes=len(gauges),
        kv_cache_usage=round(max(usage), 4) if usage else None,
        running=int(sum(g.get("running", 0) for g in gauges)),
        waiting=int(sum(g.get("waiting", 0) for g in gauges)),
    )


def _merge(buckets: Iterable[dict[str, float]]) -> dict[str, float]:
    merged: dict[str, float] = defaultdict(float)
    for bucket in buckets:
        for name, value in bucket.items():
            merged[name] += value
    return merged


async def summarize(store: MetricsStore, window_s: int) -> MetricsSummary:
    step = 10 if window_s <= 1800 else 60
    end = int(time.time())
    start = end - window_s
    buckets = await store.buckets(step, start, end)
    series = [
        SeriesPoint(t=bucket_start, **_replies(b, "all", step).model_dump(), engine=_engine(b))
        for bucket_start in range(start - start % step + step, end + 1, step)
        for b in [buckets.get(bucket_start, {})]
    ]
    merged = _merge(buckets.values())
    bots = sorted({name.split(":")[1] for name in merged if name.startswith("bot:")})
    return MetricsSummary(
        window_s=window_s,
        step_s=step,
        now=end,
        totals=_replies(merged, "all", window_s),
        per_bot={bot: _replies(merged, f"bot:{bot}", window_s) for bot in bots},
        series=series,
        engine=_engine(merged),
        engine_now=_engine_now(await store.gauges()),
        active_conversations=await store.active_conversations(window_s),
        checks_shed={
            name.removeprefix("shed:"): int(value)
            for name, value in merged.items()
            if name.startswith("shed:")
        },
    )
