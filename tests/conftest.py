"""Shared fixtures: real Postgres, real Redis and one real vLLM engine per test session."""

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import redis.asyncio as aioredis

from backend.config import Settings
from backend.engine.model_store import fetch_default_model
from backend.engine.tiny_model import build_tiny_model
from backend.engine.vllm_engine import VllmEngine
from backend.migrate import upgrade
from tests.support import (
    CACHE_DIR,
    REDIS_URL,
    TEST_DATABASE,
    copy_prompts,
    drop_database,
    recreate_database,
    running_app,
)


@pytest.fixture(scope="session")
def default_model_dir() -> Path:
    return fetch_default_model(CACHE_DIR)


@pytest.fixture(scope="session")
def default_tokenizer(default_model_dir: Path):
    """The default model's tokenizer, for tests of prompts and chat templates (not the app's own)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(default_model_dir)


@pytest.fixture(scope="session")
def tiny_model_dir(default_model_dir: Path) -> Path:
    return build_tiny_model(default_model_dir, CACHE_DIR / "models" / "tiny-qwen2")


@pytest.fixture
def prompts_copy(tmp_path: Path) -> Path:
    """The shipped prompts/ copied for one test to edit."""
    return copy_prompts(tmp_path)


@pytest.fixture(scope="session")
async def database_url() -> AsyncIterator[str]:
    url = await recreate_database(TEST_DATABASE)
    await asyncio.to_thread(upgrade, url)
    yield url
    await drop_database(TEST_DATABASE)


@pytest.fixture(scope="session")
def redis_prefix() -> str:
    return f"prefixdesk-test-{uuid.uuid4().hex[:8]}:"


@pytest.fixture(scope="session", autouse=True)
async def _clean_redis(redis_prefix: str) -> AsyncIterator[None]:
    yield
    client = aioredis.Redis.from_url(REDIS_URL)
    keys = [key async for key in client.scan_iter(f"{redis_prefix}*")]
    if keys:
        await client.delete(*keys)
    await client.aclose()


@pytest.fixture(scope="session")
def tiny_settings(tiny_model_dir: Path, database_url: str, redis_prefix: str) -> Settings:
    return Settings(
        model=tiny_model_dir,
        database_url=database_url,
        redis_url=REDIS_URL,
        redis_key_prefix=redis_prefix,
        kv_cache_gib=1,
        max_model_len=2048,
        max_num_batched_tokens=2048,
        max_reply_tokens=8,
        # Every test client is 127.0.0.1: the per-address limit has its own test.
        rate_limit_requests_per_address=1_000_000,
        cache_dir=CACHE_DIR,
    )


@pytest.fixture(scope="session")
async def tiny_engine(tiny_settings: Settings) -> AsyncIterator[VllmEngine]:
    engine = await VllmEngine.start(tiny_settings, tiny_settings.model)
    yield engine
    engine.shutdown()


@pytest.fixture
async def client(tiny_settings: Settings, tiny_engine: VllmEngine) -> AsyncIterator[httpx.AsyncClient]:
    async with running_app(tiny_settings, tiny_engine) as client:
        yield client
