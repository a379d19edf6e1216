"""The engine interface over one OpenAI-compatible URL: vLLM's router in front of `vllm serve`
replicas (docs/scaling.md), or a single replica.

- Where a request goes is the router's choice: every request of a conversation carries its id
  as the session key (remote.py), so the router keeps it where its history is cached.
- The URL's health path is read every few seconds. Once it has failed `MISSES_BEFORE_DEAD`
  times in a row, the engine is dead: the supervisor starts a new one, which waits for the URL
  and warms every bot's prefix again. One slow answer under load is not a death: that would
  fail the turns in flight and warm every bot again for nothing. A request that cannot reach
  the URL has it checked at once (one check at a time, however many requests failed).
- A failed request fails its turn (the customer's message is kept): the router has already
  retried it where it could.
"""

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable, Sequence

from backend.engine.interface import EngineUnavailable, GenerationResult, LabelRead, TokenDelta
from backend.engine.remote import Replica, ReplicaUnavailable

logger = logging.getLogger(__name__)

MISSES_BEFORE_DEAD = 3  # failed health checks in a row


class RemoteEngine:
    def __init__(
        self, replica: Replica, *, block_size: int, max_model_len: int, health_interval_s: float = 2.0
    ):
        self.replica = replica
        self.block_size = block_size
        self.max_model_len = max_model_len
        self.health_interval_s = health_interval_s
        self._healthy = False
        self._misses = 0  # failed health checks since the last one that passed
        self._checking = asyncio.Lock()
        self._closed = False
        self._health_task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str:
        return self.replica.url

    async def wait_until_ready(self, timeout_s: float) -> None:
        """Check the URL until it answers; then keep checking in the background."""
        loop = asyncio.get_running_loop()
        deadline, next_word = loop.time() + timeout_s, loop.time()
        while not await self.replica.probe():
            if loop.time() > deadline:
                raise EngineUnavailable(
                    f"PREFIXDESK_ENGINE_URL {self.url} did not answer {self.replica.health_path} within "
                    f"{timeout_s:.0f} s (PREFIXDESK_ENGINE_START_TIMEOUT_S): {self.replica.last_error}"
                )
            if loop.time() >= next_word:  # replicas take minutes to load: say what is awaited
                logger.warning("waiting for PREFIXDESK_ENGINE_URL %s: %s", self.url, self.replica.last_error)
                next_word = loop.time() + 30
            await asyncio.sleep(min(self.health_interval_s, 1.0))
        if self.replica.max_model_len:
            self.max_model_len = min(self.max_model_len, self.replica.max_model_len)
        self._healthy = True
        self._health_task = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        while self._healthy:
            await asyncio.sleep(self.health_interval_s)
            await self.check_health()

    async def check_health(self) -> None:
        if not self._healthy or self._checking.locked():  # a check under way answers for this one
            return
        async with self._checking:
            if await self.replica.probe():
                self._misses = 0
                return
            self._misses += 1
            if self._misses < MISSES_BEFORE_DEAD:
                logger.info("%s missed a health check: %s", self.url, self.replica.last_error)
                return
            self._healthy = False
            logger.warning(
                "%s stopped answering %s (%d checks in a row): %s",
                self.url,
                self.replica.health_path,
                self._misses,
                self.replica.last_error,
            )

    @property
    def is_dead(self) -> bool:
        return self._closed or not self._healthy

    def shutdown(self) -> None:
        self._closed = True
        if self._health_task is not None:
            self._health_task.cancel()
        with contextlib.suppress(RuntimeError):  # no running loop: the process is ending anyway
            asyncio.get_running_loop().create_task(self.replica.aclose())

    def _unavailable(self, error: ReplicaUnavailable) -> EngineUnavailable:
        """The request's failure, as the engine's; the URL is checked at once (gone or not)."""
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().create_task(self.check_health())
        return EngineUnavailable(str(error))

    async def stream(
        self,
        prompt_ids: Sequence[int],
        *,
        max_tokens: int,
        request_id: str | None = None,
        cache_salt: str | None = None,
        affinity_key: str | None = None,
    ) -> AsyncGenerator[TokenDelta | GenerationResult, None]:
        if self.is_dead:
            raise EngineUnavailable(f"{self.url} is not answering")
        options = {"request_id": request_id, "cache_salt": cache_salt, "session": affinity_key}
        try:
            # Closed at once when the caller stops reading: the replica aborts the request.
            async with contextlib.aclosing(
                self.replica.stream(prompt_ids, max_tokens=max_tokens, **options)
            ) as items:
                async for item in items:
                    yield item
        except ReplicaUnavailable as error:
            raise self._unavailable(error) from error

    async def read_labels(
        self,
        prompt_ids: Sequence[int],
        labels: Sequence[int],
        *,
        request_id: str | None = None,
        cache_salt: str | None = None,
        affinity_key: str | None = None,
    ) -> LabelRead:
        if self.is_dead:
            raise EngineUnavailable(f"{self.url} is not answering")
        try:
            return await self.replica.read_labels(
                prompt_ids, labels, request_id=request_id, cache_salt=cache_salt, session=affinity_key
            )
        except ReplicaUnavailable as error:
            raise self._unavailable(error) from error

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
        progress: object = None,
    ) -> list[str]:
        """One request that returns the samples whole (`enough` and `progress` are not read)."""
        if self.is_dead:
            raise EngineUnavailable(f"{self.url} is not answering")
        options = {"request_id": request_id, "cache_salt": cache_salt, "session": affinity_key}
        try:
            return await self.replica.sample(
                prompt_ids, n=n, max_tokens=max_tokens, temperature=temperature, seed=seed, **options
            )
        except ReplicaUnavailable as error:
            raise self._unavailable(error) from error
