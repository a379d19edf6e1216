"""The engine's start: begun before the app's own start-up, and its core forked ready-made."""

import asyncio
import json
import os
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from backend.config import Settings
from backend.engine import factory, preloaded_core
from backend.engine.live import LiveEngine
from backend.engine.vllm_engine import VllmEngine
from backend.services import build_supervisor


class FakeEngine:
    def __init__(self, name: str):
        self.name = name
        self.is_dead = False
        self.shut_down = False

    def shutdown(self) -> None:
        self.shut_down = True


def loading_in_the_background(monkeypatch, loaded: list[FakeEngine]) -> None:
    def load(settings: Settings, model_dir: Path) -> FakeEngine:
        engine = FakeEngine(f"begun, window {settings.max_model_len}")
        loaded.append(engine)
        return engine

    monkeypatch.setattr(factory.VllmEngine, "load", load)


async def test_the_supervisor_takes_the_engine_begun_before_the_app_and_a_restart_starts_anew(
    monkeypatch, tiny_settings: Settings
):
    loaded: list[FakeEngine] = []
    loading_in_the_background(monkeypatch, loaded)
    restarted = FakeEngine("started anew")

    async def start_engine(*args: object) -> FakeEngine:
        return restarted

    monkeypatch.setattr("backend.services.start_engine", start_engine)
    head_start = factory.EngineHeadStart(tiny_settings, tiny_settings.model)
    attached: list[FakeEngine] = []

    async def attach(engine: FakeEngine) -> None:
        attached.append(engine)

    bots = SimpleNamespace(slug_of_salt=lambda salt: None, values=lambda: [])
    supervisor = build_supervisor(tiny_settings, tiny_settings.model, bots, LiveEngine(), None, head_start)
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


async def wait_until(condition) -> None:
    while not condition():
        await asyncio.sleep(0.01)


async def test_an_engine_the_app_never_took_is_shut_down(monkeypatch, tiny_settings: Settings):
    loaded: list[FakeEngine] = []
    loading_in_the_background(monkeypatch, loaded)
    untaken = factory.EngineHeadStart(tiny_settings, tiny_settings.model)
    await asyncio.wait_for(wait_until(lambda: len(loaded) == 1), timeout=10)
    await asyncio.sleep(0.05)  # the result set just after load returns
    untaken.release_untaken()
    assert loaded[0].shut_down

    taken = factory.EngineHeadStart(tiny_settings, tiny_settings.model)
    engine = await taken.take()
    taken.release_untaken()
    assert not engine.shut_down  # the supervisor's to shut down


async def test_a_failed_head_start_is_raised_to_whoever_takes_it(monkeypatch, tiny_settings: Settings):
    def load(settings: Settings, model_dir: Path) -> FakeEngine:
        raise RuntimeError("Engine core initialization failed")

    monkeypatch.setattr(factory.VllmEngine, "load", load)
    failed = factory.EngineHeadStart(tiny_settings, tiny_settings.model)
    with pytest.raises(RuntimeError, match="initialization failed"):
        await failed.take()
    failed.release_untaken()  # nothing to shut down


def report_environment(path: str) -> None:
    Path(path).write_text(json.dumps(dict(os.environ)))


def test_a_process_from_the_fork_server_gets_the_environment_of_its_start(tmp_path, monkeypatch):
    preloaded_core.start_server()
    out = tmp_path / "environment.json"
    process = preloaded_core.CoreContext(preloaded_core.multiprocessing.get_context("forkserver")).Process(
        target=report_environment, name="probe", kwargs={"path": str(out)}
    )
    # Set after the server started and after the process was made, as vLLM does before start().
    monkeypatch.setenv("PREFIXDESK_SET_JUST_BEFORE_START", "1")
    process.start()
    process.join(60)
    assert process.exitcode == 0
    assert json.loads(out.read_text()) == dict(os.environ)


def test_the_engine_core_is_forked_from_the_preloaded_server_and_starts_its_worker(tiny_vllm: VllmEngine):
    cores = [
        child
        for child in psutil.Process().children(recursive=True)
        if "EngineCore" in " ".join([child.name(), *child.cmdline()])
    ]
    assert cores, "no engine core under this process"
    server = cores[0].parent()
    assert server is not None and "multiprocessing.forkserver" in " ".join(server.cmdline())
    assert any("vllm.v1.engine.core" in part for part in server.cmdline())  # what it preloaded
    assert [worker.name() for worker in cores[0].children()] == ["VLLM::Worker"]  # vLLM's own start
