"""Keeps an engine running: starts it, watches it, and starts a new one when it dies.

A vLLM engine whose core process dies stays dead; without this, every turn after it
would fail until someone restarted the app. While a new engine loads and warms, turns get
a 503 with Retry-After (the service is not ready) and `/readyz` says why.
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable

from backend.engine.interface import Engine

logger = logging.getLogger(__name__)

# Seconds between start attempts after failures in a row; the last one repeats.
RESTART_BACKOFF_S = (1.0, 2.0, 5.0, 10.0, 30.0)


class EngineSupervisor:
    def __init__(
        self,
        start: Callable[[], Awaitable[Engine]],
        attach: Callable[[Engine], Awaitable[None]],
        detach: Callable[[], None],
        *,
        owns_engine: bool = True,
        check_interval_s: float = 0.5,
    ):
        self._start = start
        self._attach = attach  # warms every bot's prefix, then marks the service ready
        self._detach = detach  # marks the service not ready: turns get a 503 meanwhile
        self._owns_engine = owns_engine  # False: an engine shared with others (tests, benchmarks)
        self._check_interval_s = check_interval_s
        self.engine: Engine | None = None
        self.restarts = 0
        self.status = "starting"
        self.error: str | None = None

    async def run(self) -> None:
        failures = 0
        while True:
            try:
                self.engine = await self._start()
                await self._attach(self.engine)
            except Exception as error:
                logger.exception("the engine did not start")
                self._stop_engine()
                self.error = f"the engine did not start: {error}"
                await asyncio.sleep(RESTART_BACKOFF_S[min(failures, len(RESTART_BACKOFF_S) - 1)])
                failures += 1
                continue
            failures, self.status, self.error = 0, "running", None
            logger.info("engine ready (restarts so far: %d)", self.restarts)
            # vLLM offers no callback when its core process dies, so look now and then.
            while not self.engine.is_dead:  # noqa: ASYNC110
                await asyncio.sleep(self._check_interval_s)
            self._detach()
            logger.error("the engine died; starting a new one")
            self._stop_engine()
            self.restarts += 1
            self.status = "restarting"

    def _stop_engine(self) -> None:
        engine, self.engine = self.engine, None
        if engine is not None and self._owns_engine:
            try:
                engine.shutdown()
            except Exception:  # a dead engine may fail to shut down cleanly; it is gone either way
                logger.warning("shutting down the old engine failed", exc_info=True)

    def shutdown(self) -> None:
        self._stop_engine()
