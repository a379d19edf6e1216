"""The engine's start: begun before the app's own start-up, its core forked ready-made from
a server that has imported vLLM and loaded the tokenizer."""

import asyncio
import json
import os
import threading
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from backend.config import Settings
from backend.engine import factory, preloaded_processes, worker_environment
from backend.engine.live import LiveEngine
from backend.engine.model_tokenizer import load_tokenizer
from backend.engine.vllm_engine import VllmEngine
from backend.engine.vllm_options import async_engine_args
from backend.services import build_supervisor
from tests.engine.processes import engine_core, engine_worker


class FakeEngine:
    def __init__(self, name: str):
        self.name = name
        self.is_dead = False
        self.shut_down = False

    def shutdown(self) -> None:
        self.shut_down = True


def loading_in_the_background(
    monkeypatch, loaded: list[FakeEngine], gate: threading.Event | None = None
) -> None:
    def prepare(settings: Settings, model_dir: Path) -> str:
        return "the tokenizer"

    def load(settings: Settings, model_dir: Path) -> FakeEngine:
        if gate is not None:
            gate.wait(10)
        engine = FakeEngine(f"begun, window {settings.max_model_len}")
        loaded.append(engine)
        return engine

    monkeypatch.setattr(factory.EngineHeadStart, "_prepare", staticmethod(prepare))
    monkeypatch.setattr(factory.VllmEngine, "load", load)


async def wait_until(condition) -> None:
    while not condition():
        await asyncio.sleep(0.01)


async def test_the_supervisor_takes_the_engine_begun_before_the_app_and_a_restart_starts_anew(
    monkeypatch, tiny_settings: Settings
):
    loaded: list[FakeEngine] = []
    loading_in_the_background(monkeypatch, loaded)
    restarted = FakeEngine("started anew")

    async def start_engine(*args: object) -> FakeEngine:
        return restarted

    monkeypatch.setattr("backend.services.start_engine", start_engine)
    begun = factory.EngineHeadStart(tiny_settings, tiny_settings.model)
    assert await begun.tokenizer() == "the tokenizer"
    attached: list[FakeEngine] = []

    async def attach(engine: FakeEngine) -> None:
        attached.append(engine)

    bots = SimpleNamespace(slug_of_salt=lambda salt: None, values=lambda: [])
    supervisor = build_supervisor(tiny_settings, tiny_settings.model, bots, LiveEngine(), None, begun)
    supervisor._attach = attach  # only what is attached matters here
    supervisor._check_interval_s = 0.01
    running = asyncio.create_task(supervisor.run())
    try:
        await asyncio.wait_for(wait_until(lambda: len(attached) == 1), timeout=10)
        assert attached == loaded  # the engine begun before the app, not a second one
        assert attached[0].name == f"begun, window {tiny_settings.max_model_len}"
        attached[0].is_dead = True
        await asyncio.wait_for(wait_until(lambda: len(attached) == 2), timeout=10)
        assert attached[1] is restarted
        assert loaded[0].shut_down  # the dead one, by the supervisor that owns it
    finally:
        running.cancel()


async def test_an_engine_the_app_never_took_is_shut_down(monkeypatch, tiny_settings: Settings):
    loaded: list[FakeEngine] = []
    still_loading = threading.Event()
    loading_in_the_background(monkeypatch, loaded, still_loading)
    untaken = factory.EngineHeadStart(tiny_settings, tiny_settings.model)
    untaken.release_untaken()  # the app failed while the engine was loading
    still_loading.set()
    await asyncio.wait_for(wait_until(lambda: loaded and loaded[0].shut_down), timeout=10)

    taken = factory.EngineHeadStart(tiny_settings, tiny_settings.model)
    engine = await taken.take()
    taken.release_untaken()
    assert not engine.shut_down  # the supervisor's to shut down


async def test_a_failed_head_start_is_raised_to_whoever_waits_for_it(monkeypatch, tiny_settings: Settings):
    def prepare(settings: Settings, model_dir: Path) -> str:
        raise RuntimeError("no vLLM here")

    monkeypatch.setattr(factory.EngineHeadStart, "_prepare", staticmethod(prepare))
    failed = factory.EngineHeadStart(tiny_settings, tiny_settings.model)
    with pytest.raises(RuntimeError, match="no vLLM here"):
        await failed.tokenizer()
    with pytest.raises(RuntimeError, match="no vLLM here"):
        await failed.take()
    failed.release_untaken()  # nothing to shut down


