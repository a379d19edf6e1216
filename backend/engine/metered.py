"""What each kind of engine request costs, in /metrics: requests, prompt tokens and of them
those computed (not found in the prefix cache), tokens written, and seconds, by kind.

The kind is the request id's first word, as the app names its requests: `reply` (a bot
reply, and its second try), each judge by its name (`handoff`, `unanswered`, `supported`,
`opening`, `line`), `sources`, `samples`, and the prefixes warmed (`warmup`, `reload`,
`handback`). Under a burst, these
counters say where the engine's time goes: `prefixdesk bench` reads them per turn.
"""

import contextlib
import time
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from prometheus_client import Counter

from backend.engine.interface import Engine, GenerationResult, LabelRead, TokenDelta

requests = Counter("prefixdesk_engine_requests", "Engine requests, by kind", ["kind"])
prompt_tokens = Counter("prefixdesk_engine_prompt_tokens", "Prompt tokens of engine requests", ["kind"])
computed_tokens = Counter(
    "prefixdesk_engine_computed_tokens", "Prompt tokens not found in the prefix cache", ["kind"]
)
written_tokens = Counter(
    "prefixdesk_engine_written_tokens", "Tokens the engine wrote (samples: at most)", ["kind"]
)
seconds = Counter("prefixdesk_engine_request_seconds", "Time from request to last token", ["kind"])


def kind_of(request_id: str | None) -> str:
    """ "reply-41-again" -> "reply"; an unnamed request is "other"."""
    return (request_id or "other").split("-", 1)[0] or "other"


def _count(kind: str, prompt: int, cached: int, written: int, took_s: float) -> None:
    requests.labels(kind).inc()
    prompt_tokens.labels(kind).inc(prompt)
    computed_tokens.labels(kind).inc(max(0, prompt - cached))
    written_tokens.labels(kind).inc(written)
    seconds.labels(kind).inc(took_s)


class MeteredEngine:
    """An engine whose every finished request is counted by kind."""

    def __init__(self, inner: Engine):
        self.inner = inner
        self.block_size = inner.block_size
        self.max_model_len = inner.max_model_len

    def __getattr__(self, name: str) -> Any:  # what a particular engine has besides (its stats)
        return getattr(self.inner, name)

    async def stream(
        self, prompt_ids: Sequence[int], **options: Any
    ) -> AsyncGenerator[TokenDelta | GenerationResult, None]:
        # Closing this stream closes the engine's, which aborts its request.
        async with contextlib.aclosing(self.inner.stream(prompt_ids, **options)) as items:
            async for item in items:
                if isinstance(item, GenerationResult) and item.finish_reason != "interrupted":
                    kind = kind_of(options.get("request_id"))
                    _count(kind, item.prompt_tokens, item.cached_tokens, len(item.token_ids), item.total_s)
                yield item

    async def read_labels(
        self, prompt_ids: Sequence[int], labels: Sequence[int], **options: Any
    ) -> LabelRead:
        read = await self.inner.read_labels(prompt_ids, labels, **options)
        _count(kind_of(options.get("request_id")), read.prompt_tokens, read.cached_tokens, 1, read.seconds)
        return read

    async def sample(self, prompt_ids: Sequence[int], **options: Any) -> list[str]:
        # The prompt is the reply's own, cached whole by then. The samples' tokens are read
        # from their progress where the engine fills it; else n times the `max_tokens` asked,
        # an upper bound.
        started = time.perf_counter()
        texts = await self.inner.sample(prompt_ids, **options)
        took = time.perf_counter() - started
        progress = options.get("progress")
        if progress is not None and not progress.empty:
            written = sum(progress.tokens(index) for index in range(len(texts)))
        else:
            written = options.get("n", 1) * options.get("max_tokens", 0)
        _count(kind_of(options.get("request_id")), len(prompt_ids), len(prompt_ids), written, took)
        return texts

    @property
    def is_dead(self) -> bool:
        return self.inner.is_dead

    def shutdown(self) -> None:
        self.inner.shutdown()
