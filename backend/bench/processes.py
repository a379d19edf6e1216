"""One benchmark run in a process of its own (`backend.bench.worker`), so no run inherits another's
cache or memory: its spec and log in a folder, a time limit, its result read back."""

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

RUN_TIMEOUT_S = 3600
# A run stopped by hand: time for it to stop its app server (up to a minute, `Server.stop`).
STOP_GRACE_S = 90


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
    returncode = run_in_group([sys.executable, "-m", "backend.bench.worker", str(spec_path)], log)
    if returncode != 0:
        tail = log.read_text(errors="replace")[-4000:]
        raise RuntimeError(f"benchmark run {name} failed (log {log}):\n{tail}")
    return json.loads(Path(spec["out"]).read_text())


def run_in_group(command: list[str], log: Path, timeout_s: float = RUN_TIMEOUT_S) -> int | str:
    """Run `command` in a process group of its own, its output in `log`; its exit code. Past
    `timeout_s`, or when this process is stopped while it runs, the group goes with it: a
    benchmark stopped by hand leaves no engine or server behind."""
    with log.open("wb") as out:
        process = subprocess.Popen(  # noqa: S603 (our own interpreter and module)
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            return process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            # An engine whose worker died (e.g. killed for memory) can leave the run waiting forever.
            stop_group(process, grace_s=0)
            return f"timeout after {timeout_s:.0f} s"
        except BaseException:  # Ctrl-C, or SIGTERM (`stop_on_sigterm`)
            stop_group(process)
            raise


def stop_group(process: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM to the process's group, so it stops the servers it started (each in a group of its
    own); SIGKILL to what is left after `grace_s`."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM if grace_s else signal.SIGKILL)
    try:
        process.wait(timeout=grace_s or None)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def stop_on_sigterm() -> None:
    """SIGTERM unwinds this process as Ctrl-C does, so what it started is stopped on the way out
    (Python's default for SIGTERM is to end at once, leaving its servers running)."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
