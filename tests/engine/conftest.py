from collections.abc import AsyncIterator

import pytest

from backend.config import Settings
from backend.engine.vllm_engine import VllmEngine


@pytest.fixture(scope="module")
async def plain_vllm(tiny_settings: Settings) -> AsyncIterator[VllmEngine]:
    """The tiny model without speculative decoding, started for the module that asks for it:
    beside the shared engine, which drafts, and as it is just after its start."""
    engine = await VllmEngine.start(
        tiny_settings.model_copy(update={"speculative_method": "off"}), tiny_settings.model
    )
    yield engine
    engine.shutdown()
