"""The text report: markdown tables of each scenario's results and of the benchmark's targets."""

from collections.abc import Sequence

from backend.bench.costs import table as cost_table
from backend.bench.figures import WAY_ORDER

TABLE_ROWS = [
    ("requests", "requests"),
    ("total time (s)", "total_s"),
    ("QPS", "qps"),
    ("TTFT mean (ms)", "ttft_ms_mean"),
    ("TTFT p50 (ms)", "ttft_ms_p50"),
    ("TTFT p95 (ms)", "ttft_ms_p95"),
    ("first sentence p50 (ms)", "first_sentence_ms_p50"),
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
    for way, mode in columns:
        if costs := result["ways"][way][mode].get("costs"):
            lines += ["", f"Where a turn's time goes ({way}, caching {mode}):", "", *cost_table(costs)]
    for row in result.get("by_rate", []):
        for mode in ("off", "on"):
            if costs := row.get(mode, {}).get("costs"):
                heading = (
                    f"Where a turn's time goes at {row['rate']:g} arrivals/s ({row['way']}, caching {mode}):"
                )
                lines += ["", heading, "", *cost_table(costs)]
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


def capacity_table(section: dict) -> str:
    tables = [_capacity_way_table(result) for result in section["ways"].values()]
    if beyond := section.get("tier"):
        tables.append(
            f"tier on at {_cell(beyond['at_conversations'])} live conversations (the cache alone fell off "
            f"at {_cell(beyond['off_fall_off_at'])}): own history from cache "
            f"{_cell(beyond['history_hit_rate'], True)}, TTFT p50 {_cell(beyond['ttft_ms_p50'])} ms, "
            f"{_cell(beyond['ttft_vs_warm'])}x the warm case's {_cell(beyond['warm_ttft_ms_p50'])} ms"
        )
    return "\n\n".join(tables)


def _capacity_way_table(result: dict) -> str:
    lines = [
        f"### capacity ({result['bot']}, KV cache {result['kv_cache_gib']:g} GiB = "
        f"{_cell(result['kv_cache_tokens'])} tokens by vLLM's count; KV tier {result['kv_tier']})",
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


def text_report(scenarios: dict, measured_targets: list[dict], stale: Sequence[dict] = ()) -> str:
    tables = {"speculative": speculative_table, "knowledge": knowledge_table, "capacity": capacity_table}
    parts = [
        tables[name](result) if name in tables else scenario_table(name, result)
        for name, result in scenarios.items()
    ]
    lines = ["### targets", "", "| target | goal | measured | met |", "| --- | --- | ---: | --- |"]
    for row in measured_targets:
        met = "-" if row["met"] is None else ("yes" if row["met"] else "**no**")
        lines.append(f"| {row['target']} | {row['goal']} | {_cell(row['value'])} | {met} |")
    if stale:
        lines += ["", "Stale sections (run on other code or another machine; not in the targets):"]
        lines += [
            f"- {s['section']}: commit {str(s['commit'])[:10]}, run {s['started_at']} on {s.get('cpu')}"
            for s in stale
        ]
    return "\n\n".join([*parts, "\n".join(lines)])
