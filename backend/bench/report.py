"""From per-request records to figures, ratios against the issue's targets, and a table."""

import hashlib
from statistics import mean

from backend.bench.workloads import BOT, KNOWLEDGE_BOT

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


def _ratio(a: float | None, b: float | None, digits: int = 3) -> float | None:
    return round(a / b, digits) if a and b else None


def _pooled(runs: list[dict]) -> dict:
    """Several open-loop windows (one per rate) as one run."""
    return {
        "records": [r for run in runs for r in run["records"]],
        "total_s": sum(run["total_s"] for run in runs),
        "peak_rss_mib": max(run["peak_rss_mib"] for run in runs),
        "peak_kv_cache_usage": max((run["peak_kv_cache_usage"] or 0.0) for run in runs),
        "load_avg_1m_at_start": runs[0]["load_avg_1m_at_start"],
    }


def scenario_results(scenario: str, results: list[dict]) -> dict:
    """`results`: worker outputs that ran this scenario. Headline `on`/`off` from the first way."""
    ways: dict[str, dict[str, dict]] = {}
    by_rate: dict[float, dict] = {}
    for result in results:
        runs = [run for run in result["runs"] if run["scenario"] == scenario]
        if not runs:
            continue
        mode = "on" if result["caching"] else "off"
        pooled = figures(_pooled(runs), engine_load_s=result["engine_load_s"])
        ways.setdefault(result["way"], {})[mode] = pooled
        for run in runs:
            if run["rate"] is not None:
                row = by_rate.setdefault(run["rate"], {"rate": run["rate"], "way": result["way"]})
                row[mode] = figures(run)
    headline = next(way for way in WAY_ORDER if way in ways)
    out: dict = {"way": headline, **ways[headline], "ways": ways}
    on, off = out.get("on"), out.get("off")
    if on and off:
        out["speedup_total_time"] = _ratio(off["total_s"], on["total_s"], 2)
        out["speedup_qps"] = _ratio(on["qps"], off["qps"], 2)
        out["caching_cost_total_time"] = round(on["total_s"] / off["total_s"] - 1, 4)
        out["identical_replies"] = on["replies_sha256"] == off["replies_sha256"]
    for way in WAY_ORDER:
        if "on" in ways.get(way, {}):
            out[f"{way}_qps"] = ways[way]["on"]["qps"]
    if "app_qps" in out and "engine_qps" in out:
        out["app_vs_engine_qps"] = _ratio(out["app_qps"], out["engine_qps"])
    if "peer_qps" in out and "engine_qps" in out:
        out["peer_vs_engine_qps"] = _ratio(out["peer_qps"], out["engine_qps"])
    if by_rate:
        out["by_rate"] = [by_rate[rate] for rate in sorted(by_rate)]
    return out


def _speed(run: dict) -> dict:
    """A run's figures with what speculative decoding changes: reply speed and drafts."""
    out = figures(run)
    drafted, accepted = run.get("draft_tokens", 0), run.get("accepted_tokens", 0)
    streaming = [
        (r["completion_tokens"] - 1) / ((r["total_ms"] - r["ttft_ms"]) / 1000)
        for r in run["records"]
        if r["completion_tokens"] > 1 and r["total_ms"] > r["ttft_ms"]
    ]
    return {
        **out,
        # All the run's reply tokens over its wall time: the engine's throughput.
        "tokens_per_s": round(out.get("completion_tokens", 0) / run["total_s"], 2)
        if run["total_s"]
        else None,
        # One reply's tokens after its first, over the time they took: how fast a reply reads.
        "stream_tokens_per_s_p50": round(percentile(streaming, 0.5), 2) if streaming else None,
        "draft_tokens": drafted,
        "accepted_tokens": accepted,
        "acceptance_rate": round(accepted / drafted, 4) if drafted else None,
    }


