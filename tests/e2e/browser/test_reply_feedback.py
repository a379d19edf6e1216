"""A customer's thumbs up or down on a bot reply, in real browsers (Debian's Chromium): given by
keyboard in the widget, shown live in the agent's console, counted on the admin page and in
the reports."""

import re
import uuid
from datetime import UTC, datetime

import httpx
import pytest
from playwright.async_api import expect

from backend.agents.models import AgentRole
from tests.support import SCREENSHOTS, client_app, eventually, make_agent

FOCUSED_IN_WIDGET = """() => {
  const inner = document.activeElement?.shadowRoot?.activeElement;
  return inner ? inner.getAttribute("aria-label") || inner.tagName.toLowerCase() : null;
}"""
# The admin page's replies table: bot -> [helpful, not helpful], as shown.
FEEDBACK_TABLE = """() => Object.fromEntries(
  [...document.querySelectorAll("#replies-per-bot tbody tr")]
    .filter((row) => row.cells.length === 6)
    .map((row) => [row.cells[0].textContent, [row.cells[3].textContent, row.cells[4].textContent]]),
)"""


@pytest.fixture
async def pages(browser):
    """A page of its own for the customer, the agent and the admin."""
    contexts = [await browser.new_context(viewport={"width": 1280, "height": 900}) for _ in range(3)]
    yield [await context.new_page() for context in contexts]
    for context in contexts:
        await context.close()


