"""A benchmark run's process group: stopped with the benchmark, or past its time limit."""

import signal
import sys
import textwrap
from pathlib import Path

import pytest

from backend.bench.processes import run_in_group
from tests.support import eventually

# A run that starts a child of its own (as a worker starts its engine) and waits.
RUN = textwrap.dedent(
    """
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    open(sys.argv[1], "w").write(str(child.pid))
    time.sleep(600)
    """
)


class Stopped(Exception):
    """What a signal to the benchmark raises in it (Ctrl-C raises KeyboardInterrupt)."""


def _alive(pid: int) -> bool:
    """Running: not gone, and not a zombie waiting for whoever adopted it to reap it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


async def test_a_benchmark_stopped_while_a_run_goes_on_stops_the_run_and_what_it_started(tmp_path: Path):
    pid_file = tmp_path / "child.pid"

    def stop(signum: int, frame: object) -> None:
        raise Stopped

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, 2.0)  # once the run has started its child
    try:
        with pytest.raises(Stopped):
            run_in_group([sys.executable, "-c", RUN, str(pid_file)], tmp_path / "run.log", timeout_s=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    child = int(pid_file.read_text())
    await eventually(lambda: not _alive(child), timeout_s=10, what="the run's child stopped")


async def test_a_run_past_its_time_limit_is_killed_with_its_children(tmp_path: Path):
    pid_file = tmp_path / "child.pid"
    outcome = run_in_group([sys.executable, "-c", RUN, str(pid_file)], tmp_path / "run.log", timeout_s=2)
    assert outcome == "timeout after 2 s"
    await eventually(lambda: not _alive(int(pid_file.read_text())), timeout_s=10, what="the child killed")
