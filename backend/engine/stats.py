"""vLLM's own scheduler figures for one engine: the cross-check of what the app measures.

vLLM's Prometheus metrics live in a process-wide registry that a second engine in the same
process takes over; this logger is attached to one engine and counts for it alone.
"""

from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class EngineStats:
    kv_cache_usage: float = 0.0  # share of KV cache blocks in use
    running: int = 0
    waiting: int = 0
    prefix_cache_queries: int = 0  # prompt tokens looked up in the prefix cache, since start
    prefix_cache_hits: int = 0  # of which found there
    draft_tokens: int = 0  # speculative decoding: tokens proposed, since start
    accepted_tokens: int = 0  # of which the model's own choice, so kept

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def stat_logger_for(stats: EngineStats) -> type:
    """A vLLM stat-logger class that writes into `stats` (vLLM instantiates it per engine)."""
    from vllm.v1.metrics.loggers import StatLoggerBase

    class EngineStatsLogger(StatLoggerBase):  # type: ignore[misc]  # vLLM's class is untyped here
        def __init__(self, vllm_config: Any, engine_index: int = 0):
            pass

        def record(
            self, scheduler_stats: Any, iteration_stats: Any, mm_cache_stats: Any = None, engine_idx: int = 0
        ) -> None:
            if scheduler_stats is None:
                return
            stats.running = scheduler_stats.num_running_reqs
            stats.waiting = scheduler_stats.num_waiting_reqs + getattr(
                scheduler_stats, "num_skipped_waiting_reqs", 0
            )
            stats.kv_cache_usage = scheduler_stats.kv_cache_usage
            stats.prefix_cache_queries += scheduler_stats.prefix_cache_stats.queries
            stats.prefix_cache_hits += scheduler_stats.prefix_cache_stats.hits
            drafts = scheduler_stats.spec_decoding_stats
            if drafts is not None:
                stats.draft_tokens += drafts.num_draft_tokens
                stats.accepted_tokens += drafts.num_accepted_tokens

        def log_engine_initialized(self) -> None:
            pass

    return EngineStatsLogger
