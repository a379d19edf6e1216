"""A customer's rating where agents work, in Debian's Chromium under the pages' content security
policy: a customer rates a resolved conversation in the widget, and the agent's console shows the
score and the comment in the inbox row and the transcript (live, as text), filters the inbox to
the poor ratings, and opens the conversation from the link its rating event carries."""

from collections.abc import AsyncIterator

import httpx
import pytest
from playwright.async_api import BrowserContext, Page, expect

from tests.e2e.browser.test_console_page import XSS, row, screenshot, search, sign_in, unique_marker
from tests.helpers import auth, start
from tests.support import client_app, make_agent

API = "/api/v1/conversations"
SAVED_CONVERSATION = """(bot) => {
  const key = Object.keys(localStorage).find((name) => name.endsWith(`:${bot}`));
  return key ? JSON.parse(localStorage.getItem(key)) : null;
}"""


@pytest.fixture
async def pages(browser) -> AsyncIterator[tuple[Page, Page, list[str]]]:
    """The agent's page and the customer's, each in a browser context of its own, and the content
    security policy violations either reports."""
    violations: list[str] = []
    contexts: list[BrowserContext] = []
    opened: list[Page] = []
    for _ in range(2):
        context = await browser.new_context(viewport={"width": 1280, "height": 860})
        page = await context.new_page()
        page.on("console", lambda m: violations.append(m.text) if "Security Policy" in m.text else None)
        contexts.append(context)
        opened.append(page)
    yield opened[0], opened[1], violations
    for context in contexts:
        await context.close()


async def rated_by_api(http: httpx.AsyncClient, agent: dict[str, str], email: str, score: int | None) -> str:
    """Another customer's conversation, resolved and rated `score` (None: not rated)."""
    conversation = await start(http, identity={"email": email})
    cid = conversation["conversation_id"]
    assert (await http.post(f"{API}/{cid}/resolve", headers=agent)).status_code == 200
    if score is not None:
        given = await http.post(
            f"/api/v1/widget/conversations/{cid}/rating", headers=auth(conversation), json={"score": score}
        )
        assert given.status_code == 201, given.text
    return cid


async def customer_writes(customer: Page, live_url: str, text: str) -> str:
    """The customer asks the bot on the demo shop; the conversation's id."""
    await customer.goto(live_url + "/")
    await customer.get_by_role("button", name="Open chat").click()
    dialog = customer.get_by_role("dialog", name="Northwind Outfitters support")
    box = dialog.get_by_role("textbox", name="Type your message")
    await box.fill(text)
    await box.press("Enter")
    await expect(dialog.locator("[data-role=assistant]")).to_have_count(2)
    return (await customer.evaluate(SAVED_CONVERSATION, "shop-en"))["conversation_id"]


async def customer_rates(customer: Page, stars: int, comment: str) -> None:
    dialog = customer.get_by_role("dialog", name="Northwind Outfitters support")
    prompt = dialog.get_by_role("form", name="How did we do? Rate this conversation")
    await expect(prompt).to_be_visible()  # the resolution reached the widget live
    await prompt.get_by_role("button", name=f"{stars} of 5").click()
    await prompt.get_by_label("Anything to add? (optional)").fill(comment)
    await prompt.get_by_role("button", name="Send rating").click()
    await expect(dialog.get_by_text(f"Thanks for rating this conversation {stars} of 5.")).to_be_visible()


async def test_the_agent_sees_a_customers_rating_and_finds_the_poor_ones(pages, live_url):
    console, customer, violations = pages
    _, agent = await make_agent(client_app(live_url))
    marker = unique_marker("kettle")
    comment = f"Too slow. {XSS}"
    async with httpx.AsyncClient(base_url=live_url, timeout=60) as http:
        good = await rated_by_api(http, agent, f"{marker}-happy@example.com", 5)
        unrated = await rated_by_api(http, agent, f"{marker}-quiet@example.com", None)

    # The customer asks; the agent, watching the inbox, resolves the conversation in the console.
    cid = await customer_writes(customer, live_url, f"Is the {marker} in stock?")
    await sign_in(console, live_url, agent)
    await search(console, marker)
    rows = console.locator("#conversation-list button.row")
    await expect(rows).to_have_count(3)
    await expect(row(console, cid).locator(".rating")).to_have_count(0)
    await expect(row(console, good).locator(".rating")).to_have_text("Customer rating: ★ 5/5")
    await row(console, cid).click()
    await expect(console.locator("#conversation-rating-fact")).to_be_hidden()
    await console.get_by_role("button", name="Resolve", exact=True).click()
    await expect(console.locator("#conversation-status")).to_have_attribute("data-status", "resolved")

    # The customer rates it: the open console shows it at once, in the row and the transcript.
    await customer_rates(customer, 2, comment)
    shown = row(console, cid)
    await expect(shown.locator(".rating")).to_have_text("Customer rating: ★ 2/5")
    await expect(shown.locator(".rating")).to_have_class("rating rating-low")
    await expect(shown.locator(".row-rating-comment")).to_have_text(f"“{comment}”")
    await expect(console.locator("#conversation-rating .rating")).to_have_text("Customer rating: ★ 2/5")
    entry = console.locator("#transcript li.rating-entry")
    await expect(entry).to_have_attribute("aria-label", "Customer rating")
    await expect(entry.locator(".rating")).to_contain_text("2/5")
    await expect(entry.locator(".msg-text")).to_have_text(comment)
    await expect(console.locator("#announcer")).to_have_text("The customer rated this conversation 2 of 5.")
    assert await entry.evaluate("n => n === n.parentElement.lastElementChild")  # after the messages

    # The inbox narrows to the poor ratings, then to every rated one, then to all again.
    rating_filter = console.get_by_label("Rating", exact=True)
    await rating_filter.select_option(label="2 or lower")
    await expect(rows).to_have_count(1)
    await expect(rows.first).to_have_attribute("data-conversation-id", cid)
    await expect(console.locator("#page-info")).to_have_text("1–1 of 1")
    await screenshot(console, "ratings")
    await rating_filter.select_option(label="1 only")
    await expect(rows).to_have_count(0)
    await expect(console.locator("#inbox-empty")).to_be_visible()
    await rating_filter.select_option(label="Rated")
    await expect(rows).to_have_count(2)
    await expect(row(console, unrated)).to_have_count(0)
    await rating_filter.select_option(label="All")
    await expect(rows).to_have_count(3)

    # What the customer wrote is shown as text: their markup never runs.
    assert await console.locator("#console img").count() == 0
    assert await console.evaluate("window.__xss") is None

    # The rating event's link opens the conversation in the console.
    async with httpx.AsyncClient(base_url=live_url) as http:
        detail = (await http.get(f"{API}/{cid}", headers=agent)).json()
    assert (detail["rating"]["score"], detail["rating"]["comment"]) == (2, comment)
    await console.goto(f"{live_url}/console#conversation={cid}")
    await expect(console.locator("#conversation-heading")).to_contain_text(cid[:8])
    await expect(console.locator("#transcript li.rating-entry .msg-text")).to_have_text(comment)
    assert violations == []
