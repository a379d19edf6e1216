"""The CPU build's KV cache, allocated from fresh pages: zeros that take memory only once written."""

from importlib.metadata import entry_points
from pathlib import Path

import psutil
import torch

from backend.engine.fresh_kv_pages import FreshZeros
from backend.engine.interface import GenerationResult
from backend.engine.vllm_engine import VllmEngine
from tests.engine.processes import engine_worker

MIB = 1 << 20


def anonymous_mappings(pid: int) -> list[tuple[int, int]]:
    """(size, resident) in bytes of each anonymous mapping of the process, from its smaps."""
    mappings: list[tuple[int, int]] = []
    anonymous, size = False, 0
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and not fields[0].endswith(":"):  # "start-end perms offset dev inode [path]"
            anonymous = len(fields) == 5 and fields[4] == "0"
        elif fields[0] == "Size:":
            size = int(fields[1]) * 1024
        elif fields[0] == "Rss:" and anonymous:
            mappings.append((size, int(fields[1]) * 1024))
    return mappings


def test_zeros_within_it_are_zeros_that_take_no_memory_until_written():
    process = psutil.Process()
    before = process.memory_info().rss
    with FreshZeros():
        buffer = torch.zeros(512 * MIB, dtype=torch.int8, device="cpu")
        floats = torch.zeros(1024, dtype=torch.float32)
        shaped = torch.zeros(4, 4)  # not a flat buffer: torch's own
    assert process.memory_info().rss - before < 64 * MIB
    assert buffer.shape == (512 * MIB,) and buffer.dtype == torch.int8
    assert floats.dtype == torch.float32 and not floats.any() and not shaped.any()
    buffer[::MIB] = 1  # written: a page each, and the tensor works as any other
    assert int(buffer.sum()) == 512 and buffer.data_ptr() % 4096 == 0
    assert torch.zeros(3).tolist() == [0.0, 0.0, 0.0]  # outside it, untouched


def test_vllm_loads_the_plugin():
    plugins = entry_points(group="vllm.general_plugins")
    assert "backend.engine.fresh_kv_pages:register" in {plugin.value for plugin in plugins}


async def test_the_engines_kv_cache_takes_memory_as_prompts_fill_it(plain_vllm: VllmEngine, tiny_settings):
    worker = engine_worker(plain_vllm)
    cache_bytes = tiny_settings.kv_cache_gib * 1024 * MIB
    # Its blocks fill most of it; a neighbouring mapping may have joined it.
    caches = [mapping for mapping in anonymous_mappings(worker.pid) if mapping[0] >= cache_bytes * 0.9]
    assert caches, f"no mapping of the KV cache's size: {anonymous_mappings(worker.pid)}"
    # vLLM's own allocation writes zeros over every page: all of it resident from the start.
    assert sum(resident for _, resident in caches) < cache_bytes / 4, caches
    async for item in plain_vllm.stream(list(range(100, 400)), max_tokens=4):
        last = item
    assert isinstance(last, GenerationResult) and last.finish_reason == "length"
