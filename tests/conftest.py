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
    CHROMIUM,
    CHROMIUM_ARGS,
    REDIS_URL,
    TEST_DATABASE,
    drop_database,
    recreate_database,
    running_app,
    served,
    wait_ready,
)


@pytest.fixture(scope="session")
def default_model_dir() -> Path:
    return fetch_default_model(CACHE_DIR)


@pytest.fixture(scope="session")
def tiny_model_dir(default_model_dir: Path) -> Path:
    return build_tiny_model(default_model_dir, CACHE_DIR / "models" / "tiny-qwen2")


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


@pytest.fixture(scope="session")
async def browser():
    """Debian's Chromium, driven by Playwright (no browser download)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        await browser.close()


@pytest.fixture
async def page(browser):
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    page = await context.new_page()
    yield page
    await context.close()


@pytest.fixture
async def live_url(tiny_settings: Settings, tiny_engine: VllmEngine) -> AsyncIterator[str]:
    """The app served on loopback, ready, for the browser."""
    async with served(tiny_settings, tiny_engine) as url, httpx.AsyncClient(base_url=url) as client:
        await wait_ready(client)
        yield url
