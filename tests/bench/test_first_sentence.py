"""The bare engine's time to a whole first sentence (bench/targets.py), the earliest a checked
word can be shown, and the ratio the benchmark's target reads from it."""

import asyncio
from types import SimpleNamespace

from backend.bench.caching_results import scenario_results
from backend.bench.targets import EngineTarget
from backend.engine.interface import GenerationResult, TokenDelta

PIECES = ["The warranty", " is 3", ".5 years", ".", " Zips", " are not covered."]


class PacedEngine:
    """Streams `PIECES` one per 50 ms, then the result."""

    async def stream(self, prompt, *, max_tokens, cache_salt):
        for index, piece in enumerate(PIECES):
            await asyncio.sleep(0.05)
            yield TokenDelta(piece, [index])
        text = "".join(PIECES)
        yield GenerationResult(text, list(range(len(PIECES))), "stop", len(prompt), 0, 0.05, 0.3)


class FixedIds:
    def prompt(self, history, text):
        return [1, 2, 3]

    def add_reply(self, history, token_ids):
        pass


async def test_the_first_sentence_ends_at_a_stop_then_a_space_not_inside_a_figure():
    reply = await EngineTarget(PacedEngine(), FixedIds(), 16).send(SimpleNamespace(salt=None), "hi")
    # "3.5" is a figure; the stop after "years" is known to end a sentence when " Zips" comes.
    assert 0.04 <= reply.ttft_s < 0.1
    assert 0.24 <= reply.first_sentence_s < 0.3 <= reply.total_s


def worker_output(way: str, ttft_ms: float, first_sentence_ms: float | None) -> dict:
    record = {
        "conversation": "c",
        "turn": 0,
        "ttft_ms": ttft_ms,
        "total_ms": 2 * ttft_ms,
        "prompt_tokens": 10,
        "cached_tokens": 8,
        "cacheable_tokens": 8,
        "completion_tokens": 5,
        "text": "ok",
        "first_sentence_ms": first_sentence_ms,
    }
    run = {
        "scenario": "article",
        "rate": None,
        "total_s": 1.0,
        "records": [record],
        "peak_rss_mib": 1.0,
        "peak_kv_cache_usage": 0.0,
        "load_avg_1m_at_start": 0.0,
    }
    return {"way": way, "caching": True, "engine_load_s": 1.0, "runs": [run]}


def test_the_app_s_first_word_is_compared_with_the_engine_s_first_sentence():
    ways = [worker_output("app", 900.0, None), worker_output("engine", 300.0, 600.0)]
    out = scenario_results("article", ways)
    assert out["app_vs_engine_ttft"] == 3.0  # the raw first tokens
    assert out["app_shown_vs_engine_sentence"] == 1.5  # the first checked word against its sentence
