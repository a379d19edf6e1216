"""From per-request records to figures, ratios against the issue's targets, and a table."""

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


def text_report(scenarios: dict, measured_targets: list[dict]) -> str:
    parts = [
        speculative_table(result) if name == "speculative" else scenario_table(name, result)
        for name, result in scenarios.items()
    ]
    lines = ["### targets", "", "| target | goal | measured | met |", "| --- | --- | ---: | --- |"]
    for row in measured_targets:
        met = "-" if row["met"] is None else ("yes" if row["met"] else "**no**")
        lines.append(f"| {row['target']} | {row['goal']} | {_cell(row['value'])} | {met} |")
    return "\n\n".join([*parts, "\n".join(lines)])