def _parts(result: dict) -> dict[str, dict]:
    """One speculative run's workloads by part (the support windows pooled)."""
    grouped: dict[str, list[dict]] = {}
    for run in result["runs"]:
        grouped.setdefault(run["part"], []).append(run)
    out = {}
    for part, runs in grouped.items():
        pooled = runs[0]
        if len(runs) > 1:
            pooled = {
                **_pooled(runs),
                "draft_tokens": sum(r["draft_tokens"] for r in runs),
                "accepted_tokens": sum(r["accepted_tokens"] for r in runs),
            }
        out[part] = _speed(pooled)
    return out


def _same_replies(off: list[dict], on: list[dict]) -> float | None:
    """Share of requests whose reply is the same text with speculation as without."""
    texts = {(r["conversation"], r["turn"]): r["text"] for r in off}
    pairs = [(texts.get((r["conversation"], r["turn"])), r["text"]) for r in on]
    return round(sum(a == b for a, b in pairs) / len(pairs), 4) if pairs else None


def speculative_results(results: list[dict]) -> dict:
    """Speculative decoding off vs on (caching on), per way and workload part."""
    ways: dict[str, dict[str, dict]] = {}
    records: dict[str, dict[str, list[dict]]] = {}
    for result in results:
        mode = "on" if result["speculation"] else "off"
        ways.setdefault(result["way"], {})[mode] = _parts(result)
        records.setdefault(result["way"], {})[mode] = [
            {**r, "part": run["part"]} for run in result["runs"] for r in run["records"]
        ]
    headline = next(way for way in WAY_ORDER if way in ways)
    out: dict = {"way": headline, **ways[headline], "ways": ways}
    on, off = out.get("on"), out.get("off")
    if on and off:
        out["reply_time_speedup"] = {
            part: _ratio(off[part].get("latency_ms_mean"), on[part].get("latency_ms_mean"), 2) for part in on
        }
        out["tokens_per_s_on_vs_off"] = {
            part: _ratio(on[part].get("tokens_per_s"), off[part].get("tokens_per_s"), 3) for part in on
        }
        # Share of requests with the same reply, per part: batched float rounding on the CPU
        # depends on the batch's shape, which drafts change, so only one stream is exact.
        off_records, on_records = records[headline]["off"], records[headline]["on"]
        out["same_reply_share"] = {
            part: _same_replies(
                [r for r in off_records if r["part"] == part], [r for r in on_records if r["part"] == part]
            )
            for part in on
        }
        drafted = sum(p["draft_tokens"] for p in on.values())
        out["acceptance_rate"] = (
            round(sum(p["accepted_tokens"] for p in on.values()) / drafted, 4) if drafted else None
        )
    return out


def _part_figures(run: dict, **extra) -> dict:
    """A part's figures without what only a whole scenario's run has (digests, sample reply)."""
    out = figures(run, **extra)
    out.pop("sample_reply", None)
    return out


