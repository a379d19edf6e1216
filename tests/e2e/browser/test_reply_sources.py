"""The help-center articles a bot reply cites, in real browsers (Debian's Chromium): listed under
the reply in the widget, live from the reply's `done` event and after a reload from the history,
and in the agent's console transcript. Titles are shown as text; only http(s) addresses become
links."""

import json
import uuid

import pytest
from playwright.async_api import expect

from backend.conversations import repository
from tests.support import SCREENSHOTS, client_app, make_agent

XSS_TITLE = '<img src=x onerror="window.__xss=1"> Care & cleaning'
SOURCES = [
    {"id": "returns", "title": "Returns and refunds", "url": "https://help.example.com/returns"},
    {"id": "care", "title": XSS_TITLE, "url": None},
    {"id": "sizes", "title": "Size guide", "url": "javascript:window.__xss=2"},
]
TITLES = [source["title"] for source in SOURCES]
# The reply's parts in order, under its text: the cited articles come before the thumbs.
PARTS = "(bubble) => [...bubble.children].map((child) => child.classList[0])"


@pytest.fixture
async def pages(browser):
    """A page of its own for the customer and the agent."""
    contexts = [await browser.new_context(viewport={"width": 1280, "height": 900}) for _ in range(2)]
    yield [await context.new_page() for context in contexts]
    for context in contexts:
        await context.close()


async def expect_sources(shown, name: str = "Sources") -> None:
    """`shown` (a reply) lists SOURCES: titles as text, a link only for the https one."""
    listed = shown.get_by_role("list", name=name, exact=True)
    await expect(listed.get_by_role("listitem")).to_have_text(TITLES)
    link = listed.get_by_role("link")
    await expect(link).to_have_count(1)
    await expect(link).to_have_text("Returns and refunds")
    await expect(link).to_have_attribute("href", "https://help.example.com/returns")
    await expect(link).to_have_attribute("target", "_blank")
    await expect(link).to_have_attribute("rel", "noopener noreferrer")
    assert await shown.locator("img, script").count() == 0


async def test_cited_articles_show_under_the_reply_after_a_reload_and_in_the_console(pages, live_url):
    customer, console = pages
    app = client_app(live_url)
    _, agent = await make_agent(app)
    marker = f"groundsheet{uuid.uuid4().hex[:8]}"
    await customer.goto(live_url + "/")
    await customer.get_by_role("button", name="Open chat").click()
    dialog = customer.get_by_role("dialog", name="Northwind Outfitters support")
    box = dialog.get_by_role("textbox", name="Type your message")
    await box.fill(f"How do I clean the {marker}?")
    await box.press("Enter")
    log = dialog.get_by_role("log")
    reply = log.locator("[data-role=assistant]").nth(1)
    await expect(reply.get_by_role("group", name="Rate this reply")).to_be_visible()
    await expect(log).to_have_attribute("aria-busy", "false")
    # The tiny model cites nothing: no list under its reply.
    await expect(log.get_by_role("list")).to_have_count(0)
    reply_id = int(await reply.get_attribute("data-message-id"))

    # What the turn stores when the reply cites articles (one with a title that is markup, one
    # whose address is not http(s)), set on the stored reply.
    async with app.state.services.new_work() as work:
        (await repository.get_message(work.db, reply_id)).sources = SOURCES

    await customer.reload()
    await customer.get_by_role("button", name="Open chat").click()
    shown = log.locator(f'[data-message-id="{reply_id}"]')
    await expect_sources(shown)
    await expect(shown.locator(".sources li").nth(1).locator("a")).to_have_count(0)
    await expect(shown.locator(".sources li").nth(2).locator("a")).to_have_count(0)
    assert await shown.evaluate(PARTS) == ["sr-only", "text", "sources", "feedback"]
    await expect(log.get_by_role("list")).to_have_count(1)  # only the reply that cites any
    assert await customer.evaluate("typeof window.__xss") == "undefined"
    await customer.screenshot(path=SCREENSHOTS / "widget-sources.png")

    await console.goto(live_url + "/console")
    await console.get_by_label("API token").fill(agent["Authorization"].removeprefix("Bearer "))
    await console.get_by_role("button", name="Sign in").click()
    await console.get_by_label("Search messages").fill(marker)
    await expect(console.locator("#page-info")).to_have_text("1–1 of 1")
    await console.locator("#conversation-list button.row").first.click()
    entry = console.locator(f'#transcript li[data-message-id="{reply_id}"]')
    await expect_sources(entry)
    await expect(entry.locator(".sources li").nth(1).locator("a")).to_have_count(0)
    await expect(entry.locator(".sources li").nth(2).locator("a")).to_have_count(0)
    await expect(console.locator("#transcript").get_by_role("list", name="Sources")).to_have_count(1)
    assert await console.evaluate("typeof window.__xss") == "undefined"
    await console.screenshot(path=SCREENSHOTS / "console-sources.png")


