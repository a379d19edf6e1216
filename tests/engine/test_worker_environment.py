"""The model worker's environment, foreseen before vLLM is imported, as vLLM then sets it."""

import os
from pathlib import Path

import pytest

from backend.engine import worker_environment
from backend.engine.vllm_engine import VllmEngine
from backend.engine.worker_environment import foreseen, openmp_environment

pytestmark = pytest.mark.skipif(
    foreseen({}) is None, reason="vLLM's choice is foreseen on Linux, x86 or Arm, one NUMA node"
)


def test_a_list_given_binds_the_first_workers_threads_to_its_first_entry():
    worker = foreseen({"VLLM_CPU_OMP_THREADS_BIND": "3,0-1|4-5"})
    assert worker is not None
    assert (worker["OMP_NUM_THREADS"], worker["GOMP_CPU_AFFINITY"]) == ("3", "3 0 1")


def test_no_binding_sets_no_thread_variables_and_still_preloads_pytorchs_openmp():
    worker = foreseen({"VLLM_CPU_OMP_THREADS_BIND": "nobind", "OTHER": "kept"})
    assert worker is not None and worker["OTHER"] == "kept"
    assert set(openmp_environment(worker)) == {"LD_PRELOAD"}
    assert Path(worker["LD_PRELOAD"]).name.startswith("libgomp")


def test_the_automatic_binding_keeps_the_cpus_reserved_for_the_core_and_the_app(monkeypatch):
    monkeypatch.setattr(worker_environment.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(worker_environment, "_physical_core", lambda cpu: ("0", str(cpu)))
    worker = foreseen({"VLLM_CPU_NUM_OF_RESERVED_CPU": "1"})
    assert worker is not None and worker["GOMP_CPU_AFFINITY"] == "0 1 2"
    monkeypatch.setattr(worker_environment, "_physical_core", lambda cpu: ("0", str(cpu // 2)))  # 2 a core
    worker = foreseen({"VLLM_CPU_NUM_OF_RESERVED_CPU": "1"})
    assert worker is not None and worker["GOMP_CPU_AFFINITY"] == "1" and worker["OMP_NUM_THREADS"] == "1"


def test_another_openmp_runtime_preloaded_is_not_foreseen():
    assert foreseen({"LD_PRELOAD": "/opt/intel/libiomp5.so"}) is None


def test_vllm_preloads_what_was_foreseen(tiny_vllm: VllmEngine):
    # vLLM sets LD_PRELOAD in this process's environment as the engine starts.
    before_vllm = {name: value for name, value in os.environ.items() if name != "LD_PRELOAD"}
    worker = foreseen(before_vllm)
    assert worker is not None and worker["LD_PRELOAD"] == os.environ["LD_PRELOAD"]