def knowledge_results(results: list[dict]) -> dict:
    """The help-center bot: first-turn time to first token with caching off and on, single-stream
    and at each concurrency; and on the retrieval path, the cached share of later turns."""
    out: dict = {"way": "app"}
    for result in results:
        runs = [run for run in result["runs"] if run["scenario"] == "knowledge"]
        if not runs:
            continue
        bot = KNOWLEDGE_BOT
        prefix = {
            "prefix_tokens": result["prefix_tokens"].get(bot),
            "knowledge_in_prefix": result.get("knowledge_in_prefix", {}).get(bot),
        }
        if result.get("knowledge_path") == "retrieval":
            out["retrieval"] = {**_retrieval(runs[0], result["engine_load_s"]), **prefix}
            continue
        out.update(bot=bot, context_window=result.get("context_window"), **prefix)
        out["options"] = result.get("knowledge_options")
        parts = {run["part"]: _part_figures(run) for run in runs}
        single = parts.get("c1", {})
        mode = "on" if result["caching"] else "off"
        out[mode] = {
            **single,
            "engine_load_s": round(result["engine_load_s"], 1),
            "total_s_all_parts": round(sum(run["total_s"] for run in runs), 3),
            "by_concurrency": {part[1:]: figures_ for part, figures_ in parts.items()},
        }
        out.setdefault("_ttft", {})[mode] = {
            r["conversation"]: r["ttft_ms"] for run in runs if run["part"] == "c1" for r in run["records"]
        }
    ttft = out.pop("_ttft", {})
    on, off = out.get("on"), out.get("off")
    if on and off:
        out["ttft_p50_off_vs_on"] = _ratio(off.get("ttft_ms_p50"), on.get("ttft_ms_p50"), 1)
        # The same questions: the caching-off run asks the first of the caching-on run's.
        same = [ttft["on"][key] for key in ttft.get("off", {}) if key in ttft.get("on", {})]
        if same:
            out["ttft_p50_off_vs_on_same_questions"] = _ratio(
                off.get("ttft_ms_p50"), percentile(same, 0.5), 1
            )
        out["ttft_p50_off_vs_on_by_concurrency"] = {
            level: _ratio(f.get("ttft_ms_p50"), on["by_concurrency"][level].get("ttft_ms_p50"), 1)
            for level, f in off["by_concurrency"].items()
            if level in on["by_concurrency"]
        }
    return out


def _retrieval(run: dict, engine_load_s: float) -> dict:
    """Conversations on the retrieval path: what each later turn found in the cache."""
    records = run["records"]
    later = [r for r in records if r["turn"] > 0]
    cached = sum(r["cached_tokens"] for r in later)
    cacheable = sum(r["cacheable_tokens"] for r in later)
    by_turn = []
    for turn in sorted({r["turn"] for r in records}):
        rows = [r for r in records if r["turn"] == turn]
        turn_cached = sum(r["cached_tokens"] for r in rows)
        turn_cacheable = sum(r["cacheable_tokens"] for r in rows)
        by_turn.append(
            {
                "turn": turn + 1,
                "prompt_tokens_mean": round(mean(r["prompt_tokens"] for r in rows), 1),
                "new_tokens_mean": round(mean(r["prompt_tokens"] - r["cached_tokens"] for r in rows), 1),
                "cached_tokens": turn_cached,
                "cacheable_tokens": turn_cacheable,
                "cached_share_of_cacheable": round(turn_cached / turn_cacheable, 4)
                if turn_cacheable
                else None,
                "ttft_ms_p50": round(percentile([r["ttft_ms"] for r in rows], 0.5), 1),
            }
        )
    return {
        "conversations": len({r["conversation"] for r in records}),
        "turns": max((r["turn"] for r in records), default=-1) + 1,
        "later_turns_cached_tokens": cached,
        "later_turns_cacheable_tokens": cacheable,
        "later_turns_cached_share": round(cached / cacheable, 4) if cacheable else None,
        "by_turn": by_turn,
        "all_turns": _part_figures(run, engine_load_s=engine_load_s),
    }


# A returning customer whose history the cache served at least this share of still "hits".
CAPACITY_HIT = 0.9


def _written(counters: dict) -> int:
    """KV tokens a phase wrote: the prompt tokens it computed (not served from the cache; the
    handoff judge's reads included) and the reply tokens it generated."""
    computed = counters.get("prompt_tokens", 0) - counters.get("prompt_tokens_cached", 0)
    return computed + counters.get("generation_tokens", 0)


