"""One benchmark run in a process of its own (`backend.bench.worker`), so no run inherits another's
cache or memory: its spec and log in a folder, a time limit, its result read back."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

RUN_TIMEOUT_S = 3600


def spec_mode(spec: dict) -> str:
    """What a run compares, as its log's name says it: caching or speculation, off or on."""
    if spec.get("knowledge_path"):
        return f"{spec['knowledge_path']}-caching-{'on' if spec['caching'] else 'off'}"
    if spec.get("kv_tier") is not None:
        return f"kv-tier-{spec['kv_tier']}"
    if spec.get("speculation") is not None:
        return f"speculation-{'on' if spec['speculation'] else 'off'}"
    return f"caching-{'on' if spec['caching'] else 'off'}"


def run_worker(spec: dict, folder: Path, index: int) -> dict:
    name = f"{index:02d}-{spec['way']}-{spec_mode(spec)}"
    spec = {**spec, "out": str(folder / f"{name}.json")}
    spec_path = folder / f"{name}.spec.json"
    spec_path.write_text(json.dumps(spec))
    log = folder / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603 (our own interpreter and module)
            [sys.executable, "-m", "backend.bench.worker", str(spec_path)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, to stop with its engine and servers
        )
        try:
            returncode: int | str = process.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            # An engine whose worker died (e.g. killed for memory) can leave the run waiting forever.
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            returncode = f"timeout after {RUN_TIMEOUT_S} s"
    if returncode != 0:
        tail = log.read_text(errors="replace")[-4000:]
        raise RuntimeError(f"benchmark run {name} failed (log {log}):\n{tail}")
    return json.loads(Path(spec["out"]).read_text())
