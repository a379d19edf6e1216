"""A vLLM plugin: the CPU build's KV cache comes from fresh pages instead of written zeros.

vLLM allocates the KV cache as one buffer of `torch.zeros` (`allocate_kv_cache`,
vllm/v1/worker/utils.py), which writes every page of it before the engine takes a request:
4 GiB, a page fault and a page of zeros at a time, took 2 to 14 s of a restart on two cores
(docs/benchmarks.md). Memory the kernel maps fresh reads as zeros already and costs a page
only when first written. Here the CPU model runner's allocation takes such a mapping: the
cache holds what it held (zeros), and its pages are paid for as prompts fill them. vLLM
loads this in each of its processes (the `vllm.general_plugins` entry point); it acts where
the CPU model runner allocates. The CUDA build's allocation is left as it is.
"""

import contextlib
import logging
import mmap
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

logger = logging.getLogger(__name__)


def register() -> None:
    try:
        from vllm.v1.worker.cpu_model_runner import CPUModelRunner
    except ImportError:  # not the CPU build
        return
    if getattr(CPUModelRunner, "kv_cache_from_fresh_pages", False):  # loaded twice in one process
        return
    initialize = CPUModelRunner.initialize_kv_cache_tensors

    def initialize_kv_cache_tensors(
        runner: Any, kv_cache_config: Any, kernel_block_sizes: Any, kv_cache_allocation_context: Any = None
    ) -> Any:
        context = kv_cache_allocation_context
        # vLLM passes a context that does nothing on CPU; one that does (a connector's memory
        # pool) decides where the cache goes.
        if context is None or isinstance(context, contextlib.nullcontext):
            context = FreshZeros()
        return initialize(runner, kv_cache_config, kernel_block_sizes, kv_cache_allocation_context=context)

    CPUModelRunner.initialize_kv_cache_tensors = initialize_kv_cache_tensors
    CPUModelRunner.kv_cache_from_fresh_pages = True
    logger.debug("the KV cache is allocated from fresh pages")


class FreshZeros(TorchFunctionMode):  # type: ignore[misc]  # torch's stubs leave it untyped
    """Within it, `torch.zeros` of a flat CPU buffer is a fresh anonymous mapping: zeros that
    cost nothing until written. Every other call is torch's own."""

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        if func is torch.zeros and _flat_cpu_buffer(args, kwargs):
            return fresh_zeros(args[0], kwargs.get("dtype") or torch.get_default_dtype())
        return func(*args, **kwargs)


def _flat_cpu_buffer(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    device = torch.device(kwargs.get("device") or "cpu")
    plain = set(kwargs) <= {"dtype", "device"}  # no `out`, layout, grad or pinned memory
    return device.type == "cpu" and plain and len(args) == 1 and isinstance(args[0], int) and args[0] > 0


def fresh_zeros(numel: int, dtype: torch.dtype) -> torch.Tensor:
    """A 1-D tensor of `numel` zeros on pages the kernel maps when first touched (page-aligned);
    the tensor keeps the mapping alive."""
    mapping = mmap.mmap(-1, numel * dtype.itemsize, flags=mmap.MAP_PRIVATE)  # anonymous, as malloc's
    return torch.frombuffer(mapping, dtype=dtype)
