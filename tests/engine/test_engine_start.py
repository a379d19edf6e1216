"""The engine's core, forked ready-made from a server that has imported vLLM."""

import json
import os
from pathlib import Path

import psutil

from backend.engine import preloaded_core
from backend.engine.vllm_engine import VllmEngine


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
