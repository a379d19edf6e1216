"""The environment vLLM's CPU build gives its model worker, foreseen before vLLM is imported.

The worker runs the model on OpenMP threads, and its OpenMP runtime reads its settings once,
as the process starts: vLLM preloads PyTorch's libgomp (`LD_PRELOAD`, so that its own kernels
and PyTorch's share one runtime) and binds the threads with `OMP_NUM_THREADS` and
`GOMP_CPU_AFFINITY` (`vllm/platforms/cpu.py`, `vllm/utils/ompmultiprocessing.py`). A process
that is to fork workers ready-made must have been started with exactly these. This module
foresees them the way vLLM computes them, for its first worker, where that is plain (one
NUMA node, its automatic binding or a list given); whoever forks compares them with what
vLLM then sets and spawns as vLLM would where they differ.
"""

import glob
import importlib.util
import os
import platform
import re
from collections.abc import Mapping
from pathlib import Path

# Read by OpenMP runtimes (GNU's, LLVM's, Intel's) when they load, and the variable that loads them.
OPENMP_PREFIXES = ("OMP_", "GOMP_", "KMP_")
PRELOAD = "LD_PRELOAD"
_OPENMP_LIBRARIES = ("libomp", "libgomp", "libiomp")
_CPUS = Path("/sys/devices/system/cpu")


def openmp_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of `environ` an OpenMP runtime reads as its process starts."""
    return {
        name: value for name, value in environ.items() if name == PRELOAD or name.startswith(OPENMP_PREFIXES)
    }


def foreseen(environ: Mapping[str, str]) -> dict[str, str] | None:
    """`environ` with what vLLM's CPU build will add for its first worker, or None where this
    cannot be foreseen (not Linux on x86 or Arm, several NUMA nodes, another OpenMP runtime)."""
    if platform.system() != "Linux" or _architecture() is None or len(_numa_nodes()) > 1:
        return None
    preload = _preload(environ.get(PRELOAD, ""))
    if preload is None or "libgomp" not in preload:
        return None
    cpus = _worker_cpus(environ)
    if cpus is None:
        return None
    added = {PRELOAD: preload}
    if cpus:  # none: vLLM leaves the threads unbound ("nobind")
        added |= {"OMP_NUM_THREADS": str(len(cpus)), "GOMP_CPU_AFFINITY": " ".join(map(str, cpus))}
    return {**environ, **added}


def _architecture() -> str | None:
    machine = platform.machine().lower()
    if machine in ("x86_64", "amd64", "i686"):
        return "x86"
    return "arm" if machine in ("aarch64", "arm64") else None


def _preload(preload: str) -> str | None:
    """`LD_PRELOAD` as vLLM sets it: PyTorch's libgomp after what is there, its bundled
    tcmalloc before."""
    if not any(library in preload for library in _OPENMP_LIBRARIES):
        torch = _package_dir("torch")
        found = [
            *glob.glob(str(torch.parent / "torch.libs" / "libgomp*.so*")),
            *glob.glob(str(torch / "lib" / "libgomp*.so*")),
        ]
        if not found:
            return None
        preload = f"{preload}:{found[0]}" if preload else found[0]
    if "libtcmalloc" not in preload:
        libs = _package_dir("vllm") / "libs"
        for pattern in ("libtcmalloc_minimal*.so*", "libtcmalloc.so*"):
            if found := glob.glob(str(libs / pattern)):
                return f"{found[0]}:{preload}" if preload else found[0]
    return preload


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return Path("/nonexistent")
    return Path(next(iter(spec.submodule_search_locations)))


def _worker_cpus(environ: Mapping[str, str]) -> list[int] | None:
    """The CPUs of the first worker's threads: vLLM's automatic choice (one logical CPU per
    physical core on x86, every one on Arm, the last `VLLM_CPU_NUM_OF_RESERVED_CPU` kept for
    the engine core and the app) or the first list given."""
    binding = environ.get("VLLM_CPU_OMP_THREADS_BIND", "auto")
    if binding == "nobind":
        return []
    if binding != "auto":
        return _id_list(binding.split("|")[0])
    allowed = sorted(os.sched_getaffinity(0))
    if _architecture() == "x86":
        last_of_core: dict[tuple[str, str], int] = {}
        for cpu in allowed:
            last_of_core[_physical_core(cpu)] = cpu  # the highest id of each core
        allowed = sorted(last_of_core.values())
    reserved = int(environ.get("VLLM_CPU_NUM_OF_RESERVED_CPU", "1"))
    return allowed[: len(allowed) - reserved] if len(allowed) > reserved else allowed


def _physical_core(cpu: int) -> tuple[str, str]:
    topology = _CPUS / f"cpu{cpu}" / "topology"
    try:
        return (topology / "physical_package_id").read_text().strip(), (
            topology / "core_id"
        ).read_text().strip()
    except OSError:
        return str(cpu), ""


def _numa_nodes() -> list[str]:
    return [
        path.name
        for path in Path("/sys/devices/system/node").glob("node*")
        if re.fullmatch(r"node\d+", path.name)
    ]


def _id_list(text: str) -> list[int]:
    """A CPU list as vLLM reads one: "5,2-4" is [5, 2, 3, 4]."""
    ids: list[int] = []
    for part in filter(None, (part.strip() for part in text.split(","))):
        first, _, last = part.partition("-")
        ids.extend(range(int(first), int(last or first) + 1))
    return ids
