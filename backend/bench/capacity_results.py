"""`capacity`: returning customers' cache hits against live conversations, and where they fall off.

What decides a returning customer's hit is what the cache took in after their last turn (it
evicts the least recently used blocks first): the conversations opened after theirs, and the
customers who came back before them. The engine's counters tell what each of those wrote.
"""

from dataclasses import dataclass
from statistics import mean, median
from typing import NamedTuple

from backend.bench.figures import figures
from backend.bench.workloads import BOT

# A returning customer whose history the cache served at least this share of still "hits".
CAPACITY_HIT = 0.9


class _Phase(NamedTuple):
    checkpoint: int
    level: int  # live conversations at this checkpoint
    opened: dict  # the run that opened conversations up to `level`
    back: dict  # the run of the customers who came back at `level`


@dataclass(frozen=True)
class _Costs:
    """KV tokens each kind of turn wrote, from the engine's counters."""

    per_return: int  # customers returning at each checkpoint
    per_conversation: int | None  # an opened conversation: its messages, replies and the judge's reads
    history: int  # a returning customer's own history
    per_return_written: int  # a return, beyond the history it finds again

    def predicted(self, room: int | None) -> float | None:
        """Opened conversations that fit after the returning customers' own histories, plus them."""
        if not (room and self.per_conversation):
            return None
        return round(self.per_return + (room - self.per_return * self.history) / self.per_conversation, 1)


def _written(counters: dict) -> int:
    """KV tokens a phase wrote: the prompt tokens it computed (not served from the cache; the
    handoff judge's reads included) and the reply tokens it generated."""
    computed = counters.get("prompt_tokens", 0) - counters.get("prompt_tokens_cached", 0)
    return computed + counters.get("generation_tokens", 0)


def _phases(runs: list[dict]) -> list[_Phase]:
    phases = []
    for checkpoint, level in enumerate(sorted({run["level"] for run in runs})):
        opened = next(r for r in runs if r["level"] == level and r["part"] == "open")
        back = next(r for r in runs if r["level"] == level and r["part"] == "return")
        phases.append(_Phase(checkpoint, level, opened, back))
    return phases


def _costs(phases: list[_Phase], prefix: int, per_return: int) -> _Costs:
    opened_total = sum(len({r["conversation"] for r in o["records"]}) for _, _, o, _ in phases)
    written = sum(_written(o["engine_counters"]) for _, _, o, _ in phases)
    histories = [r["prompt_tokens"] - prefix for _, _, _, b in phases for r in b["records"]]
    # What a return writes beyond the history it finds again (or computes again, when it missed).
    returns = [
        (
            _written(b["engine_counters"])
            - sum(r["cacheable_tokens"] - r["cached_tokens"] for r in b["records"])
        )
        / max(1, len(b["records"]))
        for _, _, _, b in phases
    ]
    return _Costs(
        per_return=per_return,
        per_conversation=round(written / opened_total) if opened_total else None,
        history=round(mean(histories)) if histories else 0,
        per_return_written=round(mean(returns)) if returns else 0,
    )


def _level(phase: _Phase, costs: _Costs, prefix_blocks: int) -> dict:
    """One checkpoint: its returning customers' hits, and what the cache took in since they left
    (`kv_tokens_since`; `equivalent_conversations`: the same in opened conversations, as if nobody
    had come back in between)."""
    checkpoint, level, opened, back = phase
    returning = figures(back)
    cached, cacheable = returning.get("cached_tokens", 0), returning.get("cacheable_tokens", 0)
    own = cacheable - prefix_blocks * returning["requests"]
    opened_after = max(0, level - (checkpoint + 1) * costs.per_return)
    returned_before = checkpoint * costs.per_return
    since = opened_after * (costs.per_conversation or 0) + returned_before * (
        costs.history + costs.per_return_written
    )
    return {
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
        "prompt_tokens_mean": round(returning.get("prompt_tokens", 0) / max(1, returning["requests"]), 1),
        "opened_after_them": opened_after,
        "returned_before_them": returned_before,
        "kv_tokens_since": since,
        "equivalent_conversations": round(costs.per_return + since / costs.per_conversation, 1)
        if costs.per_conversation
        else None,
        "open_total_s": round(opened["total_s"], 1),
        "open_ttft_ms_p50": figures(opened).get("ttft_ms_p50"),
        "preemptions": opened["engine_counters"].get("preemptions", 0),
        "peak_kv_cache_usage": opened["peak_kv_cache_usage"],
        "load_avg_1m_at_start": round(opened["load_avg_1m_at_start"], 2),
    }