def capacity_results(results: list[dict]) -> dict:
    """Returning customers' cached share and first-token time against live conversations.

    What decides a returning customer's hit is what the cache took in after their last turn
    (it evicts the least recently used blocks first): the conversations opened after theirs,
    each writing `kv_tokens_per_conversation`, and the customers who came back before them,
    whose histories are used again (and their short turn written). `kv_tokens_since` estimates
    it per checkpoint from those counts; `equivalent_conversations` is the same in opened
    conversations, as if nobody had come back in between.
    """
    result = results[0]
    runs = [run for run in result["runs"] if run["scenario"] == "capacity"]
    log = result.get("engine_log", {})
    block = result["block_size"]
    prefix = result["prefix_tokens"].get(BOT, 0)
    prefix_blocks = prefix // block * block  # always in the cache: every turn uses them
    plan = result.get("capacity_plan") or {}
    per_return = plan.get("returning", 1)
    phases = []
    for checkpoint, level in enumerate(sorted({run["level"] for run in runs})):
        opened = next(r for r in runs if r["level"] == level and r["part"] == "open")
        back = next(r for r in runs if r["level"] == level and r["part"] == "return")
        phases.append((checkpoint, level, opened, back))
    opened_total = sum(len({r["conversation"] for r in o["records"]}) for _, _, o, _ in phases)
    written = sum(_written(o["engine_counters"]) for _, _, o, _ in phases)
    per_conversation = round(written / opened_total) if opened_total else None
    histories = [r["prompt_tokens"] - prefix for _, _, _, b in phases for r in b["records"]]
    history = round(mean(histories)) if histories else 0  # a returning customer's own history
    # What a return writes beyond the history it finds again (or computes again, when it missed).
    returns = [
        (
            _written(b["engine_counters"])
            - sum(r["cacheable_tokens"] - r["cached_tokens"] for r in b["records"])
        )
        / max(1, len(b["records"]))
        for _, _, _, b in phases
    ]
    per_return_written = round(mean(returns)) if returns else 0
    levels = []
    for checkpoint, level, opened, back in phases:
        returning = figures(back)
        cached, cacheable = returning.get("cached_tokens", 0), returning.get("cacheable_tokens", 0)
        own = cacheable - prefix_blocks * returning["requests"]
        opened_after = max(0, level - (checkpoint + 1) * per_return)
        returned_before = checkpoint * per_return
        since = opened_after * (per_conversation or 0) + returned_before * (history + per_return_written)
        levels.append(
            {
                "conversations": level,
                "opened": len({r["conversation"] for r in opened["records"]}),
                "kv_tokens_written_by_opening": _written(opened["engine_counters"]),
                "returning": returning["requests"],
                "cached_tokens": cached,
                "cacheable_tokens": cacheable,
                "hit_rate": returning.get("cached_share_of_cacheable"),
                # Of their own history, beyond the bot's prefix (whose blocks every turn keeps warm).
                "history_hit_rate": round(max(0, cached - prefix_blocks * returning["requests"]) / own, 4)
                if own > 0
                else None,
                "ttft_ms_p50": returning.get("ttft_ms_p50"),
                "ttft_ms_max": max((r["ttft_ms"] for r in back["records"]), default=None),
                "prompt_tokens_mean": round(
                    returning.get("prompt_tokens", 0) / max(1, returning["requests"]), 1
                ),
                "opened_after_them": opened_after,
                "returned_before_them": returned_before,
                "kv_tokens_since": since,
                "equivalent_conversations": round(per_return + since / per_conversation, 1)
                if per_conversation
                else None,
                "open_total_s": round(opened["total_s"], 1),
                "open_ttft_ms_p50": figures(opened).get("ttft_ms_p50"),
                "preemptions": opened["engine_counters"].get("preemptions", 0),
                "peak_kv_cache_usage": opened["peak_kv_cache_usage"],
                "load_avg_1m_at_start": round(opened["load_avg_1m_at_start"], 2),
            }
        )
    kv_tokens, fixed = log.get("kv_cache_tokens"), log.get("fixed_tokens")
    room = (kv_tokens - (fixed or 0)) if kv_tokens else None
    # Opened conversations that fit after the returning customers' own histories, plus them.
    predicted = (
        round(per_return + (room - per_return * history) / per_conversation, 1)
        if room and per_conversation
        else None
    )
    # Kept: at least CAPACITY_HIT of their own history (beyond the always-warm bot prefix) came back.
    hits = [row for row in levels if row["history_hit_rate"] is not None]
    fall = next((row for row in hits if row["history_hit_rate"] < CAPACITY_HIT), None)
    kept = [row for row in hits if fall is None or row["conversations"] < fall["conversations"]]
    return {
        "way": "app",
        "bot": BOT,
        "kv_cache_gib": result["kv_cache_gib"],
        "kv_cache_tokens": kv_tokens,  # vLLM's own count, from its start-up log
        "startup_sizing": log.get("sizing"),  # the app's line (backend/engine/kv_sizing.py)
        "fixed_tokens": fixed,
        "room_tokens": room,  # the cache less the warm prefixes
        "block_size": block,
        "prefix_tokens": prefix,
        "plan": plan,
        "max_reply_tokens": result.get("max_reply_tokens"),
        "kv_tokens_per_conversation": per_conversation,
        "history_tokens": history,
        "kv_tokens_per_return": per_return_written,
        "predicted_conversations": predicted,
        "hit_threshold": CAPACITY_HIT,
        "last_level_kept": kept[-1]["conversations"] if kept else None,
        "last_level_kept_equivalent": kept[-1]["equivalent_conversations"] if kept else None,
        "fall_off_at": fall["conversations"] if fall else None,
        "fall_off_at_equivalent": fall["equivalent_conversations"] if fall else None,
        "levels": levels,
        "engine_load_s": round(result["engine_load_s"], 1),
    }


