"""What the conversation tests on the default model share."""

import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from backend.config import Settings
from backend.services import Services

# The default model's engine settings, kept when services are built on the shared engine.
DEFAULT_MODEL_SETTINGS = {
    "model",
    "kv_cache_gib",
    "max_model_len",
    "max_num_batched_tokens",
    "max_reply_tokens",
}


@pytest.fixture
def shop_en_services(
    make_services: Any, default_engine: Any, default_settings: Settings, prompts_copy: Path
) -> Callable[..., Awaitable[Services]]:
    """Builds services on the default model's engine with only `shop-en` of the test's prompts
    copy (nothing else to warm), or on a wrapper of that engine; keyword arguments override settings.
    Replies stream as written (`answer_checks="off"`) unless a test asks otherwise: the openings'
    mechanics are tested on their own; checked replies in test_checked_answers.py."""
    for other in ("appliance-zh", "tallybook-en"):
        shutil.rmtree(prompts_copy / other)

    async def make(engine: Any = None, **settings: Any) -> Services:
        settings.setdefault("answer_checks", "off")
        return await make_services(
            engine=engine or default_engine,
            prompts_dir=prompts_copy,
            **default_settings.model_dump(include=DEFAULT_MODEL_SETTINGS),
            **settings,
        )

    return make
