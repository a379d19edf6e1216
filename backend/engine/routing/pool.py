"""The engine interface over a pool of `vllm serve` replicas.

- Requests with an affinity key (a conversation) go where the router says.
- Requests without one are bot prefixes being warmed: they run on every routable replica,
  and are replayed on a replica that joins or comes back before it takes traffic.
- Health checks every few seconds take a replica out when /health fails and let it back
  in when it answers again; a request that cannot reach its replica takes it out at once.
- A replica failing before the first token: the request moves to another replica (a cache
  miss, not an error). After tokens were sent, the failure is the caller's to report.
"""

import asyncio
import contextlib
import logging
import uuid
from collections import defaultdict
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import TypeVar

from backend.engine.interface import EngineUnavailable, GenerationResult, LabelRead, TokenDelta
from backend.engine.remote import Replica, ReplicaUnavailable
from backend.engine.routing.router import Router, least_loaded

logger = logging.getLogger(__name__)

T = TypeVar("T")


class ReplicaPool:
    def __init__(
        self,
        replicas: Sequence[Replica],
        router: Router,
        *,
        block_size: int,
        max_model_len: int,
        health_interval_s: float = 2.0,
    ):
        if not replicas:
            raise ValueError("a replica pool needs at least one replica")
        self.replicas = {replica.url: replica for replica in replicas}
        self.router = router
        self.block_size = block_size
        self.max_model_len = max_model_len
        self.health_interval_s = health_interval_s
        self.healthy: set[str] = set()  # routable: answering, and warm with every known prefix
        self._inflight: dict[str, int] = defaultdict(int)  # this process's requests per replica
        self._reported: dict[str, int] = {}  # each replica's own count, from its /metrics
        self._warm: dict[str, set[str | None]] = defaultdict(set)  # cache salts warm per replica
        self._prefixes: dict[str | None, list[int]] = {}  # the latest prefix warmed per salt
        self._health_task: asyncio.Task[None] | None = None
        self._closed = False

    # -- life cycle ---------------------------------------------------------------------

    async def wait_until_ready(self, timeout_s: float) -> None:
        """Check every replica until at least one answers; then keep checking in the background."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            await self.check_health()
            if self.healthy:
                break
            if asyncio.get_running_loop().time() > deadline:
                raise EngineUnavailable(
                    f"nothing at PREFIXDESK_ENGINE_URLS answered /health within {timeout_s:.0f} s "
                    f"(PREFIXDESK_ENGINE_START_TIMEOUT_S): {', '.join(self.replicas)}"
                )
            await asyncio.sleep(min(self.health_interval_s, 1.0))
        lengths = [r.max_model_len for r in self.replicas.values() if r.max_model_len]
        if lengths:
            self.max_model_len = min(self.max_model_len, *lengths)
        self._health_task = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.health_interval_s)
            try:
                await self.check_health()
            except Exception:
                logger.exception("replica health check failed")

    async def check_health(self) -> None:
        await asyncio.gather(*(self._check(replica) for replica in self.replicas.values()))

    async def _check(self, replica: Replica) -> None:
        if not await replica.probe():
            if replica.url in self.healthy:
                self._take_out(replica.url, "its health check failed")
            return
        load = await replica.load()
        if load is not None:
            self._reported[replica.url] = load
        if replica.url not in self.healthy:
            await self._admit(replica)

    async def _admit(self, replica: Replica) -> None:
        """Warm every bot prefix on a replica that (re)joins, then let it take traffic."""
        self._warm[replica.url].clear()  # a restarted replica kept nothing
        for salt, prefix in list(self._prefixes.items()):
            try:
                await self._drain(replica, prefix, 1, f"rewarm-{uuid.uuid4().hex}", salt)
            except ReplicaUnavailable as error:
                logger.warning("replica %s is not back yet: %s", replica.url, error)
                return
        self.healthy.add(replica.url)
        logger.info("replica %s takes traffic (%d/%d)", replica.url, len(self.healthy), len(self.replicas))

    def _take_out(self, url: str, why: str) -> None:
        if url in self.healthy:
            self.healthy.discard(url)
            logger.warning("replica %s taken out: %s (%d left)", url, why, len(self.healthy))

    @property
    def is_dead(self) -> bool:
        return self._closed or not self.healthy

    def shutdown(self) -> None:
        self._closed = True
        if self._health_task is not None:
            self._health_task.cancel()
        with contextlib.suppress(RuntimeError):  # no running loop: the process is ending anyway
            loop = asyncio.get_running_loop()
            for replica in self.replicas.values():
                loop.create_task(replica.aclose())

    # -- requests -------------------------------------------------------------------------

    def loads(self) -> dict[str, int]:
        # This process knows its own requests at once; the replica's figure adds the other
        # processes' (a few seconds old).
        return {url: max(self._inflight[url], self._reported.get(url, 0)) for url in self.replicas}

    def _routable(self, exclude: set[str]) -> list[str]:
        return [url for url in self.replicas if url in self.healthy and url not in exclude]

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
            raise EngineUnavailable("no model replica is available")
        first: str | None = None
        others: list[asyncio.Task[None]] = []
        if affinity_key is None:
            # A bot prefix: every replica should hold it, so any conversation can hit it anywhere.
            self._prefixes[cache_salt] = list(prompt_ids)
            first = least_loaded(self._routable(set()), self.loads())
            others = [
                asyncio.create_task(self._warm_quietly(url, prompt_ids, max_tokens, cache_salt))
                for url in self._routable({first})
            ]
        tried: set[str] = set()
        try:
            while True:
                url = first or await self._choose(affinity_key, cache_salt, tried)
                first, sent_tokens = None, False
                try:
                    # Closed at once when the caller stops reading: the replica aborts the request.
                    async with contextlib.aclosing(
                        self._run(url, prompt_ids, max_tokens, request_id, cache_salt, affinity_key)
                    ) as items:
                        async for item in items:
                            sent_tokens = sent_tokens or isinstance(item, TokenDelta)
                            yield item
                    break
                except ReplicaUnavailable as error:
                    self._take_out(url, str(error))
                    if sent_tokens:
                        raise
                    tried.add(url)
                    logger.warning("request %s moves off %s before its first token", request_id, url)
        finally:
            # The prefix is warm everywhere when the caller's warm-up returns.
            await asyncio.gather(*others, return_exceptions=True)

    async def read_labels(
        self,
        prompt_ids: Sequence[int],
        labels: Sequence[int],
        *,
        request_id: str | None = None,
        cache_salt: str | None = None,
        affinity_key: str | None = None,
    ) -> LabelRead:
        """On the replica the conversation's requests go to; on another if that one is down."""
        return await self._on_replica(
            affinity_key,
            cache_salt,
            lambda replica: replica.read_labels(
                prompt_ids, labels, request_id=request_id, cache_salt=cache_salt, session=affinity_key
            ),
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
        progress: object = None,  # not filled: a replica writes them whole
    ) -> list[str]:
        """On the conversation's replica (its prompt is cached there); another if it is down.
        A replica writes them whole (`enough` is not read): one request, not a stream."""
        options = {"request_id": request_id, "cache_salt": cache_salt, "session": affinity_key}
        return await self._on_replica(
            affinity_key,
            cache_salt,
            lambda replica: replica.sample(
                prompt_ids, n=n, max_tokens=max_tokens, temperature=temperature, seed=seed, **options
            ),
        )

    async def _on_replica(
        self, key: str | None, salt: str | None, call: Callable[[Replica], Awaitable[T]]
    ) -> T:
        """`call` on the replica the key goes to; on the next one while a replica is down."""
        if self.is_dead:
            raise EngineUnavailable("no model replica is available")
        tried: set[str] = set()
        while True:
            url = await self._choose(key, salt, tried)
            self._inflight[url] += 1
            try:
                return await call(self.replicas[url])
            except ReplicaUnavailable as error:
                self._take_out(url, str(error))
                tried.add(url)
            finally:
                self._inflight[url] -= 1

    async def _choose(self, key: str | None, salt: str | None, tried: set[str]) -> str:
        routable = self._routable(tried)
        if not routable:
            raise EngineUnavailable("no model replica is available")
        if len(self.replicas) == 1:  # one replica, or a router before them: nothing to choose
            return routable[0]
        warm = [url for url in routable if salt in self._warm[url]]
        return await self.router.choose(key, routable, self.loads(), warm)

    async def _run(
        self,
        url: str,
        prompt_ids: Sequence[int],
        max_tokens: int,
        request_id: str | None,
        cache_salt: str | None,
        session: str | None = None,
    ) -> AsyncGenerator[TokenDelta | GenerationResult, None]:
        self._inflight[url] += 1
        try:
            replica = self.replicas[url]
            async with contextlib.aclosing(
                replica.stream(
                    prompt_ids,
                    max_tokens=max_tokens,
                    request_id=request_id,
                    cache_salt=cache_salt,
                    session=session,
                )
            ) as items:
                async for item in items:
                    if isinstance(item, GenerationResult):
                        self._warm[url].add(cache_salt)
                    yield item
        finally:
            self._inflight[url] -= 1

    async def _drain(
        self,
        replica: Replica,
        prompt_ids: Sequence[int],
        max_tokens: int,
        request_id: str,
        cache_salt: str | None,
    ) -> None:
        async for _ in self._run(replica.url, prompt_ids, max_tokens, request_id, cache_salt):
            pass

    async def _warm_quietly(
        self, url: str, prompt_ids: Sequence[int], max_tokens: int, cache_salt: str | None
    ) -> None:
        try:
            await self._drain(
                self.replicas[url], prompt_ids, max_tokens, f"warm-{uuid.uuid4().hex}", cache_salt
            )
        except ReplicaUnavailable as error:
            self._take_out(url, str(error))
        except Exception:
            logger.exception("warming %s failed", url)