def targets(scenarios: dict) -> list[dict]:
    """The issue's targets, each with the measured value (None: not measured in this run)."""
    article, random_, multiturn = (scenarios.get(s, {}) for s in ("article", "random", "multiturn"))
    multiturn_share = [
        w["on"]["cached_share_of_cacheable"] for w in multiturn.get("ways", {}).values() if "on" in w
    ]
    rows = [
        ("article: total time off / on", article.get("speedup_total_time"), ">=", 8.0),
        ("random: cost of caching on total time", random_.get("caching_cost_total_time"), "<=", 0.02),
        ("article: app QPS / bare-engine QPS (caching on)", article.get("app_vs_engine_qps"), ">=", 0.95),
        (
            "multiturn: cached / cacheable tokens (caching on, worst way)",
            min(multiturn_share) if multiturn_share and None not in multiturn_share else None,
            ">=",
            0.95,
        ),
    ]
    speculative = scenarios.get("speculative", {})
    rows += [
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
    knowledge = scenarios.get("knowledge", {})
    rows += [
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
    return [
        {
            "target": name,
            "value": value,
            "goal": f"{op} {goal:g}",
            "met": None if value is None else (value >= goal if op == ">=" else value <= goal),
        }
        for name, value, op, goal in rows
    ]


TABLE_ROWS = [
    ("requests", "requests"),
    ("total time (s)", "total_s"),
    ("QPS", "qps"),
    ("TTFT mean (ms)", "ttft_ms_mean"),
    ("TTFT p50 (ms)", "ttft_ms_p50"),
    ("TTFT p95 (ms)", "ttft_ms_p95"),
    ("latency mean (ms)", "latency_ms_mean"),
    ("latency p50 (ms)", "latency_ms_p50"),
    ("latency p95 (ms)", "latency_ms_p95"),
    ("prompt tokens", "prompt_tokens"),
    ("cached tokens", "cached_tokens"),
    ("cacheable tokens", "cacheable_tokens"),
    ("cached / cacheable", "cached_share_of_cacheable"),
    ("completion tokens", "completion_tokens"),
    ("peak RSS (MiB)", "peak_rss_mib"),
    ("peak KV cache use", "peak_kv_cache_usage"),
    ("engine load (s)", "engine_load_s"),
]


SHARES = {"cached_share_of_cacheable", "peak_kv_cache_usage"}


def _cell(value, percent: bool = False) -> str:
    if value is None:
        return "-"
    if percent:
        return f"{value:.1%}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def scenario_table(name: str, result: dict) -> str:
    present = result["ways"]
    columns = [(way, mode) for way in WAY_ORDER for mode in ("off", "on") if mode in present.get(way, {})]
    lines = [
        f"### {name}",
        "",
        "| metric | " + " | ".join(f"{way}, caching {mode}" for way, mode in columns) + " |",
        "| --- |" + " ---: |" * len(columns),
    ]
    for label, key in TABLE_ROWS:
        cells = [_cell(result["ways"][way][mode].get(key), key in SHARES) for way, mode in columns]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if "by_rate" in result:
        lines += [
            "",
            "| arrival rate (req/s) | requests | latency p50 off / on (ms) | latency p95 off / on (ms) |",
        ]
        lines.append("| ---: | ---: | ---: | ---: |")
        for row in result["by_rate"]:
            off, on = row.get("off", {}), row.get("on", {})
            lines.append(
                f"| {row['rate']:g} | {on.get('requests', off.get('requests'))} | "
                f"{_cell(off.get('latency_ms_p50'))} / {_cell(on.get('latency_ms_p50'))} | "
                f"{_cell(off.get('latency_ms_p95'))} / {_cell(on.get('latency_ms_p95'))} |"
            )
    return "\n".join(lines)


SPEED_ROWS = [
    ("requests", "requests"),
    ("total time (s)", "total_s"),
    ("reply tokens / s", "tokens_per_s"),
    ("reply time p50 (ms)", "latency_ms_p50"),
    ("reply time p95 (ms)", "latency_ms_p95"),
    ("TTFT p50 (ms)", "ttft_ms_p50"),
    ("one reply's tokens / s after the first, p50", "stream_tokens_per_s_p50"),
    ("cached / cacheable", "cached_share_of_cacheable"),
    ("drafts accepted", "acceptance_rate"),
]


def speculative_table(result: dict) -> str:
    lines = []
    for way, modes in result["ways"].items():
        parts = list(modes.get("on") or modes.get("off") or {})
        columns = [(part, mode) for part in parts for mode in ("off", "on") if part in modes.get(mode, {})]
        lines += [
            f"### speculative decoding off vs on ({way}, caching on)",
            "",
            "| metric | " + " | ".join(f"{part} {mode}" for part, mode in columns) + " |",
            "| --- |" + " ---: |" * len(columns),
        ]
        for label, key in SPEED_ROWS:
            cells = [
                _cell(modes[mode][part].get(key), key in SHARES | {"acceptance_rate"})
                for part, mode in columns
            ]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines).rstrip()


KNOWLEDGE_ROWS = [
    ("questions", "requests"),
    ("total time (s)", "total_s"),
    ("TTFT p50 (ms)", "ttft_ms_p50"),
    ("TTFT p95 (ms)", "ttft_ms_p95"),
    ("latency p50 (ms)", "latency_ms_p50"),
    ("prompt tokens", "prompt_tokens"),
    ("cached / cacheable", "cached_share_of_cacheable"),
    ("peak KV cache use", "peak_kv_cache_usage"),
]


def knowledge_table(result: dict) -> str:
    levels = sorted(
        {int(k) for mode in ("off", "on") for k in result.get(mode, {}).get("by_concurrency", {})}
    )
    columns = [
        (str(level), mode)
        for level in levels
        for mode in ("off", "on")
        if str(level) in result.get(mode, {}).get("by_concurrency", {})
    ]
    where = "in the fixed prefix" if result.get("knowledge_in_prefix") else "beside each question"
    prefix = result.get("prefix_tokens")
    lines = [
        f"### knowledge ({result.get('bot')}, help center {where}; prefix {prefix} tokens)",
        "",
        "| metric | " + " | ".join(f"{level} at once, caching {mode}" for level, mode in columns) + " |",
        "| --- |" + " ---: |" * len(columns),
    ]
    for label, key in KNOWLEDGE_ROWS:
        cells = [
            _cell(result[mode]["by_concurrency"][level].get(key), key in SHARES) for level, mode in columns
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    loads = [f"caching {m}: {result[m]['engine_load_s']} s" for m in ("off", "on") if m in result]
    lines += ["", f"start-up until /readyz (engine load and warm-up): {'; '.join(loads)}"]
    if "ttft_p50_off_vs_on" in result:
        lines.append(
            f"TTFT p50 single-stream off / on: {_cell(result['ttft_p50_off_vs_on'])}x "
            f"(same questions: {_cell(result.get('ttft_p50_off_vs_on_same_questions'))}x)"
        )
    retrieval = result.get("retrieval")
    if retrieval:
        lines += [
            "",
            f"### knowledge on the retrieval path (prefix {retrieval['prefix_tokens']} tokens, caching on): "
            f"{retrieval['conversations']} conversations x {retrieval['turns']} turns",
            "",
            "| turn | prompt tokens (mean) | computed tokens (mean) | cached / cacheable | TTFT p50 (ms) |",
            "| ---: | ---: | ---: | ---: | ---: |",
        ]
        for row in retrieval["by_turn"]:
            lines.append(
                f"| {row['turn']} | {_cell(row['prompt_tokens_mean'])} | {_cell(row['new_tokens_mean'])} | "
                f"{_cell(row['cached_share_of_cacheable'], True)} | {_cell(row['ttft_ms_p50'])} |"
            )
        lines.append(
            f"| 2-{retrieval['turns']} | | | **{_cell(retrieval['later_turns_cached_share'], True)}** "
            f"({retrieval['later_turns_cached_tokens']} of {retrieval['later_turns_cacheable_tokens']}) | |"
        )
    return "\n".join(lines)


def capacity_table(result: dict) -> str:
    lines = [
        f"### capacity ({result['bot']}, KV cache {result['kv_cache_gib']:g} GiB = "
        f"{_cell(result['kv_cache_tokens'])} tokens by vLLM's count)",
        "",
        f"app's start-up line: {result.get('startup_sizing') or '-'}",
        "KV tokens written per opened conversation (its messages, replies and the judge's reads): "
        f"{_cell(result['kv_tokens_per_conversation'])}; a returning customer's history: "
        f"{_cell(result['history_tokens'])}; predicted to fit: {_cell(result['predicted_conversations'])}",
        "",
        "| live conversations | equivalent | returning | cached / cacheable | own history from cache "
        "| TTFT p50 (ms) | TTFT max (ms) | opening time (s) | preemptions |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in result["levels"]:
        lines.append(
            f"| {row['conversations']} | {_cell(row['equivalent_conversations'])} | {row['returning']} | "
            f"{_cell(row['hit_rate'], True)} | {_cell(row['history_hit_rate'], True)} | "
            f"{_cell(row['ttft_ms_p50'])} | {_cell(row['ttft_ms_max'])} | "
            f"{_cell(row['open_total_s'])} | {row['preemptions']} |"
        )
    lines += [
        "",
        f"returning customers kept (>= {result['hit_threshold']:.0%} of their history from cache) up to "
        f"{_cell(result['last_level_kept'])} live conversations "
        f"({_cell(result['last_level_kept_equivalent'])} equivalent); "
        f"fall-off at {_cell(result['fall_off_at'])} ({_cell(result['fall_off_at_equivalent'])} equivalent)",
    ]
    return "\n".join(lines)


def text_report(scenarios: dict, measured_targets: list[dict]) -> str:
    tables = {"speculative": speculative_table, "knowledge": knowledge_table, "capacity": capacity_table}
    parts = [
        tables[name](result) if name in tables else scenario_table(name, result)
        for name, result in scenarios.items()
    ]
    lines = ["### targets", "", "| target | goal | measured | met |", "| --- | --- | ---: | --- |"]
    for row in measured_targets:
        met = "-" if row["met"] is None else ("yes" if row["met"] else "**no**")
        lines.append(f"| {row['target']} | {row['goal']} | {_cell(row['value'])} | {met} |")
    return "\n\n".join([*parts, "\n".join(lines)])
