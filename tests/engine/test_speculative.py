"""Speculative decoding by prompt lookup on the real engine: the same replies, the same cache."""

import json

import pytest

from backend.config import Settings
from backend.engine.interface import GenerationResult, SampleProgress
from backend.engine.vllm_engine import VllmEngine
from backend.engine.vllm_options import cli_flags, engine_options

# Text that repeats, so the engine finds n-grams of the reply in the prompt and drafts from them.
QUOTED = "Customers may return any unused item within 45 days of delivery for a full refund. " * 6


def test_one_setting_gives_the_embedded_engine_and_the_replicas_the_same_drafts(tmp_path):
    assert Settings().speculative_method == "ngram"
    settings = Settings(max_num_seqs=32, speculative_max_batch=8, speculative_method="ngram")
    config = engine_options(settings, tmp_path)["speculative_config"]
    assert config["method"] == "ngram" and config["num_speculative_tokens"] == 5
    # Above 8 requests in a step, no drafts.
    assert config["num_speculative_tokens_per_batch_size"] == [[1, 8, 5], [9, 32, 0]]
    flags = cli_flags(engine_options(settings, tmp_path))
    assert json.loads(flags[flags.index("--speculative-config") + 1]) == config
    assert (
        "num_speculative_tokens_per_batch_size"
        not in engine_options(settings.model_copy(update={"speculative_max_batch": 0}), tmp_path)[
            "speculative_config"
        ]
    )
    off = settings.model_copy(update={"speculative_method": "off"})
    assert engine_options(off, tmp_path)["speculative_config"] is None
    assert "--speculative-config" not in cli_flags(engine_options(off, tmp_path))


async def reply(engine: VllmEngine, prompt: list[int], max_tokens: int = 48) -> GenerationResult:
    async for item in engine.stream(prompt, max_tokens=max_tokens, cache_salt="speculative-test"):
        if isinstance(item, GenerationResult):
            result = item
    return result


async def test_replies_and_cached_tokens_are_the_same_with_and_without_speculation(
    tiny_settings, tiny_vllm, plain_vllm
):
    from transformers import AutoTokenizer

    assert tiny_settings.speculative_method == "ngram"  # the shared engine drafts (conftest.py)
    tokenizer = AutoTokenizer.from_pretrained(tiny_settings.model)
    opening = tokenizer.encode(f"<|im_start|>system\n{QUOTED}<|im_end|>\n<|im_start|>user\n")
    drafted_before = tiny_vllm.stats.draft_tokens
    for question in ("How long may I return an item?", "What does a full refund cover?"):
        first_prompt = opening + tokenizer.encode(f"{question}<|im_end|>\n<|im_start|>assistant\n")
        turns = []
        for engine in (tiny_vllm, plain_vllm):
            first = await reply(engine, first_prompt)
            # The next turn extends the first: what it finds cached is the first turn's accounting.
            second_prompt = [
                *first_prompt,
                *first.token_ids,
                *tokenizer.encode("<|im_end|>\n<|im_start|>user\nAnd?"),
            ]
            second = await reply(engine, second_prompt, max_tokens=8)
            turns.append((first, second))
        (fast, fast_next), (plain, plain_next) = turns
        assert fast.token_ids == plain.token_ids and fast.text == plain.text
        assert fast_next.token_ids == plain_next.token_ids
        assert (fast.cached_tokens, fast_next.cached_tokens) == (
            plain.cached_tokens,
            plain_next.cached_tokens,
        )
        assert (
            fast_next.cached_tokens
            >= len(first_prompt) // tiny_settings.block_size * tiny_settings.block_size
        )
    assert tiny_vllm.stats.draft_tokens > drafted_before  # the engine did speculate
    assert plain_vllm.stats.draft_tokens == 0


async def test_a_greedy_reply_beside_samples_is_the_same_while_the_engine_drafts(tiny_settings, tiny_vllm):
    # vLLM's CPU build divided every drafting step's logits by uninitialised memory once a
    # sampled request shared the step (backend/engine/sampled_drafts.py fixes it).
    import asyncio

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_settings.model)
    prompt = tokenizer.encode(f"<|im_start|>system\n{QUOTED}<|im_end|>\n<|im_start|>user\nOK?<|im_end|>\n")
    alone = await reply(tiny_vllm, prompt)
    drafted_before = tiny_vllm.stats.draft_tokens
    options = {"n": 4, "max_tokens": 48, "temperature": 0.8, "seed": 5, "cache_salt": "speculative-test"}
    beside, samples = await asyncio.gather(reply(tiny_vllm, prompt), tiny_vllm.sample(prompt, **options))
    assert tiny_vllm.stats.draft_tokens > drafted_before  # drafted while the samples were written
    assert beside.token_ids == alone.token_ids
    assert len(samples) == 4 and len(set(samples)) > 1


async def test_label_reads_are_the_same_with_and_without_speculation(tiny_settings, tiny_vllm, plain_vllm):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_settings.model)
    prompt = tokenizer.encode(f"<|im_start|>user\n{QUOTED} Is that right?<|im_end|>\n<|im_start|>assistant\n")
    labels = [tokenizer.encode(word)[0] for word in ("yes", "Yes", "no", "No")]
    fast = await tiny_vllm.read_labels(prompt, labels, cache_salt="speculative-test")
    plain = await plain_vllm.read_labels(prompt, labels, cache_salt="speculative-test")
    assert fast.logprobs == pytest.approx(plain.logprobs, abs=1e-4)
    assert all(value <= 0 for value in fast.logprobs)


async def test_samples_come_from_one_request_and_the_same_seed_gives_the_same(tiny_settings, plain_vllm):
    # Sampling beside the greedy reply (turns/agreement.py).
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_settings.model)
    prompt = tokenizer.encode(f"<|im_start|>system\n{QUOTED}<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n")
    options = {"n": 4, "max_tokens": 12, "temperature": 0.8, "cache_salt": "samples-test"}
    first = await plain_vllm.sample(prompt, seed=7, **options)
    again = await plain_vllm.sample(prompt, seed=7, **options)
    other = await plain_vllm.sample(prompt, seed=8, **options)
    assert len(first) == 4 and first == again
    assert len(set(first)) > 1 and other != first  # each sample its own draw


async def test_samples_stop_once_they_are_enough(tiny_settings, plain_vllm):
    # A reply that ended short needs only as much of its samples (turns/agreement.py): the
    # request stops there, and what was written is what the same seed writes first.
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_settings.model)
    prompt = tokenizer.encode(f"<|im_start|>system\n{QUOTED}<|im_end|>\n<|im_start|>user\nhey<|im_end|>\n")
    options = {"n": 3, "max_tokens": 24, "temperature": 0.8, "seed": 3, "cache_salt": "samples-enough"}
    whole = await plain_vllm.sample(prompt, **options)
    short = await plain_vllm.sample(prompt, enough=lambda: 4, **options)
    assert len(short) == 3
    assert all(whole_text.startswith(short_text) for whole_text, short_text in zip(whole, short, strict=True))
    assert sum(map(len, short)) < sum(map(len, whole))
    # As they are written, each sample's pieces and tokens: a reply so far compares with as
    # many of a sample's first tokens as it needs (turns/release.py).
    progress = SampleProgress(3)
    again = await plain_vllm.sample(prompt, progress=progress, **options)
    assert again == whole and progress.texts() == whole
    assert all(progress.tokens(i) == 24 or progress.ended[i] for i in range(3))
    assert all(text.startswith(part) for text, part in zip(whole, progress.texts(within=4), strict=True))