def _kept_and_fall(levels: list[dict]) -> tuple[dict | None, dict | None]:
    """The last checkpoint whose returning customers were kept (at least CAPACITY_HIT of their own
    history, beyond the always-warm bot prefix, came back), and the first whose were not."""
    hits = [row for row in levels if row["history_hit_rate"] is not None]
    fall = next((row for row in hits if row["history_hit_rate"] < CAPACITY_HIT), None)
    kept = [row for row in hits if fall is None or row["conversations"] < fall["conversations"]]
    return (kept[-1] if kept else None), fall


def capacity_results(results: list[dict]) -> dict:
    """Each KV tier setting's run (`ways.off`, `ways.on`), and with both, how the tier held up
    where the cache alone had let go (`tier`)."""
    ways = {result.get("kv_tier") or "off": capacity_way(result) for result in results}
    section: dict = {"ways": ways}
    if "off" in ways and "on" in ways:
        section["tier"] = tier_beyond_memory(ways["off"], ways["on"])
    return section


def tier_beyond_memory(off: dict, on: dict) -> dict:
    """With the tier on, the returning customers at twice the live conversations where the
    cache alone let go (or the most measured): their history hit rate, and their first-token
    p50 against the warm case's (the cache alone, before its fall-off)."""
    fall = off["fall_off_at"]
    warm = [row["ttft_ms_p50"] for row in off["levels"] if fall is None or row["conversations"] < fall]
    beyond = [row for row in on["levels"] if fall is not None and row["conversations"] >= 2 * fall]
    row = beyond[0] if beyond else (on["levels"][-1] if on["levels"] else None)
    warm_ttft = median(warm) if warm else None
    return {
        "off_fall_off_at": fall,
        "at_conversations": row["conversations"] if row else None,
        "twice_the_fall_off_reached": bool(beyond),
        "history_hit_rate": row["history_hit_rate"] if row else None,
        "ttft_ms_p50": row["ttft_ms_p50"] if row else None,
        "warm_ttft_ms_p50": warm_ttft,
        "ttft_vs_warm": round(row["ttft_ms_p50"] / warm_ttft, 2) if row and warm_ttft else None,
    }


def capacity_way(result: dict) -> dict:
    """One run: returning customers' cached share and first-token time against live
    conversations per checkpoint (`levels`), the prediction from the counters, the fall-off."""
    runs = [run for run in result["runs"] if run["scenario"] == "capacity"]
    log = result.get("engine_log", {})
    block = result["block_size"]
    prefix = result["prefix_tokens"].get(BOT, 0)
    prefix_blocks = prefix // block * block  # always in the cache: every turn uses them
    plan = result.get("capacity_plan") or {}
    phases = _phases(runs)
    costs = _costs(phases, prefix, plan.get("returning", 1))
    levels = [_level(phase, costs, prefix_blocks) for phase in phases]
    kv_tokens, fixed = log.get("kv_cache_tokens"), log.get("fixed_tokens")
    room = (kv_tokens - (fixed or 0)) if kv_tokens else None
    kept, fall = _kept_and_fall(levels)
    return {
        "way": "app",
        "kv_tier": result.get("kv_tier") or "off",
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
        "kv_tokens_per_conversation": costs.per_conversation,
        "history_tokens": costs.history,
        "kv_tokens_per_return": costs.per_return_written,
        "predicted_conversations": costs.predicted(room),
        "hit_threshold": CAPACITY_HIT,
        "last_level_kept": kept["conversations"] if kept else None,
        "last_level_kept_equivalent": kept["equivalent_conversations"] if kept else None,
        "fall_off_at": fall["conversations"] if fall else None,
        "fall_off_at_equivalent": fall["equivalent_conversations"] if fall else None,
        "levels": levels,
        "engine_load_s": round(result["engine_load_s"], 1),
    }
