"""The browser tier's fixtures: Debian's Chromium, a page, and the app served on loopback."""

from collections.abc import AsyncIterator

import httpx
import pytest
from pydantic import SecretStr

from backend.config import Settings
from backend.engine.interface import Engine
from tests.support import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS, served, wait_ready

# The secret the shop's server signs customer identities with, for `identity_live_url`.
IDENTITY_SECRET = "browser-tests-identity-secret"


@pytest.fixture(autouse=True)
def _patient_expectations():
    """Other test runs share this machine's two cores: a reply can take a few seconds, so
    Playwright's expectations wait 30 s, not 5 (a module may set its own)."""
    from playwright.async_api import expect

    expect.set_options(timeout=30_000)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    yield
    expect.set_options(timeout=5_000)


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
async def live_url(tiny_settings: Settings, tiny_engine: Engine) -> AsyncIterator[str]:
    """The app served on loopback, ready, for the browser."""
    async with served(tiny_settings, tiny_engine) as url, httpx.AsyncClient(base_url=url) as client:
        await wait_ready(client)
        yield url


@pytest.fixture
async def identity_live_url(tiny_settings: Settings, tiny_engine: Engine) -> AsyncIterator[str]:
    """The app served on loopback with an identity secret: shops may sign who their customer is."""
    settings = tiny_settings.model_copy(update={"identity_secret": SecretStr(IDENTITY_SECRET)})
    async with served(settings, tiny_engine) as url, httpx.AsyncClient(base_url=url) as client:
        await wait_ready(client)
        yield url
