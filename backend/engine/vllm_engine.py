"""vLLM's AsyncLLM, embedded in the app's process, behind a narrow streaming interface."""

import asyncio
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from backend.config import Settings
from backend.engine.stats import EngineStats, stat_logger_for

logger = logging.getLogger(__name__)

GiB = 1 << 30


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
    finish_reason: str  # "stop" (end-of-turn token) or "length" (max_tokens)
    prompt_tokens: int
    cached_tokens: int
    ttft_s: float
    total_s: float


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
    ) -> AsyncIterator[TokenDelta | GenerationResult]:
        """Requests share cached blocks only with requests of the same `cache_salt`.

        `affinity_key` names the conversation: an engine made of several replicas sends all
        requests with the same key to the replica that holds its cache (None: no preference).
        """
        ...

    @property
    def is_dead(self) -> bool:
        """True once the engine can serve no more requests until it is started again."""
        ...

    def shutdown(self) -> None: ...


def engine_args(settings: Settings, model_dir: Path):
    from vllm.engine.arg_utils import AsyncEngineArgs

    return AsyncEngineArgs(
        model=str(model_dir),
        tokenizer=str(model_dir),
        enable_prefix_caching=settings.enable_prefix_caching,
        block_size=settings.block_size,
        kv_cache_memory_bytes=int(settings.kv_cache_gib * GiB),
        max_model_len=settings.max_model_len,
        max_num_batched_tokens=settings.max_num_batched_tokens,
        max_num_seqs=settings.max_num_seqs,
        gpu_memory_utilization=settings.gpu_memory_utilization,
        tensor_parallel_size=settings.tensor_parallel_size,
        dtype=settings.dtype,
        enforce_eager=settings.enforce_eager,
        seed=settings.seed,
        disable_log_stats=False,
    )


class VllmEngine:
    """One AsyncLLM; `start` loads the model, `stream` runs one request."""

    def __init__(self, llm, settings: Settings, stats: EngineStats):
        self._llm = llm
        self._temperature = settings.temperature
        self.block_size = settings.block_size
        self.max_model_len = settings.max_model_len
        self.stats = stats  # filled by the stat logger vLLM calls for this engine

    @classmethod
    async def start(cls, settings: Settings, model_dir: Path) -> "VllmEngine":
        # The CPU build reads its KV cache size from this variable, in GiB.
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(max(1, int(settings.kv_cache_gib))))
        from vllm.v1.engine.async_llm import AsyncLLM

        args = engine_args(settings, model_dir)
        stats = EngineStats()
        # Loading blocks for a minute or more; keep the event loop (and /healthz) answering.
        llm = await asyncio.to_thread(AsyncLLM.from_engine_args, args, stat_loggers=[stat_logger_for(stats)])
        return cls(llm, settings, stats)

    def shutdown(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None:
            llm.shutdown()

    @property
    def is_dead(self) -> bool:
        return self._llm is None or self._llm.errored

    async def stream(
        self,
        prompt_ids: Sequence[int],
        *,
        max_tokens: int,
        request_id: str | None = None,
        cache_salt: str | None = None,
        affinity_key: str | None = None,  # one engine: every request shares its cache
    ) -> AsyncIterator[TokenDelta | GenerationResult]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        if self.is_dead:
            raise EngineUnavailable("the model engine has stopped")
        params = SamplingParams(
            max_tokens=max_tokens,
            temperature=self._temperature,
            output_kind=RequestOutputKind.DELTA,
            skip_special_tokens=True,
        )
        request_id = request_id or uuid.uuid4().hex
        started = time.perf_counter()
        first_token_at: float | None = None
        text_parts: list[str] = []
        token_ids: list[int] = []
        cached = 0
        finish_reason = "stop"
        try:
            async for output in self._llm.generate(
                TokensPrompt(prompt_token_ids=list(prompt_ids), cache_salt=cache_salt)
                if cache_salt
                else TokensPrompt(prompt_token_ids=list(prompt_ids)),
                params,
                request_id,
            ):
                completion = output.outputs[0]
                if completion.token_ids and first_token_at is None:
                    first_token_at = time.perf_counter()
                if output.num_cached_tokens is not None:
                    cached = output.num_cached_tokens
                text_parts.append(completion.text)
                token_ids.extend(completion.token_ids)
                if completion.text or completion.token_ids:
                    yield TokenDelta(completion.text, list(completion.token_ids))
                if completion.finish_reason:
                    finish_reason = completion.finish_reason
        except Exception as error:
            if self.is_dead:
                raise EngineUnavailable(f"the model engine failed: {error}") from error
            raise
        except GeneratorExit:
            # The caller stopped reading (an agent took over): free the engine's slot now.
            if not self.is_dead:
                await self._llm.abort(request_id)
            raise
        finished = time.perf_counter()
        yield GenerationResult(
            text="".join(text_parts),
            token_ids=token_ids,
            finish_reason=finish_reason,
            prompt_tokens=len(prompt_ids),
            cached_tokens=cached,
            ttft_s=(first_token_at or finished) - started,
            total_s=finished - started,
        )


async def warm(
    engine: Engine,
    token_ids: Sequence[int],
    label: str,
    *,
    cache_salt: str | None,
    affinity_key: str | None = None,
) -> None:
    """Run `token_ids` once (one output token) so their full blocks are in the prefix cache."""
    request_id = f"{label}-{uuid.uuid4().hex}"
    stream = engine.stream(
        token_ids, max_tokens=1, request_id=request_id, cache_salt=cache_salt, affinity_key=affinity_key
    )
    async for _ in stream:
        pass
