"""Peak memory while a workload runs: the engine's process tree RSS and KV cache use."""

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable

import httpx
import psutil


def _samples(text: str, name: str) -> list[float]:
    """Every sample of the metric `name` in Prometheus text, whatever its labels."""
    pattern = rf"^{re.escape(name)}(?:\{{[^}}]*\}})? ([0-9.eE+-]+)$"
    return [float(v) for v in re.findall(pattern, text, re.MULTILINE)]


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants (vLLM runs its engine core apart)."""
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            total += process.memory_info().rss
    return total


def metrics_kv_reader(client: httpx.AsyncClient) -> Callable[[], Awaitable[float | None]]:
    """KV cache use (0..1) from a server's Prometheus /metrics."""

    async def read() -> float | None:
        response = await client.get("/metrics")
        found = _samples(response.text, "vllm:kv_cache_usage_perc") if response.status_code == 200 else []
        return max(found) if found else None

    return read


def metrics_drafts_reader(client: httpx.AsyncClient) -> Callable[[], Awaitable[tuple[int, int]]]:
    """Speculative decoding's draft tokens and accepted tokens so far, from a server's /metrics."""

    async def read() -> tuple[int, int]:
        text = (await client.get("/metrics")).text
        drafted = sum(_samples(text, "vllm:spec_decode_num_draft_tokens_total"))
        accepted = sum(_samples(text, "vllm:spec_decode_num_accepted_tokens_total"))
        return int(drafted), int(accepted)

    return read


# vLLM's counters of what its engine computed, summed over their labels.
ENGINE_COUNTERS = {
    "prompt_tokens": "vllm:prompt_tokens_total",
    "prompt_tokens_cached": "vllm:prompt_tokens_cached_total",
    "generation_tokens": "vllm:generation_tokens_total",
    "prefix_cache_queries": "vllm:prefix_cache_queries_total",
    "prefix_cache_hits": "vllm:prefix_cache_hits_total",
    "preemptions": "vllm:num_preemptions_total",
}


def metrics_counters_reader(client: httpx.AsyncClient) -> Callable[[], Awaitable[dict[str, int]]]:
    """vLLM's engine counters so far (`ENGINE_COUNTERS`), from a server's /metrics."""

    async def read() -> dict[str, int]:
        text = (await client.get("/metrics")).text
        return {key: int(sum(_samples(text, name))) for key, name in ENGINE_COUNTERS.items()}

    return read


class Peaks:
    """Samples in the background until stopped; `as_dict` gives the maxima seen. Once a second:
    a server's Prometheus text is long, and reading it four times a second took an eighth of
    the app process's samples under the article burst (a py-spy profile, docs/benchmarks.md)."""

    def __init__(self, pid: int, kv_usage: Callable[[], Awaitable[float | None]], interval_s: float = 1.0):
        self.pid, self.kv_usage, self.interval_s = pid, kv_usage, interval_s
        self.rss = 0
        self.kv: float | None = None
        self._task: asyncio.Task | None = None

    async def _sample(self) -> None:
        while True:
            self.rss = max(self.rss, await asyncio.to_thread(tree_rss, self.pid))
            with contextlib.suppress(Exception):  # a busy server may miss one sample
                kv = await self.kv_usage()
                if kv is not None:
                    self.kv = max(self.kv or 0.0, kv)
            await asyncio.sleep(self.interval_s)

    async def __aenter__(self) -> "Peaks":
        self.rss = await asyncio.to_thread(tree_rss, self.pid)
        self._task = asyncio.create_task(self._sample())
        return self

    async def __aexit__(self, *_exc) -> None:
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def as_dict(self) -> dict:
        return {
            "peak_rss_mib": round(self.rss / (1 << 20), 1),
            "peak_kv_cache_usage": None if self.kv is None else round(self.kv, 4),
        }
