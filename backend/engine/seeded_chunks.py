"""A vLLM plugin: a seeded request whose prompt takes more than one engine step no longer
kills vLLM's CPU build.

When a step computes only part of a prompt, vLLM's model runner still samples a token for
it, drops the token, and winds the request's own random generator back as if it had not
drawn: `gen.set_offset(gen.get_offset() - 4)` (`GPUModelRunner._bookkeeping_sync`). That is
the CUDA generator's arithmetic. A CPU generator has no offset and raises "CPU Generator does
not use offset"; the worker dies, and the engine with every request in it. Seeded requests
are the answer samples (`backend/turns/agreement.py`), and a prompt is split over steps
whenever more of it is uncached than a step takes (`long_prefill_tokens`, or a burst sharing
`max_num_batched_tokens`): caching off, a help center evicted, a long first message.

Here the CPU model runner keeps those generators out of the rewind and gives them back the
state they had before the dropped draw, which is what the rewind means. vLLM loads this in
each of its processes (the `vllm.general_plugins` entry point); it acts where the CPU model
runner runs. The CUDA build's runner is left as it is.
"""

import logging
from typing import Any

logger = logging.getLogger(__name__)


def register() -> None:
    try:
        from vllm.v1.worker.cpu_model_runner import CPUModelRunner
    except ImportError:  # not the CPU build
        return
    if getattr(CPUModelRunner, "restores_dropped_draws", False):  # loaded twice in one process
        return
    sample_tokens = CPUModelRunner.sample_tokens
    bookkeeping_sync = CPUModelRunner._bookkeeping_sync

    def _sample_tokens(runner: Any, *args: Any, **kwargs: Any) -> Any:
        dropped = dropped_draws(runner)
        states = {index: generator.get_state() for index, generator in dropped.items()}
        runner.dropped_draws = dropped
        try:
            return sample_tokens(runner, *args, **kwargs)
        finally:
            runner.dropped_draws = {}
            for index, generator in dropped.items():
                generator.set_state(states[index])

    def _bookkeeping_sync(runner: Any, *args: Any, **kwargs: Any) -> Any:
        generators = runner.input_batch.generators
        kept_out = {index: generators.pop(index) for index in getattr(runner, "dropped_draws", {})}
        try:
            return bookkeeping_sync(runner, *args, **kwargs)
        finally:
            generators.update(kept_out)

    CPUModelRunner.sample_tokens = _sample_tokens
    CPUModelRunner._bookkeeping_sync = _bookkeeping_sync
    CPUModelRunner.restores_dropped_draws = True
    logger.debug("seeded requests split over engine steps keep their random draws")


def dropped_draws(runner: Any) -> dict[int, Any]:
    """The CPU generators of the requests whose token this step samples and drops: those
    whose prompt the step computes only in part."""
    if getattr(runner, "execute_model_state", None) is None:
        return {}
    generators = runner.input_batch.generators
    partial = runner.discard_request_mask.np[: runner.input_batch.num_reqs]
    return {
        index: generators[index]
        for index in (int(i) for i in partial.nonzero()[0])
        if index in generators and generators[index].device.type == "cpu"
    }
