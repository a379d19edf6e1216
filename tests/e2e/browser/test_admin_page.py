"""The admin page in a real browser (Debian's Chromium): sign-in and figures that move with traffic."""

import httpx
import pytest

from backend.agents.models import AgentRole
from tests.helpers import done_event, send, start
from tests.support import SCREENSHOTS, client_app, make_agent


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 900}])
async def test_the_admin_page_shows_numbers_that_move_with_traffic(browser, live_url, viewport):
    _, admin = await make_agent(client_app(live_url), AgentRole.ADMIN)
    context = await browser.new_context(viewport=viewport)
    page = await context.new_page()
    await page.goto(live_url + "/admin")
    await page.fill("#admin-token", "pdk_wrong")
    await page.click("text=Sign in")
    await page.wait_for_selector("text=not a valid agent API token")
    await page.fill("#admin-token", admin["Authorization"].removeprefix("Bearer "))
    await page.click("text=Sign in")
    await page.wait_for_function("() => (document.getElementById('replies')?.textContent ?? '–') !== '–'")
    before = int(await page.text_content("#replies"))
    async with httpx.AsyncClient(base_url=live_url, timeout=60) as customer:
        conversation = await start(customer)
        for question in ("Is return shipping free?", "How long is the warranty?", "Thanks"):
            done_event(await send(customer, conversation, question))
    grown = f"() => Number(document.getElementById('replies').textContent) >= {before + 3}"
    await page.wait_for_function(grown)
    assert (await page.text_content("#hit-rate")).endswith("%")
    assert "vLLM since start:" in await page.text_content("#hit-rate-sub")
    assert (await page.text_content("#reply-speed")).endswith("tokens/s")
    assert await page.locator("#per-bot tbody tr").count() >= 1
    assert await page.locator("#chart-total polyline").count() >= 1
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=SCREENSHOTS / "admin.png", full_page=True)
    await context.close()
