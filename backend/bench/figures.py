"""One run's figures from its per-request records: the numbers every scenario's results build on."""

import hashlib
from statistics import mean

# The product's own way first: a scenario's headline figures come from the first way it ran.
WAY_ORDER = ("app", "engine", "peer")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def figures(run: dict, *, engine_load_s: float | None = None) -> dict:
    """One (scenario, way, mode) run's figures."""
    records = run["records"]
    if not records:  # an open-loop window without arrivals
        return {"requests": 0, "total_s": round(run["total_s"], 3), "qps": 0.0}
    ttft = [r["ttft_ms"] for r in records]
    latency = [r["total_ms"] for r in records]
    cached = sum(r["cached_tokens"] for r in records)
    cacheable = sum(r["cacheable_tokens"] for r in records)
    sentence = [r["first_sentence_ms"] for r in records if r.get("first_sentence_ms") is not None]
    return {
        "requests": len(records),
        "total_s": round(run["total_s"], 3),
        "qps": round(len(records) / run["total_s"], 3),
        "ttft_ms_mean": round(mean(ttft), 1),
        "ttft_ms_p50": round(percentile(ttft, 0.5), 1),
        "ttft_ms_p95": round(percentile(ttft, 0.95), 1),
        "latency_ms_mean": round(mean(latency), 1),
        "latency_ms_p50": round(percentile(latency, 0.5), 1),
        "latency_ms_p95": round(percentile(latency, 0.95), 1),
        # The bare engine's time to a whole first sentence: the earliest a checked word shows.
        "first_sentence_ms_p50": round(percentile(sentence, 0.5), 1) if sentence else None,
        "prompt_tokens": sum(r["prompt_tokens"] for r in records),
        "cached_tokens": cached,
        "cacheable_tokens": cacheable,
        "cached_share_of_cacheable": round(cached / cacheable, 4) if cacheable else None,
        "completion_tokens": sum(r["completion_tokens"] for r in records),
        "peak_rss_mib": run["peak_rss_mib"],
        "peak_kv_cache_usage": run["peak_kv_cache_usage"],
        "engine_load_s": None if engine_load_s is None else round(engine_load_s, 1),
        "load_avg_1m_at_start": round(run["load_avg_1m_at_start"], 2),
        # Equal digests mean the same replies, request for request.
        "replies_sha256": hashlib.sha256(
            "\n".join(f"{r['conversation']}/{r['turn']}:{r['text']}" for r in records).encode()
        ).hexdigest()[:16],
        "sample_reply": records[0]["text"] if records else None,
    }


def ratio(a: float | None, b: float | None, digits: int = 3) -> float | None:
    return round(a / b, digits) if a and b else None


def pooled(runs: list[dict]) -> dict:
    """Several open-loop windows (one per rate) as one run."""
    return {
        "records": [r for run in runs for r in run["records"]],
        "total_s": sum(run["total_s"] for run in runs),
        "peak_rss_mib": max(run["peak_rss_mib"] for run in runs),
        "peak_kv_cache_usage": max((run["peak_kv_cache_usage"] or 0.0) for run in runs),
        "load_avg_1m_at_start": runs[0]["load_avg_1m_at_start"],
    }
