"""A running engine's processes, as the operating system shows them."""

import os
from pathlib import Path

import psutil

from backend.engine.vllm_engine import VllmEngine


def workers() -> set[psutil.Process]:
    """The model workers of every engine this process started."""
    return {child for child in psutil.Process().children(recursive=True) if child.name() == "VLLM::Worker"}


def engine_core(engine: VllmEngine) -> psutil.Process:
    return psutil.Process(engine._llm.engine_core.resources.engine_manager.processes[0].pid)


def engine_worker(engine: VllmEngine) -> psutil.Process:
    """The engine's worker: the one holding an end of a pipe of its core's (vLLM's pipe that
    tells a worker its core is gone) of which this process holds none."""
    core_pipes = _pipes(engine_core(engine).pid) - _pipes(os.getpid())
    (worker,) = [worker for worker in workers() if _pipes(worker.pid) & core_pipes]
    return worker


def _pipes(pid: int) -> set[str]:
    pipes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            link = os.readlink(fd)
        except FileNotFoundError:  # closed meanwhile
            continue
        if link.startswith("pipe:"):
            pipes.add(link)
    return pipes