def test_the_apps_tokenizer_is_the_one_vllm_finds_in_its_cache(tiny_settings: Settings):
    from vllm.tokenizers import cached_get_tokenizer, cached_tokenizer_from_config

    ours = load_tokenizer(tiny_settings.model)
    misses = cached_get_tokenizer.cache_info().misses
    model_config = async_engine_args(tiny_settings, tiny_settings.model).create_model_config()
    assert cached_tokenizer_from_config(model_config) is ours
    assert cached_get_tokenizer.cache_info().misses == misses


def report_environment(path: str) -> None:
    Path(path).write_text(json.dumps(dict(os.environ)))


def report_cached_tokenizers(path: str) -> None:
    from vllm.tokenizers import cached_get_tokenizer

    Path(path).write_text(str(cached_get_tokenizer.cache_info().currsize))


def start_from_the_fork_server(target, path: Path) -> None:
    process = preloaded_processes.ServerContext(
        preloaded_processes.multiprocessing.get_context("forkserver"), preloaded_processes.ForkedLikeSpawned
    ).Process(target=target, name="probe", kwargs={"path": str(path)})
    process.start()
    process.join(60)
    assert process.exitcode == 0


def test_a_process_from_the_fork_server_finds_the_tokenizer_loaded(tmp_path, tiny_settings: Settings):
    preloaded_processes.start_server(tiny_settings.model)  # or already started by an engine: one model's
    start_from_the_fork_server(report_cached_tokenizers, tmp_path / "cached")
    assert int((tmp_path / "cached").read_text()) >= 1


def test_a_process_from_the_fork_server_gets_the_environment_of_its_start(
    tmp_path, monkeypatch, tiny_settings: Settings
):
    preloaded_processes.start_server(tiny_settings.model)
    out = tmp_path / "environment.json"
    process = preloaded_processes.ServerContext(
        preloaded_processes.multiprocessing.get_context("forkserver"), preloaded_processes.ForkedLikeSpawned
    ).Process(target=report_environment, name="probe", kwargs={"path": str(out)})
    # Set after the server started and after the process was made, as vLLM does before start().
    monkeypatch.setenv("PREFIXDESK_SET_JUST_BEFORE_START", "1")
    process.start()
    process.join(60)
    assert process.exitcode == 0
    assert json.loads(out.read_text()) == dict(os.environ)


def vllm_binding_of_the_first_worker() -> list[int]:
    """The CPUs vLLM binds its first worker's threads to, as vLLM computes them."""
    from vllm.utils.ompmultiprocessing import OMPProcessManager

    parallel = SimpleNamespace(local_world_size=1, data_parallel_rank_local=0, _api_process_count=1)
    return list(
        OMPProcessManager(SimpleNamespace(parallel_config=parallel, kv_transfer_config=None)).cpu_lists[0]
    )


def test_the_engine_core_and_its_worker_are_forked_from_the_preloaded_server(tiny_vllm: VllmEngine):
    core, worker = engine_core(tiny_vllm), engine_worker(tiny_vllm)
    server = core.parent()
    assert server is not None and "multiprocessing.forkserver" in " ".join(server.cmdline())
    preloaded = " ".join(server.cmdline())
    assert "vllm.v1.engine.core" in preloaded and "backend.engine.core_tokenizer" in preloaded
    # Asked of the server only when vLLM's OpenMP settings for it are those the server has.
    assert worker.parent() == server
    assert worker.cpu_affinity() == vllm_binding_of_the_first_worker()
    assert core.cpu_affinity() == psutil.Process().cpu_affinity()  # the app's, not the worker's


def test_the_worker_is_spawned_where_vllm_gives_it_other_openmp_settings(monkeypatch):
    spawn = preloaded_processes.multiprocessing.get_context("spawn")
    context = preloaded_processes.WorkerContext(spawn, {"OMP_NUM_THREADS": "1", "GOMP_CPU_AFFINITY": "0"})
    for name in worker_environment.openmp_environment(os.environ):
        monkeypatch.delenv(name)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("GOMP_CPU_AFFINITY", "0")
    assert isinstance(context.Process(target=print), preloaded_processes.ForkedLikeSpawned)
    monkeypatch.setenv("GOMP_CPU_AFFINITY", "1")
    assert type(context.Process(target=print)) is type(spawn.Process(target=print))
    monkeypatch.setenv("GOMP_CPU_AFFINITY", "0")
    monkeypatch.setenv("LD_PRELOAD", "libiomp5.so")
    assert type(context.Process(target=print)) is type(spawn.Process(target=print))