def sse(*events: tuple[str, dict]) -> str:
    """A reply stream as the server frames it."""
    return "".join(f"event: {kind}\r\ndata: {json.dumps(data)}\r\n\r\n" for kind, data in events)


def scripted_replies(*replies: list[tuple[str, dict]]):
    """A route handler that answers each message the widget sends with the next scripted stream;
    everything else goes to the server."""
    streams = iter(replies)

    async def answer(route):
        if route.request.method != "POST":
            await route.continue_()
            return
        body = sse(*next(streams))
        await route.fulfill(status=200, content_type="text/event-stream", body=body)

    return answer


def reply_stream(user_id: int, reply_id: int, text: str, **done) -> list[tuple[str, dict]]:
    return [
        ("accepted", {"user_message_id": user_id, "reply_message_id": reply_id}),
        ("token", {"text": text}),
        ("done", {"message_id": reply_id, "text": text, "status": "bot", "handoff": False, **done}),
    ]


async def test_the_articles_a_streamed_reply_cites_show_when_it_finishes(page, live_url):
    answer = scripted_replies(
        reply_stream(1, 2, "Use mild soap.", sources=SOURCES),
        reply_stream(3, 4, "Anything else?"),  # `sources` absent: it cited nothing
    )
    await page.route("**/api/v1/widget/conversations/*/messages", answer)
    await page.goto(live_url + "/")
    await page.get_by_role("button", name="Open chat").click()
    dialog = page.get_by_role("dialog", name="Northwind Outfitters support")
    box = dialog.get_by_role("textbox", name="Type your message")
    log = dialog.get_by_role("log")

    await box.fill("How do I clean my tent?")
    await box.press("Enter")
    cited = log.locator('[data-message-id="2"]')
    await expect_sources(cited)
    await expect(cited.locator(".sources li").nth(1).locator("a")).to_have_count(0)
    await expect(cited.locator(".sources li").nth(2).locator("a")).to_have_count(0)
    assert await cited.evaluate(PARTS) == ["sr-only", "text", "sources", "feedback"]
    assert await page.evaluate("typeof window.__xss") == "undefined"

    await box.fill("Thanks")
    await box.press("Enter")
    plain = log.locator('[data-message-id="4"]')
    await expect(plain.get_by_role("group", name="Rate this reply")).to_be_visible()
    await expect(plain.get_by_role("list")).to_have_count(0)
    await expect(log.get_by_role("list")).to_have_count(1)


async def test_the_list_of_articles_is_named_in_chinese_on_the_chinese_bot(page, live_url):
    sources = [{"id": "install", "title": "空调安装说明", "url": "https://help.example.com/安装"}]
    answer = scripted_replies(reply_stream(1, 2, "可以免费安装。", sources=sources))
    await page.route("**/api/v1/widget/conversations/*/messages", answer)
    await page.goto(live_url + "/?bot=appliance-zh")
    await page.get_by_role("button", name="打开聊天").click()
    dialog = page.get_by_role("dialog", name="暖风家电客服")
    box = dialog.get_by_role("textbox", name="输入您的消息")
    await box.fill("空调可以免费安装吗？")
    await box.press("Enter")
    listed = dialog.get_by_role("list", name="参考文章", exact=True)
    await expect(listed.get_by_role("link")).to_have_text("空调安装说明")
    # The address as the browser writes it: non-ASCII letters percent-encoded.
    await expect(listed.get_by_role("link")).to_have_attribute(
        "href", "https://help.example.com/%E5%AE%89%E8%A3%85"
    )


async def test_the_words_an_answer_stands_on_are_folded_under_it_and_open_with_the_keyboard(page, live_url):
    line = "Customers may return any unused item within 45 days of delivery for a full refund."
    sources = [{"id": "policy", "title": "Our policy", "url": None, "passage": line}]
    await page.route(
        "**/api/v1/widget/conversations/*/messages",
        scripted_replies(reply_stream(1, 2, "You have 45 days to return it.", sources=sources)),
    )
    await page.goto(live_url + "/")
    await page.get_by_role("button", name="Open chat").click()
    dialog = page.get_by_role("dialog", name="Northwind Outfitters support")
    box = dialog.get_by_role("textbox", name="Type your message")
    await box.fill("How long do I have to send a jacket back?")
    await box.press("Enter")
    reply = dialog.get_by_role("log").locator('[data-message-id="2"]')
    summary = reply.locator("details.passage > summary")
    await expect(summary).to_have_text("What it says")
    await expect(reply.get_by_text(line)).to_be_hidden()  # folded by default

    await summary.focus()
    await page.keyboard.press("Enter")
    await expect(reply.get_by_text(line)).to_be_visible()
    await expect(reply.locator("details.passage")).to_have_attribute("open", "")
    await page.keyboard.press("Enter")
    await expect(reply.get_by_text(line)).to_be_hidden()
    await page.keyboard.press("Enter")
    await page.screenshot(path=SCREENSHOTS / "widget-answer-source.png")
