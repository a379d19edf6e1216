"""The help-center bot: first-token time with caching off and on, and on the retrieval path, what
each later turn found in the cache."""

from statistics import mean

from backend.bench.figures import figures, percentile, ratio
from backend.bench.workloads import KNOWLEDGE_BOT


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
        out["ttft_p50_off_vs_on"] = ratio(off.get("ttft_ms_p50"), on.get("ttft_ms_p50"), 1)
        # The same questions: the caching-off run asks the first of the caching-on run's.
        same = [ttft["on"][key] for key in ttft.get("off", {}) if key in ttft.get("on", {})]
        if same:
            out["ttft_p50_off_vs_on_same_questions"] = ratio(off.get("ttft_ms_p50"), percentile(same, 0.5), 1)
        out["ttft_p50_off_vs_on_by_concurrency"] = {
            level: ratio(f.get("ttft_ms_p50"), on["by_concurrency"][level].get("ttft_ms_p50"), 1)
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
