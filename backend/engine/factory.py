"""The engine the app runs on, chosen by settings, and begun before the app's own start-up.

Most of vLLM's start is its processes importing vLLM and setting up, while the app's process
waits. Begun first (`EngineHeadStart`, `prefixdesk serve` begins it before the migrations),
that overlaps the app's migrations, database, bots and routes instead of following them; the
supervisor takes it as its first start.

Two threads must not import transformers or vLLM at once (their lazy modules are not safe
for it), so the head start's thread does both imports and loads the tokenizer before the app
may use it: the app's own start-up imports neither, and takes its tokenizer from there.
"""

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from backend.config import Settings
from backend.engine.interface import Engine
from backend.engine.kv_sizing import context_window
from backend.engine.model_store import resolve_model_dir
from backend.engine.model_tokenizer import load_tokenizer
from backend.engine.remote import Replica
from backend.engine.remote_engine import RemoteEngine
from backend.engine.vllm_engine import VllmEngine

UNCAPPED = 1 << 30

logger = logging.getLogger(__name__)


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


def with_context_window(settings: Settings, model_dir: Path) -> Settings:
    """Settings whose `max_model_len` is the window conversations get: as configured, else the model's."""
    return settings.model_copy(update={"max_model_len": context_window(model_dir, settings.max_model_len)})


def begin_engine(settings: Settings) -> "EngineHeadStart | None":
    """The embedded engine, begun loading now; None when the engine is remote."""
    if settings.engine == "remote":
        return None
    return EngineHeadStart(settings, resolve_model_dir(settings.model, settings.cache_dir))


class EngineHeadStart:
    def __init__(self, settings: Settings, model_dir: Path):
        self._tokenizer: Future[Any] = Future()
        self._loaded: Future[Engine] = Future()
        self._taken = False
        arguments = (with_context_window(settings, model_dir), model_dir)
        threading.Thread(target=self._load, args=arguments, name="engine-head-start", daemon=True).start()

    def _load(self, settings: Settings, model_dir: Path) -> None:
        for step, result in ((self._prepare, self._tokenizer), (VllmEngine.load, self._loaded)):
            try:
                result.set_result(step(settings, model_dir))
            except BaseException as error:  # handed to whoever waits for it
                for waited in (self._tokenizer, self._loaded):
                    if not waited.done():
                        waited.set_exception(error)
                return

    @staticmethod
    def _prepare(settings: Settings, model_dir: Path) -> Any:
        VllmEngine.prepare(settings, model_dir)
        return load_tokenizer(model_dir)  # vLLM's engine finds it in its cache

    async def tokenizer(self) -> Any:
        """The model's tokenizer, once vLLM and transformers are imported (by this thread)."""
        return await asyncio.wrap_future(self._tokenizer)

    async def take(self) -> Engine:
        self._taken = True
        return await asyncio.wrap_future(self._loaded)

    def first_then(self, start: Callable[[], Awaitable[Engine]]) -> Callable[[], Awaitable[Engine]]:
        """A start that takes this engine the first time and calls `start` after (a restart)."""

        async def this_first_then_start() -> Engine:
            return await start() if self._taken else await self.take()

        return this_first_then_start

    def release_untaken(self) -> None:
        """Shut down the engine if the app never took it (it failed to start): now, or once
        it has loaded."""
        if not self._taken:
            self._loaded.add_done_callback(_shut_down_loaded)


def _shut_down_loaded(loaded: "Future[Engine]") -> None:
    if loaded.exception() is None:
        logger.info("shutting down the engine the app never took")
        loaded.result().shutdown()
