"""Speculative decoding's figures (bench/speculative_results.py) read from the bare engine where
it ran: through the app, a reply's time is also its checks'."""

from backend.bench.speculative_results import speculative_results


def worker_output(way: str, speculation: bool, total_ms: float, text: str) -> dict:
    record = {
        "conversation": "c",
        "turn": 0,
        "ttft_ms": 100.0,
        "total_ms": total_ms,
        "prompt_tokens": 10,
        "cached_tokens": 8,
        "cacheable_tokens": 8,
        "completion_tokens": 9,
        "text": text,
    }
    run = {
        "part": "c1",
        "total_s": total_ms / 1000,
        "records": [record],
        "draft_tokens": 4 if speculation else 0,
        "accepted_tokens": 2 if speculation else 0,
        "peak_rss_mib": 1.0,
        "peak_kv_cache_usage": 0.0,
        "load_avg_1m_at_start": 0.0,
    }
    return {"way": way, "speculation": speculation, "runs": [run]}


def test_the_targets_read_the_bare_engine_where_it_ran():
    out = speculative_results(
        [
            worker_output("app", False, 3000.0, "Here is what our policy says: ..."),
            worker_output("app", True, 1000.0, "Yes, you can."),
            worker_output("engine", False, 1200.0, "No."),
            worker_output("engine", True, 1000.0, "No."),
        ]
    )
    assert out["way"] == "engine" and set(out["ways"]) == {"app", "engine"}
    assert out["reply_time_speedup"] == {"c1": 1.2} and out["same_reply_share"] == {"c1": 1.0}
    app_only = speculative_results(
        [worker_output("app", False, 3000.0, "a"), worker_output("app", True, 1000.0, "b")]
    )
    assert app_only["way"] == "app" and app_only["reply_time_speedup"] == {"c1": 3.0}
