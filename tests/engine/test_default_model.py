"""The real default model through the whole app: answers from the policy, hits the cache."""

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from backend.config import Settings
from backend.engine.vllm_engine import VllmEngine
from tests.helpers import done_event, send, start
from tests.support import running_app

pytestmark = pytest.mark.default_model


@pytest.fixture(scope="module")
async def default_client(
    default_model_dir: Path, tiny_settings: Settings
) -> AsyncIterator[httpx.AsyncClient]:
    settings = tiny_settings.model_copy(
        update={
            "model": default_model_dir,
            "kv_cache_gib": 2,
            "max_model_len": 4096,
            "max_num_batched_tokens": 4096,
            "max_reply_tokens": 64,
        }
    )
    engine = await VllmEngine.start(settings, default_model_dir)
    try:
        async with running_app(settings, engine) as client:
            yield client
    finally:
        engine.shutdown()


async def test_the_bot_states_the_policy_and_its_second_turn_hits_the_cache(default_client):
    conversation = await start(default_client, "shop-en")
    first = done_event(await send(default_client, conversation, "How many days do I have to return an item?"))
    assert "45" in first["text"], first["text"]
    second = done_event(await send(default_client, conversation, "Do you ship to Canada?"))
    assert second["cached_tokens"] >= first["prompt_tokens"] - 32, (first, second)
    assert "not" in second["text"].lower() or "no" in second["text"].lower(), second["text"]


async def test_the_chinese_bot_answers_from_its_policy(default_client):
    conversation = await start(default_client, "appliance-zh")
    assert conversation["greeting"] == "您好，请问有什么可以帮您？"
    reply = done_event(await send(default_client, conversation, "你们的服务热线是多少？"))
    assert "400-820-1357" in reply["text"], reply["text"]
