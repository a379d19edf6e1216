"""Seeded samples of a prompt the engine computes over several steps: the engine lives on, and
the samples are what they are when the prompt is computed the same way again."""

import uuid
from importlib.metadata import entry_points

from backend.engine.vllm_engine import VllmEngine

# Longer than a step computes of one uncached prompt (`long_prefill_tokens`, 1024 by default).
PROMPT_TOKENS = 1500


def test_the_plugin_is_what_vllm_loads():
    plugins = {entry.name: entry.value for entry in entry_points(group="vllm.general_plugins")}
    assert plugins["prefixdesk_seeded_chunks"] == "backend.engine.seeded_chunks:register"


async def test_seeded_samples_of_a_prompt_split_over_steps_leave_the_engine_alive(tiny_vllm: VllmEngine):
    prompt = [100 + (i * 7919) % 2000 for i in range(PROMPT_TOKENS)]

    async def samples(salt: str) -> list[str]:
        return await tiny_vllm.sample(prompt, n=3, max_tokens=6, temperature=1.0, seed=7, cache_salt=salt)

    salt = uuid.uuid4().hex  # a salt of its own: nothing of the prompt is cached, so it takes two steps
    split = await samples(salt)
    assert not tiny_vllm.is_dead  # vLLM's CPU build died here: "CPU Generator does not use offset"
    assert len(split) == 3 and len(set(split)) > 1  # drawn, not greedy
    # Now cached, the prompt takes one step: the first step's dropped draw had been given back.
    assert await samples(salt) == split
