"""vLLM's engine-core process, forked from a server that has already imported vLLM.

vLLM's CPU build starts its engine core with `spawn`: a new interpreter that imports vLLM
(about 8 s on two cores) only after the app's process has imported it, and before the core
spawns its own worker, which imports it again. A multiprocessing fork server, started
first and importing vLLM while the app's process does the same on the other core, forks
the core ready-made instead. The core is started like a spawned process: it gets the
environment the app's process has when it starts it (vLLM sets variables for its children
just before). Only the core is forked: its worker, which runs the model with OpenMP, is
spawned by vLLM as before, so its threads are bound as vLLM intends. The server also loads
the model's tokenizer, which the core would otherwise load while the app waits.
"""

import multiprocessing
import multiprocessing.forkserver
import os
import sys
from collections.abc import Callable
from multiprocessing.context import BaseContext, ForkServerProcess
from pathlib import Path
from typing import Any

from backend.engine.model_tokenizer import PRELOAD_ENV

# What the fork server imports once: the engine core, the executor that spawns its worker,
# and the model's tokenizer.
PRELOAD = ["vllm.v1.engine.core", "vllm.v1.executor.multiproc_executor", "backend.engine.core_tokenizer"]


def available() -> bool:
    return "forkserver" in multiprocessing.get_all_start_methods()  # not on Windows


def start_server(model_dir: Path) -> None:
    """Start the fork server now (it imports vLLM and loads `model_dir`'s tokenizer in the
    background); idempotent."""
    if not available():
        return
    # A child imports the main module again (`backend.cli` under `prefixdesk serve`): preloaded too.
    main = getattr(getattr(sys.modules["__main__"], "__spec__", None), "name", None)
    multiprocessing.set_forkserver_preload([*PRELOAD, *([main] if main else [])])
    os.environ[PRELOAD_ENV] = str(model_dir)  # the server's environment is this one as it starts
    try:
        multiprocessing.forkserver.ensure_running()
    finally:
        del os.environ[PRELOAD_ENV]


def install() -> None:
    """Make vLLM start its engine core from the fork server `start_server` started (from here
    on, in this process)."""
    if not available():
        return
    import vllm.v1.engine.utils as engine_utils
    from vllm.utils.system_utils import get_mp_context

    def core_context() -> CoreContext:
        get_mp_context()  # for what it sets in the environment first (the devices a child sees)
        return CoreContext(multiprocessing.get_context("forkserver"))

    engine_utils.get_mp_context = core_context


class CoreContext:
    """The fork server's context, whose processes take the environment along when started."""

    def __init__(self, context: BaseContext):
        self._context = context

    def Process(self, **kwargs: Any) -> "ForkedLikeSpawned":  # noqa: N802  multiprocessing's name
        return ForkedLikeSpawned(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


class ForkedLikeSpawned(ForkServerProcess):
    def start(self) -> None:
        # The environment as of now, as `spawn` would pass it (vLLM sets variables just before).
        target: Callable[..., Any] = self._target  # type: ignore[has-type]
        kwargs: dict[str, Any] = self._kwargs
        self._target = _run_with_environment
        self._args = (dict(os.environ), target, kwargs)
        self._kwargs: dict[str, Any] = {}
        super().start()


def _run_with_environment(
    environment: dict[str, str], target: Callable[..., Any], kwargs: dict[str, Any]
) -> None:
    # Changed key by key: emptying the environment first would leave setproctitle (vLLM's
    # process titles, "VLLM::EngineCore") no room to write in.
    for name in set(os.environ) - set(environment):
        del os.environ[name]
    for name, value in environment.items():
        if os.environ.get(name) != value:
            os.environ[name] = value
    target(**kwargs)
