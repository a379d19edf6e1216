"""The engine the app runs on, chosen by settings."""

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from pathlib import Path

from backend.config import Settings
from backend.engine.interface import Engine
from backend.engine.kv_sizing import context_window
from backend.engine.remote import Replica
from backend.engine.remote_engine import RemoteEngine
from backend.engine.vllm_engine import VllmEngine

UNCAPPED = 1 << 30

logger = logging.getLogger(__name__)


def with_context_window(settings: Settings, model_dir: Path) -> Settings:
    """Settings whose `max_model_len` is the window conversations get: as configured, else the model's."""
    return settings.model_copy(update={"max_model_len": context_window(model_dir, settings.max_model_len)})


async def start_engine(
    settings: Settings, model_dir: Path, bot_of: Callable[[str | None], str | None] = lambda salt: None
) -> Engine:
    """Start the configured engine; returns once it can take requests. `bot_of`: a request's
    bot from its cache salt, which a remote engine names to the router."""
    if settings.engine == "remote":
        engine = create_remote_engine(settings, bot_of)
        await engine.wait_until_ready(settings.engine_start_timeout_s)
        return engine
    return await VllmEngine.start(settings, model_dir)


def create_remote_engine(
    settings: Settings, bot_of: Callable[[str | None], str | None] = lambda salt: None
) -> RemoteEngine:
    if settings.engine_url is None:
        raise ValueError("PREFIXDESK_ENGINE=remote needs PREFIXDESK_ENGINE_URL")
    replica = Replica(
        settings.engine_url,
        temperature=settings.temperature,
        timeout_s=settings.engine_request_timeout_s,
        session_header=settings.session_header,
        health_path=settings.engine_health_path,
        bot_of=bot_of,
    )
    return RemoteEngine(
        replica,
        block_size=settings.block_size,
        max_model_len=settings.max_model_len or UNCAPPED,  # the replicas say theirs
        health_interval_s=settings.health_check_interval_s,
    )


class EngineHeadStart:
    """The embedded engine, begun loading before the app's own start-up.

    Most of vLLM's start is its engine and worker processes importing vLLM, one after the
    other, while the app's process waits; begun first, that overlaps the app's migrations,
    tokenizer and bots instead of following them. The supervisor takes it as its first start.
    """

    def __init__(self, settings: Settings, model_dir: Path):
        self._loaded: Future[Engine] = Future()
        self._taken = False
        arguments = (with_context_window(settings, model_dir), model_dir)
        threading.Thread(target=self._load, args=arguments, name="engine-head-start", daemon=True).start()

    def _load(self, settings: Settings, model_dir: Path) -> None:
        try:
            self._loaded.set_result(VllmEngine.load(settings, model_dir))
        except BaseException as error:  # handed to whoever takes the engine
            self._loaded.set_exception(error)

    async def take(self) -> Engine:
        self._taken = True
        return await asyncio.wrap_future(self._loaded)

    def first_then(self, start: Callable[[], Awaitable[Engine]]) -> Callable[[], Awaitable[Engine]]:
        """A start that takes this engine the first time and calls `start` after (a restart)."""

        async def this_first_then_start() -> Engine:
            return await start() if self._taken else await self.take()

        return this_first_then_start

    def release_untaken(self) -> None:
        """Shut down an engine that loaded but was never taken (the app failed to start)."""
        if self._taken or not self._loaded.done() or self._loaded.exception() is not None:
            return
        logger.info("shutting down the engine the app never took")
        self._loaded.result().shutdown()
