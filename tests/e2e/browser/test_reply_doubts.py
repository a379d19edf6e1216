"""A reply the checks flagged, in real browsers: the console says it may be wrong and why,
and the admin page counts it for its bot."""

import re
import uuid

import httpx
from playwright.async_api import expect

from backend.agents.models import AgentRole
from backend.conversations import repository
from tests.helpers import done_event, send, start
from tests.support import SCREENSHOTS, client_app, eventually, make_agent

DOUBTFUL_COUNT = """() => Object.fromEntries(
  [...document.querySelectorAll("#replies-per-bot tbody tr")]
    .filter((row) => row.cells.length === 6)
    .map((row) => [row.cells[0].textContent, row.cells[2].textContent]),
)"""


async def test_the_console_marks_a_doubtful_reply_and_the_admin_page_counts_it(browser, live_url):
    app = client_app(live_url)
    _, admin = await make_agent(app, AgentRole.ADMIN)
    marker = f"warranty{uuid.uuid4().hex[:8]}"
    async with httpx.AsyncClient(base_url=live_url, timeout=120) as widget:
        conversation = await start(widget, "shop-en")
        reply = done_event(await send(widget, conversation, f"How long is the {marker} on backpacks?"))
    # What the checks would have found had the model said "2 years" (tests/turns/test_checks.py
    # runs them on the engine): set on the stored reply, as the turn does when it settles.
    doubt = "2 year where the policy says 3 year"
    async with app.state.services.new_work() as work:
        (await repository.get_message(work.db, reply["message_id"])).doubt = doubt

    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    console, admin_page = await context.new_page(), await context.new_page()
    token = admin["Authorization"].removeprefix("Bearer ")
    await console.goto(live_url + "/console")
    await console.get_by_label("API token").fill(token)
    await console.get_by_role("button", name="Sign in").click()
    await console.get_by_label("Search messages").fill(marker)
    await expect(console.locator("#page-info")).to_have_text("1–1 of 1")
    await console.locator("#conversation-list button.row").first.click()
    shown = console.locator(f'#transcript li[data-message-id="{reply["message_id"]}"] .doubt')
    await expect(shown).to_have_text(f"May be wrong: {doubt}")
    await expect(shown).to_have_attribute("role", "note")
    await console.screenshot(path=SCREENSHOTS / "console-doubt.png")

    await admin_page.goto(live_url + "/admin")
    await admin_page.fill("#admin-token", token)
    await admin_page.click("text=Sign in")
    await expect(admin_page.locator("#updated")).to_have_text(re.compile(r"^updated "))

    async def counted() -> bool:
        shown = (await admin_page.evaluate(DOUBTFUL_COUNT)).get("shop-en", "0")
        return not shown.startswith("0 ")

    await eventually(counted, timeout_s=30, what="the admin page counts a doubtful shop-en reply")
    await context.close()
