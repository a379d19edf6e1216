"""vLLM's AsyncLLM, embedded in the app's process, behind the `Engine` interface."""

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Sequence
from pathlib import Path
from typing import Any

from backend.config import Settings
from backend.engine import preloaded_processes
from backend.engine.interface import (
    LABEL_TOP_K,
    EngineUnavailable,
    GenerationResult,
    LabelRead,
    SampleProgress,
    StreamAccumulator,
    TokenDelta,
    label_logprobs,
)
from backend.engine.stats import EngineStats, stat_logger_for
from backend.engine.vllm_options import async_engine_args, engine_environment

logger = logging.getLogger(__name__)


class VllmEngine:
    """One AsyncLLM; `start` loads the model, `stream` runs one request."""

    def __init__(self, llm: Any, settings: Settings, stats: EngineStats):
        self._llm = llm
        self._temperature = settings.temperature
        self.block_size = settings.block_size
        self.max_model_len = settings.max_model_len or llm.model_config.max_model_len  # unset: the model's
        self.stats = stats  # filled by the stat logger vLLM calls for this engine

    @classmethod
    async def start(cls, settings: Settings, model_dir: Path) -> "VllmEngine":
        # Loading blocks for a minute or more; keep the event loop (and /healthz) answering.
        return await asyncio.to_thread(cls.load, settings, model_dir)

    @staticmethod
    def prepare(settings: Settings, model_dir: Path) -> None:
        """What precedes the engine's load: its environment, the core's fork server, and
        vLLM's import (seconds; blocking). Idempotent."""
        for name, value in engine_environment(settings).items():
            os.environ.setdefault(name, value)
        preloaded_processes.start_server(model_dir)  # imports vLLM beside this process, which does the same
        import vllm.v1.engine.async_llm  # noqa: F401

        preloaded_processes.install()

    @classmethod
    def load(cls, settings: Settings, model_dir: Path) -> "VllmEngine":
        """Start vLLM and return once it takes requests (blocking; `start` runs it in a thread)."""
        cls.prepare(settings, model_dir)
        from vllm.v1.engine.async_llm import AsyncLLM

        stats = EngineStats()
        args = async_engine_args(settings, model_dir)
        llm = AsyncLLM.from_engine_args(args, stat_loggers=[stat_logger_for(stats)])
        return cls(llm, settings, stats)

    def shutdown(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None:
            llm.shutdown()
            # vLLM shuts an AsyncLLM down again when it is collected; at interpreter exit that
            # second call finds its module's globals gone and prints a TypeError.
            llm.shutdown = _already_shut_down

    @property
    def is_dead(self) -> bool:
        return self._llm is None or bool(self._llm.errored)

    async def stream(
        self,
        prompt_ids: Sequence[int],
        *,
        max_tokens: int,
        request_id: str | None = None,
        cache_salt: str | None = None,
        affinity_key: str | None = None,  # one engine: every request shares its cache
    ) -> AsyncGenerator[TokenDelta | GenerationResult, None]:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        prompt = self._prompt(prompt_ids, cache_salt)
        params = SamplingParams(
            max_tokens=max_tokens,
            temperature=self._temperature,
            output_kind=RequestOutputKind.DELTA,
            skip_special_tokens=True,
        )
        request_id = request_id or uuid.uuid4().hex
        reply = StreamAccumulator(len(prompt_ids))
        try:
            async for output in self._llm.generate(prompt, params, request_id):
                completion = output.outputs[0]
                if output.num_cached_tokens is not None:
                    reply.cached_tokens = output.num_cached_tokens
                if delta := reply.add(completion.text, completion.token_ids):
                    yield delta
                if completion.finish_reason:
                    reply.finish_reason = completion.finish_reason
        except Exception as error:
            if self.is_dead:
                raise EngineUnavailable(f"the model engine failed: {error}") from error
            raise
        except GeneratorExit:
            # The caller stopped reading (an agent took over): free the engine's slot now.
            if not self.is_dead:
                await self._llm.abort(request_id)
            raise
        yield reply.result()

    async def read_labels(
        self,
        prompt_ids: Sequence[int],
        labels: Sequence[int],
        *,
        request_id: str | None = None,
        cache_salt: str | None = None,
        affinity_key: str | None = None,
    ) -> LabelRead:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        prompt = self._prompt(prompt_ids, cache_salt)
        # Greedy and one step, so the answer is the same on every run.
        params = SamplingParams(
            max_tokens=1,
            temperature=0.0,
            logprobs=LABEL_TOP_K,
            output_kind=RequestOutputKind.FINAL_ONLY,
        )
        request_id = request_id or uuid.uuid4().hex
        started = time.perf_counter()
        final = None
        try:
            async for output in self._llm.generate(prompt, params, request_id):
                final = output
        except Exception as error:
            if self.is_dead:
                raise EngineUnavailable(f"the model engine failed: {error}") from error
            raise  # a cancelled read is aborted by AsyncLLM.generate itself
        if final is None or not final.outputs or not final.outputs[0].logprobs:
            raise RuntimeError(f"request {request_id} returned no log-probabilities")
        top = {token: entry.logprob for token, entry in final.outputs[0].logprobs[0].items()}
        return LabelRead(
            label_logprobs(top, labels),
            len(prompt_ids),
            final.num_cached_tokens or 0,
            time.perf_counter() - started,
        )

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
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        prompt = self._prompt(prompt_ids, cache_salt)
        params = SamplingParams(
            n=n,
            max_tokens=max_tokens,
            temperature=temperature,
            seed=seed,
            skip_special_tokens=True,
            output_kind=RequestOutputKind.DELTA,  # read as written, to stop once they are enough
        )
        written = progress if progress is not None else SampleProgress(n)
        outputs = self._llm.generate(prompt, params, request_id or uuid.uuid4().hex)
        try:
            async with contextlib.aclosing(outputs):  # leaving early aborts the request
                async for output in outputs:
                    for sample in output.outputs:
                        ended = sample.finish_reason is not None
                        written.add(sample.index, sample.text, len(sample.token_ids), ended)
                    if written.reached(enough() if enough is not None else max_tokens):
                        break
        except Exception as error:
            if self.is_dead:
                raise EngineUnavailable(f"the model engine failed: {error}") from error
            raise  # a cancelled request is aborted by AsyncLLM.generate itself
        return written.texts()

    def _prompt(self, prompt_ids: Sequence[int], cache_salt: str | None) -> Any:
        """The request's prompt, as token ids with the bot's cache salt; refused if the engine died."""
        from vllm.inputs import TokensPrompt

        if self.is_dead:
            raise EngineUnavailable("the model engine has stopped")
        prompt = TokensPrompt(prompt_token_ids=list(prompt_ids))
        if cache_salt:
            prompt["cache_salt"] = cache_salt
        return prompt


def _already_shut_down(timeout: float | None = None) -> None:
    return None
