"""A vLLM plugin: the requests one chat turn sends together start in the same engine step.

vLLM's engine core, when idle, wakes on the first request that reaches it and runs a step
for that request alone; a request sent a millisecond later waits for the whole step. A turn
sends its reply and its handoff judges together and shows the reply only once the judges
have answered, so on an idle engine their verdict came one step after the reply's first
token (about 200 ms on two CPU cores). Here the engine core, woken from idle, goes on taking
the requests that arrive until none has for `ENV` milliseconds (at most `MOST_WINDOWS` such
windows), then steps. A busy engine is left alone: what arrives during a step is all taken
before the next one anyway.

vLLM loads it in each of its processes (the `vllm.general_plugins` entry point), the
embedded engine's and a `vllm serve` replica's alike; it acts in the engine core's only.
"""

import logging
import os
import queue
import time
from typing import Any

from backend.config import Settings

logger = logging.getLogger(__name__)

ENV = "PREFIXDESK_ENGINE_GATHER_MS"  # Settings.engine_gather_ms, passed on by engine_environment
MOST_WINDOWS = 5  # a steady trickle of requests does not keep an idle engine from stepping


def register() -> None:
    # Unset where vLLM was started by hand (a `vllm serve` replica): the setting's default.
    window_s = float(os.environ.get(ENV, Settings.model_fields["engine_gather_ms"].default)) / 1000
    if window_s <= 0:
        return
    from vllm.v1.engine.core import EngineCoreProc

    if getattr(EngineCoreProc, "gathers_requests", False):  # loaded twice in one process
        return
    process_input_queue = EngineCoreProc._process_input_queue

    def _process_input_queue(core: Any) -> None:
        idle = not core.has_work()
        process_input_queue(core)
        if idle and core.has_work():
            gather(core, window_s)

    EngineCoreProc._process_input_queue = _process_input_queue
    EngineCoreProc.gathers_requests = True
    logger.debug("the engine core gathers requests for %.1f ms after waking", window_s * 1000)


def gather(core: Any, window_s: float) -> None:
    """Take the requests that keep arriving, until a window passes without one."""
    deadline = time.monotonic() + window_s * MOST_WINDOWS
    while (left := deadline - time.monotonic()) > 0:
        try:
            request = core.input_queue.get(timeout=min(window_s, left))
        except queue.Empty:
            return
        core._handle_client_request(*request)
