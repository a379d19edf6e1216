"""Speculative decoding off vs on (caching on): reply speed, drafts, and whether replies stay the same."""

from backend.bench.figures import WAY_ORDER, figures, percentile, pooled, ratio


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
        one = runs[0]
        if len(runs) > 1:
            one = {
                **pooled(runs),
                "draft_tokens": sum(r["draft_tokens"] for r in runs),
                "accepted_tokens": sum(r["accepted_tokens"] for r in runs),
            }
        out[part] = _speed(one)
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
    # Drafting's own effect is the bare engine's: through the app, a reply's time is also its
    # checks' (the answer samples' wait, `turns/agreement.py`), and its text may be a quote.
    headline = next(way for way in ("engine", *WAY_ORDER) if way in ways)
    out: dict = {"way": headline, **ways[headline], "ways": ways}
    on, off = out.get("on"), out.get("off")
    if on and off:
        out["reply_time_speedup"] = {
            part: ratio(off[part].get("latency_ms_mean"), on[part].get("latency_ms_mean"), 2) for part in on
        }
        out["tokens_per_s_on_vs_off"] = {
            part: ratio(on[part].get("tokens_per_s"), off[part].get("tokens_per_s"), 3) for part in on
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
