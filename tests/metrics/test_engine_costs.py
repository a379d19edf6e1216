"""Each kind of engine request's cost in /metrics (engine/metered.py): a turn's reply and its
judges are counted apart, and a stream closed early still aborts the engine's request."""

import contextlib

from prometheus_client import REGISTRY

from backend.engine.interface import TokenDelta
from backend.engine.metered import MeteredEngine, kind_of
from tests.helpers import open_conversation, take_turn


def counted(name: str, kind: str) -> float:
    return REGISTRY.get_sample_value(f"prefixdesk_engine_{name}_total", {"kind": kind}) or 0.0


def test_the_kind_is_the_request_ids_first_word():
    assert kind_of("reply-41-again") == "reply" and kind_of("supported-7") == "supported"
    assert kind_of(None) == "other"


async def test_a_turns_reply_and_judges_are_counted_by_kind(services):
    before = {kind: counted("requests", kind) for kind in ("reply", "handoff")}
    computed = counted("computed_tokens", "reply")
    cid = (await open_conversation(services)).conversation.id
    await take_turn(services, cid, "Where is my order?")
    assert counted("requests", "reply") == before["reply"] + 1
    assert counted("requests", "handoff") == before["handoff"] + 1  # the gate, beside the reply
    assert counted("computed_tokens", "reply") > computed  # the question at least was not cached


async def test_closing_a_metered_stream_aborts_the_engines_request(tiny_engine, tiny_model_dir):
    from transformers import AutoTokenizer

    prompt = AutoTokenizer.from_pretrained(tiny_model_dir).encode("Tell me a long story " * 5)
    metered = MeteredEngine(tiny_engine)
    before = counted("requests", "story")
    async with contextlib.aclosing(metered.stream(prompt, max_tokens=500, request_id="story-1")) as items:
        async for item in items:
            assert isinstance(item, TokenDelta)
            break
    # The aborted request frees its slot: a new request with the same id is accepted at once.
    async with contextlib.aclosing(metered.stream(prompt, max_tokens=2, request_id="story-1")) as items:
        assert [item async for item in items]
    assert counted("requests", "story") == before + 1  # only the request that finished
