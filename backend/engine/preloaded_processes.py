"""vLLM's engine core and its model worker, forked from a server that has already imported vLLM.

vLLM's CPU build starts its engine core with `spawn`: a new interpreter that imports vLLM
(about 8 s on two cores) only after the app's process has imported it; the core then spawns
its worker, which imports it again (about 12 s) while nothing else runs. A multiprocessing
fork server, started first and importing vLLM while the app's process does the same on the
other core, forks both ready-made instead. Each is started like a spawned process: it gets
the environment its parent has when it starts it (vLLM sets variables for its children just
before). The server also loads the model's tokenizer, which the core would otherwise load
while the app waits.

The worker runs the model on OpenMP threads whose runtime reads its settings once, as a
process starts; so the server is started with the settings vLLM will give the worker
(`worker_environment`), and the core asks it for its worker only when vLLM then sets exactly
those: otherwise the worker is spawned as vLLM would. The core, which vLLM starts unbound,
gets back the app's CPUs (the server's are the worker's).
"""

import logging
import multiprocessing
import multiprocessing.forkserver
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.context import BaseContext, ForkServerProcess
from pathlib import Path
from typing import Any

from backend.engine import worker_environment
from backend.engine.model_tokenizer import PRELOAD_ENV

# What the fork server imports once: the engine core, the executor that starts its worker, the
# worker, and the model's tokenizer.
PRELOAD = [
    "vllm.v1.engine.core",
    "vllm.v1.executor.multiproc_executor",
    "vllm.v1.worker.cpu_worker",
    "backend.engine.core_tokenizer",
]

logger = logging.getLogger(__name__)


def available() -> bool:
    return "forkserver" in multiprocessing.get_all_start_methods()  # not on Windows


def start_server(model_dir: Path) -> None:
    """Start the fork server now (it imports vLLM and loads `model_dir`'s tokenizer in the
    background), with the OpenMP settings vLLM will give the model's worker; idempotent."""
    if not available():
        return
    # A child imports the main module again (`backend.cli` under `prefixdesk serve`): preloaded too.
    main = getattr(getattr(sys.modules["__main__"], "__spec__", None), "name", None)
    multiprocessing.set_forkserver_preload([*PRELOAD, *([main] if main else [])])
    worker = worker_environment.foreseen(os.environ) or {}
    with _environment_set({**worker_environment.openmp_environment(worker), PRELOAD_ENV: str(model_dir)}):
        multiprocessing.forkserver.ensure_running()  # the server's environment is this one as it starts


def install() -> None:
    """Make vLLM start its engine core from the fork server `start_server` started (from here
    on, in this process), and the core its worker where it can."""
    if not available():
        return
    import vllm.v1.engine.utils as engine_utils
    from vllm.utils.system_utils import get_mp_context

    def core_context() -> "ServerContext":
        get_mp_context()  # for what it sets in the environment first (the devices a child sees)
        return ServerContext(multiprocessing.get_context("forkserver"), PreloadedCore)

    engine_utils.get_mp_context = core_context


@dataclass(frozen=True)
class Server:
    """How a process forked from the server asks it for a process of its own."""

    address: str
    authkey: bytes | None  # where Python's fork server authenticates its clients
    app_cpus: frozenset[int] | None  # None where processes are not bound to CPUs (not Linux)


class ServerContext:
    """A multiprocessing context whose processes come from the fork server and take the
    environment along when started."""

    def __init__(self, context: BaseContext, process: type["ForkedLikeSpawned"]):
        self._context: Any = context  # typeshed's BaseContext names no Process
        self._process = process

    def Process(self, **kwargs: Any) -> multiprocessing.process.BaseProcess:  # noqa: N802  multiprocessing's name
        return self._process(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


class WorkerContext(ServerContext):
    """vLLM's context for the worker in the core: the server's worker where vLLM's OpenMP
    settings are those the server was started with, a spawned one otherwise."""

    def __init__(self, context: BaseContext, server_openmp: Mapping[str, str]):
        super().__init__(context, ForkedLikeSpawned)
        self._server_openmp = dict(server_openmp)

    def Process(self, **kwargs: Any) -> multiprocessing.process.BaseProcess:  # noqa: N802
        if worker_environment.openmp_environment(os.environ) == self._server_openmp:
            return ForkedLikeSpawned(**kwargs)
        logger.warning("the model's worker is spawned: vLLM gives it OpenMP settings the fork server has not")
        spawned: multiprocessing.process.BaseProcess = self._context.Process(**kwargs)
        return spawned


class ForkedLikeSpawned(ForkServerProcess):
    def start(self) -> None:
        # The environment as of now, as `spawn` would pass it (vLLM sets variables just before).
        target: Callable[..., Any] = self._target  # type: ignore[has-type]
        kwargs: dict[str, Any] = self._kwargs
        self._target = _run_with_environment
        self._args = (dict(os.environ), target, kwargs, self._server())
        self._kwargs: dict[str, Any] = {}
        super().start()

    def _server(self) -> Server | None:
        return None


class PreloadedCore(ForkedLikeSpawned):
    def _server(self) -> Server | None:
        server = multiprocessing.forkserver._forkserver
        address = server._forkserver_address  # type: ignore[attr-defined]
        authkey = getattr(server, "_forkserver_authkey", None)
        cpus = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        return Server(address, authkey, cpus) if address else None


def _run_with_environment(
    environment: dict[str, str], target: Callable[..., Any], kwargs: dict[str, Any], server: Server | None
) -> None:
    server_openmp = worker_environment.openmp_environment(os.environ)  # the server's, as it started
    _replace_environment(environment)
    if server is not None:  # this is the engine core
        _start_workers_from(server, server_openmp)
    target(**kwargs)


def _start_workers_from(server: Server, server_openmp: Mapping[str, str]) -> None:
    """In the core: its CPUs back, and vLLM's executor asks the server for the worker."""
    if server.app_cpus is not None:
        os.sched_setaffinity(0, server.app_cpus)
    client = multiprocessing.forkserver._forkserver
    client._forkserver_address = server.address  # type: ignore[attr-defined]
    if server.authkey is not None:
        client._forkserver_authkey = server.authkey  # type: ignore[attr-defined]
    # The app's server: the app started it and restarts it (only a parent can wait for it).
    client.ensure_running = lambda: None  # type: ignore[method-assign]
    import vllm.v1.executor.multiproc_executor as executor

    vllm_context = executor.get_mp_context
    executor.get_mp_context = lambda: WorkerContext(vllm_context(), server_openmp)


def _replace_environment(environment: dict[str, str]) -> None:
    # Changed key by key: emptying the environment first would leave setproctitle (vLLM's
    # process titles, "VLLM::EngineCore") no room to write in.
    for name in set(os.environ) - set(environment):
        del os.environ[name]
    for name, value in environment.items():
        if os.environ.get(name) != value:
            os.environ[name] = value


@contextmanager
def _environment_set(variables: dict[str, str]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value
