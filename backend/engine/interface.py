"""What the app asks of an engine, whichever one runs it (embedded vLLM or remote replicas).

An engine streams `TokenDelta`s and ends every stream with one `GenerationResult`; both are
frozen. Nothing here imports vLLM.
"""

import asyncio
import dataclasses
import math
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol


class EngineUnavailable(RuntimeError):
    """The engine is not started, still loading, or has died."""


@dataclass(frozen=True)
class TokenDelta:
    """New text and the token ids that produced it."""

    text: str
    token_ids: list[int]


@dataclass(frozen=True)
class GenerationResult:
    """The whole reply and what it cost; the last item of every stream."""

    text: str
    token_ids: list[int]
    # "stop" (end-of-turn token), "length" (max_tokens), "interrupted" (a person took over) or
    # "doubted" (stopped by a check that no continuation can pass: turns/release.py)
    finish_reason: str
    prompt_tokens: int
    cached_tokens: int
    ttft_s: float
    total_s: float


# How many of the likeliest next tokens a label read asks for: vLLM's default cap (`max_logprobs`).
# vLLM's `logprob_token_ids` (named tokens' log-probabilities) returns nothing while speculative
# decoding is on; the top tokens are reported with or without it.
LABEL_TOP_K = 20


@dataclass(frozen=True)
class LabelRead:
    """The model's log-probabilities for a few chosen next tokens (labels), after a prompt."""

    # One per label, in the order asked, over the whole vocabulary; -inf for a label that is
    # not among the LABEL_TOP_K likeliest tokens (too unlikely to count).
    logprobs: tuple[float, ...]
    prompt_tokens: int
    cached_tokens: int
    seconds: float


def label_logprobs(top: Mapping[int, float], labels: Sequence[int]) -> tuple[float, ...]:
    """The labels' log-probabilities from the likeliest tokens' (`top`, token id -> logprob)."""
    return tuple(top.get(label, -math.inf) for label in labels)


class SampleProgress:
    """The samples of one request as they are written: each one's pieces of text with their
    token counts, and whether it ended. An engine that writes them whole leaves it empty."""

    def __init__(self, n: int):
        self.pieces: list[list[tuple[str, int]]] = [[] for _ in range(n)]
        self.ended = [False] * n
        self.changed = asyncio.Event()  # set on every addition; a reader clears it

    def add(self, index: int, text: str, tokens: int, ended: bool) -> None:
        self.pieces[index].append((text, tokens))
        self.ended[index] = self.ended[index] or ended
        self.changed.set()

    def tokens(self, index: int) -> int:
        return sum(tokens for _, tokens in self.pieces[index])

    def reached(self, tokens: int) -> bool:
        """Every sample has at least `tokens` tokens, or has ended."""
        return all(ended or self.tokens(i) >= tokens for i, ended in enumerate(self.ended))

    @property
    def empty(self) -> bool:
        return not any(self.pieces)

    def texts(self, within: int | None = None) -> list[str]:
        """Each sample's text, or as much of it as its first `within` tokens wrote."""
        return ["".join(_within(pieces, within)) for pieces in self.pieces]

    def ended_within(self, within: int | None = None) -> list[bool]:
        """Whether each sample ended, within its first `within` tokens."""
        return [ended and (within is None or self.tokens(i) <= within) for i, ended in enumerate(self.ended)]


def _within(pieces: list[tuple[str, int]], tokens: int | None) -> list[str]:
    texts, count = [], 0
    for text, n in pieces:
        if tokens is not None and count + n > tokens:
            break
        texts.append(text)
        count += n
    return texts


