"""The admin figures' shapes, as the API returns them (and its OpenAPI schema shows them)."""

from pydantic import BaseModel, Field


class Quantiles(BaseModel):
    """Milliseconds; None when no reply was measured."""

    p50: float | None
    p95: float | None
    p99: float | None


class ReplyFigures(BaseModel):
    """The bot's replies that ended in the window (or bucket), as the app measured them; a reply
    a human interrupted, or one dropped for a handoff, is not counted."""

    replies: int = Field(description="Bot replies that ended, complete or failed.")
    errors: int = Field(description="Of them, failed (cut off by the engine or an error).")
    replies_per_s: float = Field(
        description="Replies that ended, per second of the window: not HTTP requests."
    )
    prompt_tokens: int = Field(description="Prompt tokens of the complete replies.")
    cached_tokens: int = Field(description="Of them, served from vLLM's prefix cache.")
    hit_rate: float | None = Field(
        description="cached_tokens / prompt_tokens: the share of the replies' prompts not computed again."
    )
    reply_tokens_per_s: float | None = Field(
        description="Reply tokens after the first, per second of streaming."
    )
    ttft_ms: Quantiles = Field(
        description="From the reply's request to the engine to its first token (before any judge's hold)."
    )
    total_ms: Quantiles = Field(
        description="From the reply's request to the engine to its last token (before the reply checks)."
    )


class EngineFigures(BaseModel):
    """vLLM's own counters over the window: every request its engines ran (bot replies, the
    yes/no judges, prefix warm-ups), and the mean of the gauges sampled every 2 s per engine."""

    prefix_cache_queries: int = Field(description="Prompt tokens vLLM looked up in its prefix cache.")
    prefix_cache_hits: int = Field(description="Of them, found there.")
    hit_rate: float | None = Field(description="vLLM's prefix-cache hit rate: hits / queries.")
    draft_tokens: int = Field(description="Speculative decoding: tokens drafted.")
    accepted_tokens: int = Field(description="Of them, kept by the model.")
    draft_acceptance_rate: float | None
    samples: int = Field(description="Engine samples taken (one per engine process every 2 s).")
    kv_cache_usage_mean: float | None = Field(description="Mean share of KV cache blocks in use.")
    running_mean: float | None = Field(description="Mean requests running, per engine.")
    waiting_mean: float | None = Field(description="Mean requests waiting, per engine.")


class EngineNow(BaseModel):
    """The engines' gauges as last published (within 15 s), summed over processes."""

    processes: int
    kv_cache_usage: float | None = Field(description="The fullest engine's share of KV cache blocks in use.")
    running: int
    waiting: int


class SeriesPoint(ReplyFigures):
    t: int = Field(description="The bucket's start, in Unix seconds.")
    engine: EngineFigures


class MetricsSummary(BaseModel):
    window_s: int
    step_s: int = Field(description="The series' bucket length in seconds.")
    now: int
    totals: ReplyFigures
    per_bot: dict[str, ReplyFigures]
    series: list[SeriesPoint]
    engine: EngineFigures
    engine_now: EngineNow
    active_conversations: int = Field(
        description="Conversations with a bot reply started or an agent reply sent in the window."
    )
    checks_shed: dict[str, int] = Field(
        default_factory=dict,
        description="Optional reply checks dropped under load in the window, by check "
        "(samples, supported, sources, unanswered: the order they are shed in).",
    )
