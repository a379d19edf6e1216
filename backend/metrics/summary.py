"""What the admin page shows, computed from the metrics store over a window."""

import time
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from backend.metrics.histogram import BOUNDS_MS, percentile
from backend.metrics.store import MetricsStore

QUANTILES = {"p50": 0.5, "p95": 0.95, "p99": 0.99}


def _histogram(bucket: dict[str, float], name: str) -> list[int]:
    return [int(bucket.get(f"{name}:{i}", 0)) for i in range(len(BOUNDS_MS) + 1)]


def _figures(bucket: dict[str, float], scope: str, seconds: float) -> dict[str, Any]:
    replies = bucket.get(f"{scope}:n", 0)
    prompt, cached = bucket.get(f"{scope}:pt", 0), bucket.get(f"{scope}:ct", 0)
    figures: dict[str, Any] = {
        "replies": int(replies),
        "errors": int(bucket.get(f"{scope}:err", 0)),
        "qps": round(replies / seconds, 3),
        "prompt_tokens": int(prompt),
        "cached_tokens": int(cached),
        "hit_rate": round(cached / prompt, 4) if prompt else None,
        "reply_tokens_per_s": _per_second(bucket.get(f"{scope}:st", 0), bucket.get(f"{scope}:sms", 0)),
    }
    for kind in ("ttft", "tot"):
        counts = _histogram(bucket, f"{scope}:{kind}")
        label = "ttft_ms" if kind == "ttft" else "total_ms"
        figures[label] = {q: percentile(counts, share) for q, share in QUANTILES.items()}
    return figures


def _per_second(tokens: float, ms: float) -> float | None:
    return round(tokens / (ms / 1000), 1) if ms else None


def _merge(buckets: Iterable[dict[str, float]]) -> dict[str, float]:
    merged: dict[str, float] = defaultdict(float)
    for bucket in buckets:
        for name, value in bucket.items():
            merged[name] += value
    return merged


def _engine(gauges: list[dict[str, float]]) -> dict[str, Any]:
    queries = sum(g.get("prefix_cache_queries", 0) for g in gauges)
    hits = sum(g.get("prefix_cache_hits", 0) for g in gauges)
    usage = [g["kv_cache_usage"] for g in gauges if "kv_cache_usage" in g]
    drafted = sum(g.get("draft_tokens", 0) for g in gauges)
    accepted = sum(g.get("accepted_tokens", 0) for g in gauges)
    return {
        "processes": len(gauges),
        "kv_cache_usage": round(max(usage), 4) if usage else None,
        "running": int(sum(g.get("running", 0) for g in gauges)),
        "waiting": int(sum(g.get("waiting", 0) for g in gauges)),
        # vLLM's own counters since each engine started: the cross-check of the app's hit rate.
        "vllm_prefix_cache_queries": int(queries),
        "vllm_prefix_cache_hits": int(hits),
        "vllm_hit_rate": round(hits / queries, 4) if queries else None,
        # Speculative decoding: draft tokens proposed and the share the model kept, since start.
        "draft_tokens": int(drafted),
        "accepted_tokens": int(accepted),
        "draft_acceptance_rate": round(accepted / drafted, 4) if drafted else None,
    }


async def summarize(store: MetricsStore, window_s: int) -> dict[str, Any]:
    step = 10 if window_s <= 1800 else 60
    end = int(time.time())
    start = end - window_s
    buckets = await store.buckets(step, start, end)
    series = []
    for bucket_start in range(start - start % step + step, end + 1, step):
        point = _figures(buckets.get(bucket_start, {}), "all", step)
        series.append({"t": bucket_start, **point})
    merged = _merge(buckets.values())
    bots = sorted({name.split(":")[1] for name in merged if name.startswith("bot:")})
    return {
        "window_s": window_s,
        "step_s": step,
        "now": end,
        "totals": _figures(merged, "all", window_s),
        "per_bot": {bot: _figures(merged, f"bot:{bot}", window_s) for bot in bots},
        "series": series,
        "engine": _engine(await store.gauges()),
        "active_conversations": await store.active_conversations(),
    }