class Engine(Protocol):
    block_size: int
    max_model_len: int

    def stream(
        self,
        prompt_ids: Sequence[int],
        *,
        max_tokens: int,
        request_id: str | None = None,
        cache_salt: str | None = None,
        affinity_key: str | None = None,
    ) -> AsyncGenerator[TokenDelta | GenerationResult, None]:
        """Closing the stream early aborts the request. Requests share cached blocks only with
        requests of the same `cache_salt`.

        `affinity_key` names the conversation: a remote engine sends it as the session key a
        router keeps the conversation's requests together by (None: no conversation).
        """
        ...

    async def read_labels(
        self,
        prompt_ids: Sequence[int],
        labels: Sequence[int],
        *,
        request_id: str | None = None,
        cache_salt: str | None = None,
        affinity_key: str | None = None,
    ) -> LabelRead:
        """How likely each of `labels` is as the next token: a one-step, greedy request."""
        ...

    async def sample(
        self,
        prompt_ids: Sequence[int],
        *,
        n: int,
        max_tokens: int,
        temperature: float,
        seed: int,
        request_id: str | None = None,
        cache_salt: str | None = None,
        affinity_key: str | None = None,
        enough: Callable[[], int] | None = None,
        progress: SampleProgress | None = None,
    ) -> list[str]:
        """`n` replies sampled at `temperature` from one request: the prompt is prefilled once
        (its cached blocks shared). The same seed and prompt give the same replies.
        `enough`, read as they are written: the tokens of each sample that are enough; once
        every sample has that many or has ended, the rest is not written. `progress`, if
        given, is filled as they are written (an engine that cannot read them as written
        may write them whole and leave it empty)."""
        ...

    @property
    def is_dead(self) -> bool:
        """True once the engine can serve no more requests until it is started again."""
        ...

    def shutdown(self) -> None: ...


@dataclass
class StreamAccumulator:
    """Collects a streamed reply into its `GenerationResult`, timed from its creation."""

    prompt_tokens: int
    clock: Callable[[], float] = time.perf_counter
    cached_tokens: int = 0
    finish_reason: str = "stop"
    started: float = field(init=False)
    first_token_at: float | None = field(init=False, default=None)
    text_parts: list[str] = field(init=False, default_factory=list)
    token_ids: list[int] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def add(self, text: str, token_ids: Sequence[int]) -> TokenDelta | None:
        """Records new output; the delta to pass on, or None when there is nothing new."""
        if token_ids and self.first_token_at is None:
            self.first_token_at = self.clock()
        if not text and not token_ids:
            return None
        self.text_parts.append(text)
        self.token_ids.extend(token_ids)
        return TokenDelta(text, list(token_ids))

    def result(self) -> GenerationResult:
        finished = self.clock()
        return GenerationResult(
            text="".join(self.text_parts),
            token_ids=list(self.token_ids),
            finish_reason=self.finish_reason,
            prompt_tokens=self.prompt_tokens,
            cached_tokens=self.cached_tokens,
            ttft_s=(self.first_token_at or finished) - self.started,
            total_s=finished - self.started,
        )

    def cut_short(self, reason: str) -> GenerationResult:
        """What was said before the reply was stopped for `reason`, timed up to now."""
        return dataclasses.replace(self.result(), finish_reason=reason)

    def interrupted(self) -> GenerationResult:
        """What was said before the reply was stopped; its timings mean nothing, so none are given."""
        return GenerationResult(
            "".join(self.text_parts), list(self.token_ids), "interrupted", self.prompt_tokens, 0, 0.0, 0.0
        )


async def warm(
    engine: Engine,
    token_ids: Sequence[int],
    label: str,
    *,
    cache_salt: str | None,
    affinity_key: str | None = None,
) -> int:
    """Run `token_ids` once (one output token) so their full blocks are in the prefix cache;
    how many of them were found cached already (in the engine's memory or its KV tier)."""
    request_id = f"{label}-{uuid.uuid4().hex}"
    stream = engine.stream(
        token_ids, max_tokens=1, request_id=request_id, cache_salt=cache_salt, affinity_key=affinity_key
    )
    cached = 0
    async for item in stream:
        if isinstance(item, GenerationResult):
            cached = item.cached_tokens
    return cached
