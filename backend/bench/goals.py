"""The benchmark's goals (the article's figures and ours), each with its measured value (None: not run)."""

# (target, measured value, comparison, goal)
Row = tuple[str, float | None, str, float]


def _caching_rows(scenarios: dict) -> list[Row]:
    article, random_, multiturn = (scenarios.get(s, {}) for s in ("article", "random", "multiturn"))
    multiturn_share = [
        w["on"]["cached_share_of_cacheable"] for w in multiturn.get("ways", {}).values() if "on" in w
    ]
    return [
        ("article: total time off / on", article.get("speedup_total_time"), ">=", 8.0),
        ("random: cost of caching on total time", random_.get("caching_cost_total_time"), "<=", 0.02),
        ("article: app QPS / bare-engine QPS (caching on)", article.get("app_vs_engine_qps"), ">=", 0.95),
        (
            "article: app's first word shown / bare engine's first sentence, p50 (caching on)",
            article.get("app_shown_vs_engine_sentence"),
            "<=",
            1.3,
        ),
        (
            "multiturn: cached / cacheable tokens (caching on, worst way)",
            min(multiturn_share) if multiturn_share and None not in multiturn_share else None,
            ">=",
            0.95,
        ),
    ]


def _speculative_rows(scenarios: dict) -> list[Row]:
    speculative = scenarios.get("speculative", {})
    return [
        (
            "speculative: single-stream reply time off / on (policy questions)",
            speculative.get("reply_time_speedup", {}).get("c1"),
            ">=",
            1.5,
        ),
        (
            "speculative: tokens/s at 32 conversations, on / off",
            speculative.get("tokens_per_s_on_vs_off", {}).get("c32"),
            ">=",
            0.95,
        ),
        (
            "speculative: single-stream replies the same with and without (share)",
            speculative.get("same_reply_share", {}).get("c1"),
            ">=",
            1.0,
        ),
    ]


def _knowledge_rows(scenarios: dict) -> list[Row]:
    knowledge = scenarios.get("knowledge", {})
    return [
        (
            "knowledge: TTFT p50 single-stream, caching on (ms)",
            knowledge.get("on", {}).get("ttft_ms_p50"),
            "<=",
            1000.0,
        ),
        ("knowledge: TTFT p50 single-stream, off / on", knowledge.get("ttft_p50_off_vs_on"), ">=", 30.0),
        (
            "knowledge: retrieval path, cached / cacheable tokens of later turns",
            knowledge.get("retrieval", {}).get("later_turns_cached_share"),
            ">=",
            0.9,
        ),
    ]


def _tier_rows(scenarios: dict) -> list[Row]:
    restart = scenarios.get("restart", {})
    beyond = scenarios.get("capacity", {}).get("tier", {})
    reached = beyond.get("twice_the_fall_off_reached")
    return [
        ("restart: seconds to ready, KV tier on", restart.get("on", {}).get("ready_s"), "<=", 30.0),
        ("restart: seconds to ready, tier on / off", restart.get("on_vs_off_ready"), "<=", 1 / 3),
        (
            "capacity: history hit rate at twice the fall-off, tier on",
            beyond.get("history_hit_rate") if reached else None,
            ">=",
            0.9,
        ),
        (
            "capacity: TTFT p50 at twice the fall-off, tier on / warm",
            beyond.get("ttft_vs_warm") if reached else None,
            "<=",
            2.0,
        ),
    ]


def targets(scenarios: dict) -> list[dict]:
    """The issue's targets, each with the measured value (None: not measured in this run)."""
    rows = [
        *_caching_rows(scenarios),
        *_speculative_rows(scenarios),
        *_knowledge_rows(scenarios),
        *_tier_rows(scenarios),
    ]
    return [
        {
            "target": name,
            "value": value,
            "goal": f"{op} {goal:g}",
            "met": None if value is None else (value >= goal if op == ">=" else value <= goal),
        }
        for name, value, op, goal in rows
    ]