def bearer(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


async def admin_figures(admin_page, live_url: str, headers: dict[str, str]) -> dict:
    """Signs the admin page in and returns its feedback table once it has been drawn."""
    await admin_page.goto(live_url + "/admin")
    await admin_page.fill("#admin-token", bearer(headers))
    await admin_page.click("text=Sign in")
    await expect(admin_page.locator("#updated")).to_have_text(re.compile(r"^updated "))
    return await admin_page.evaluate(FEEDBACK_TABLE)


async def test_a_customer_rates_a_reply_by_keyboard_and_staff_see_it(pages, live_url):
    customer, console, admin_page = pages
    csp_violations: list[str] = []
    customer.on(
        "console",
        lambda message: (
            csp_violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    began = datetime.now(UTC).isoformat()
    app = client_app(live_url)
    _, agent = await make_agent(app)
    _, admin = await make_agent(app, AgentRole.ADMIN)
    before = (await admin_figures(admin_page, live_url, admin)).get("shop-en", ["0", "0"])

    # The customer asks; the reply, once finished, has its thumbs (the greeting and the question none).
    marker = f"lantern{uuid.uuid4().hex[:8]}"
    await customer.goto(live_url + "/")
    await customer.get_by_role("button", name="Open chat").click()
    dialog = customer.get_by_role("dialog", name="Northwind Outfitters support")
    box = dialog.get_by_role("textbox", name="Type your message")
    await box.fill(f"Is the {marker} waterproof?")
    await box.press("Enter")
    log = dialog.get_by_role("log")
    reply = log.locator("[data-role=assistant]").nth(1)
    rating = reply.get_by_role("group", name="Rate this reply")
    helpful = rating.get_by_role("button", name="Helpful", exact=True)
    not_helpful = rating.get_by_role("button", name="Not helpful", exact=True)
    await expect(helpful).to_have_attribute("aria-pressed", "false")
    await expect(not_helpful).to_have_attribute("aria-pressed", "false")
    await expect(log.get_by_role("button", name="Helpful", exact=True)).to_have_count(1)
    reply_id = int(await reply.get_attribute("data-message-id"))

    # The agent has the conversation open before the customer rates: it changes live.
    await console.goto(live_url + "/console")
    await console.get_by_label("API token").fill(bearer(agent))
    await console.get_by_role("button", name="Sign in").click()
    await expect(console.locator("#live-state")).to_have_attribute("data-state", "live")
    await console.get_by_label("Search messages").fill(marker)
    await expect(console.locator("#page-info")).to_have_text("1–1 of 1")
    await console.locator("#conversation-list button.row").first.click()
    shown = console.locator(f'#transcript li[data-message-id="{reply_id}"]')
    await expect(shown).to_be_visible()
    await expect(shown.locator(".feedback")).to_have_count(0)

    # By keyboard, from the message box: back past the reply's "Not helpful" to "Helpful", Enter.
    await box.focus()
    await customer.keyboard.press("Shift+Tab")
    assert await customer.evaluate(FOCUSED_IN_WIDGET) == "Not helpful"
    await customer.keyboard.press("Shift+Tab")
    assert await customer.evaluate(FOCUSED_IN_WIDGET) == "Helpful"
    await customer.keyboard.press("Enter")
    await expect(helpful).to_have_attribute("aria-pressed", "true")
    await expect(rating).to_contain_text("Thanks for your feedback.")
    await expect(shown.locator(".feedback")).to_have_text("Customer feedback: Helpful")
    await expect(console.locator("#announcer")).to_have_text("The customer rated a reply: Helpful.")

    # The customer changes their mind with Tab and Space.
    await customer.keyboard.press("Tab")
    assert await customer.evaluate(FOCUSED_IN_WIDGET) == "Not helpful"
    await customer.keyboard.press("Space")
    await expect(not_helpful).to_have_attribute("aria-pressed", "true")
    await expect(helpful).to_have_attribute("aria-pressed", "false")
    await expect(shown.locator(".feedback")).to_have_text("Customer feedback: Not helpful")
    await expect(shown.locator(".feedback svg")).to_have_attribute("aria-hidden", "true")
    await customer.screenshot(path=SCREENSHOTS / "widget-feedback.png")
    await console.screenshot(path=SCREENSHOTS / "console-feedback.png")

    # A reload shows the rating the customer gave.
    await customer.reload()
    await customer.get_by_role("button", name="Open chat").click()
    await expect(not_helpful).to_have_attribute("aria-pressed", "true")
    await expect(helpful).to_have_attribute("aria-pressed", "false")

    # The admin page counts it for the bot; the reports count it too.
    expected = [before[0], str(int(before[1]) + 1)]

    async def counted() -> bool:
        return (await admin_page.evaluate(FEEDBACK_TABLE)).get("shop-en") == expected

    await eventually(counted, timeout_s=30, what=f"the admin page shows shop-en {expected}")
    await admin_page.screenshot(path=SCREENSHOTS / "admin-feedback.png", full_page=True)
    async with httpx.AsyncClient(base_url=live_url) as staff:
        params = {"from": began, "bot": "shop-en"}
        figures = (await staff.get("/api/v1/reports/replies", headers=agent, params=params)).json()
        report = (await staff.get("/api/v1/reports", headers=agent, params=params)).json()
    rated = figures["per_bot"]["shop-en"]
    assert (rated["up"], rated["down"], rated["up_share"]) == (0, 1, 0.0)
    assert report["per_bot"]["shop-en"]["replies"] == rated
    assert csp_violations == []


async def test_the_thumbs_speak_chinese_on_the_chinese_bot(page, live_url):
    await page.goto(live_url + "/?bot=appliance-zh")
    await page.get_by_role("button", name="打开聊天").click()
    dialog = page.get_by_role("dialog", name="暖风家电客服")
    box = dialog.get_by_role("textbox", name="输入您的消息")
    await box.fill("空调可以免费安装吗？")
    await box.press("Enter")
    rating = dialog.get_by_role("group", name="评价这条回复")
    helpful = rating.get_by_role("button", name="有帮助", exact=True)
    not_helpful = rating.get_by_role("button", name="没有帮助", exact=True)
    await expect(not_helpful).to_have_attribute("aria-pressed", "false")
    await helpful.press("Enter")
    await expect(helpful).to_have_attribute("aria-pressed", "true")
    await expect(rating).to_contain_text("感谢您的反馈。")
