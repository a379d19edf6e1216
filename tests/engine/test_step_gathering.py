"""The engine core, woken from idle, gathers the requests sent together into one step."""

import asyncio
import queue
import threading
import time
import uuid
from importlib.metadata import entry_points
from typing import Any

import pytest

from backend.config import Settings
from backend.engine.step_gathering import ENV, MOST_WINDOWS, gather
from backend.engine.vllm_engine import VllmEngine
from backend.engine.vllm_options import engine_environment


class Core:
    """What `gather` uses of vLLM's engine core: its input queue, and its handler."""

    def __init__(self) -> None:
        self.input_queue: queue.Queue[tuple[str, int]] = queue.Queue()
        self.handled: list[int] = []

    def _handle_client_request(self, kind: str, n: int) -> None:
        self.handled.append(n)


def test_it_takes_what_arrives_within_the_window_and_no_more():
    core = Core()
    core.input_queue.put(("add", 1))

    def late() -> None:
        time.sleep(0.002)
        core.input_queue.put(("add", 2))  # sent with the first: joins its step
        time.sleep(0.2)
        core.input_queue.put(("add", 3))  # sent later: waits for the next step

    sender = threading.Thread(target=late)
    sender.start()
    gather(core, window_s=0.05)
    assert core.handled == [1, 2]
    sender.join()


def test_a_steady_trickle_does_not_keep_it_from_stepping():
    core = Core()
    stop = threading.Event()

    def trickle() -> None:
        n = 0
        while not stop.is_set():
            core.input_queue.put(("add", n := n + 1))
            time.sleep(0.001)

    sender = threading.Thread(target=trickle)
    sender.start()
    started = time.monotonic()
    gather(core, window_s=0.01)
    took = time.monotonic() - started
    stop.set()
    sender.join()
    assert took < 0.01 * MOST_WINDOWS + 0.05


def test_the_setting_reaches_the_engine_and_vllm_loads_the_plugin():
    assert engine_environment(Settings(engine_gather_ms=0))[ENV] == "0.0"
    plugins = entry_points(group="vllm.general_plugins")
    assert "backend.engine.step_gathering:register" in {plugin.value for plugin in plugins}


async def test_requests_sent_together_to_an_idle_engine_start_in_the_same_step(
    tiny_vllm: VllmEngine, tiny_settings: Settings, monkeypatch: pytest.MonkeyPatch
):
    from vllm import SamplingParams

    llm = tiny_vllm._llm
    params = SamplingParams(max_tokens=1, temperature=0.0)
    sent: list[float] = []
    send = llm.engine_core.add_request_async
    # Each waits for the other, then they leave one right after the other, as from a process
    # that does not pause between them (it does for a millisecond or two on two loaded cores).
    both_ready = asyncio.Barrier(2)

    async def sending(request: Any) -> None:
        await both_ready.wait()
        sent.append(time.monotonic())
        await send(request)

    monkeypatch.setattr(llm.engine_core, "add_request_async", sending)

    async def scheduled_at(prompt: list[int]) -> float:
        final = None
        async for output in llm.generate({"prompt_token_ids": prompt}, params, uuid.uuid4().hex):
            final = output
        assert final is not None and final.metrics is not None
        return final.metrics.scheduled_ts

    together = 0
    for attempt in range(12):  # as a turn sends its reply and its judges
        await asyncio.sleep(0.1)  # the engine is idle
        sent.clear()
        reply, judge = await asyncio.gather(
            scheduled_at([100 + attempt, *range(200, 460)]), scheduled_at([7, 8, 9, attempt])
        )
        # This process paused between the two sends all the same (half the window: the engine's
        # side has its own jitter): they were not sent together.
        if max(sent) - min(sent) > tiny_settings.engine_gather_ms / 2000:
            continue
        assert reply == judge, f"attempt {attempt}: scheduled {abs(reply - judge) * 1000:.1f} ms apart"
        if (together := together + 1) == 6:
            return
    pytest.fail(f"only {together} of 12 attempts sent the two requests within the window")
