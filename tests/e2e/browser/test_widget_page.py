"""The customer chat widget in a real browser (Debian's Chromium) on the real stack.

The engine is a tiny random model: replies are gibberish, so these tests check structure
(what appears, where, when, and what is stored), never what a reply says.
"""

import json
import re

import httpx
from playwright.async_api import expect

from tests.support import SCREENSHOTS, client_app, eventually, make_agent

SHOP_GREETING = "Hi, I'm the Northwind Outfitters assistant. How can I help you today?"
ZH_GREETING = "您好，请问有什么可以帮您？"
XSS_PAYLOAD = '<img src=x onerror="window.__xss=1"> and <script>window.__xss=2</script>'
PHONE = {"width": 390, "height": 844}
EMPTY_REPLY = "(an empty reply)"
AGENT_SENDER = re.compile(r"^agent [0-9a-f]{6} · Support team$")

# Records what the message list looks like after every change, to see a reply stream in.
WATCH_THE_LOG = """() => {
  const log = document.querySelector("[data-prefixdesk-bot]").shadowRoot.querySelector("[role=log]");
  window.__snapshots = [];
  const snapshot = () => {
    const replies = log.querySelectorAll("[data-role=assistant]");
    const last = replies[replies.length - 1];
    window.__snapshots.push({
      typing: log.querySelector("[data-typing]") !== null,
      replies: replies.length,
      length: last ? last.querySelector(".text").textContent.length : 0,
      busy: log.getAttribute("aria-busy"),
    });
  };
  new MutationObserver(snapshot).observe(log, {
    childList: true, subtree: true, characterData: true, attributes: true,
  });
}"""

FOCUSED_IN_WIDGET = """() => {
  const host = document.activeElement;
  if (!host || !host.shadowRoot) return null;
  const inner = host.shadowRoot.activeElement;
  return inner ? inner.getAttribute("aria-label") || inner.tagName.toLowerCase() : null;
}"""


def on_screen(text: str) -> str:
    """A reply as the widget shows it: no blank lines around it, at most one blank line inside."""
    return re.sub(r"\n{3,}", "\n\n", re.sub(r"[ \t]+\n", "\n", text.strip()))


def chat_dialog(page, name="Northwind Outfitters support"):
    return page.get_by_role("dialog", name=name)


async def open_widget(page, *, launcher_name="Open chat", dialog_name="Northwind Outfitters support"):
    await page.get_by_role("button", name=launcher_name).click()
    dialog = chat_dialog(page, dialog_name)
    await expect(dialog).to_be_visible()
    return dialog


async def send_and_wait(dialog, text: str, *, replies_before: int) -> str:
    """Type a message, send it with Enter, wait for the whole reply; returns the reply's text."""
    box = dialog.get_by_role("textbox", name="Type your message")
    await box.fill(text)
    await box.press("Enter")
    return await wait_for_reply(dialog, replies_before + 1)


async def wait_for_reply(dialog, replies: int) -> str:
    log = dialog.get_by_role("log")
    await expect(log.locator("[data-role=assistant]")).to_have_count(replies)
    await expect(log.locator("[data-typing]")).to_have_count(0)
    await expect(log).to_have_attribute("aria-busy", "false")
    return await log.locator("[data-role=assistant] .text").last.text_content()


async def stored_conversation(page, bot="shop-en") -> dict:
    return await page.evaluate(
        "(bot) => JSON.parse(localStorage.getItem(`prefixdesk:${location.origin}:${bot}`))", bot
    )


async def history(live_url: str, conversation: dict) -> dict:
    async with httpx.AsyncClient(base_url=live_url) as client:
        response = await client.get(
            f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages",
            headers={"Authorization": f"Bearer {conversation['customer_token']}"},
        )
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_customer_opens_the_chat_and_a_reply_streams_in(page, live_url):
    await page.goto(live_url + "/")
    launcher = page.get_by_role("button", name="Open chat")
    await expect(launcher).to_have_attribute("aria-expanded", "false")
    dialog = await open_widget(page)
    await expect(launcher).to_have_attribute("aria-expanded", "true")
    log = dialog.get_by_role("log")
    await expect(log.locator("[data-role=assistant] .text")).to_have_text([SHOP_GREETING])
    # The question box has focus as soon as the panel opens.
    assert await page.evaluate(FOCUSED_IN_WIDGET) == "textarea"

    await page.evaluate(WATCH_THE_LOG)
    reply = await send_and_wait(dialog, "How many days do I have to return a tent?", replies_before=1)
    await expect(log.locator("[data-role=user] .text")).to_have_text(
        ["How many days do I have to return a tent?"]
    )
    snapshots = await page.evaluate("window.__snapshots")
    # The typing indicator showed before the reply had any text, and was gone at the end.
    assert any(s["typing"] and s["replies"] == 1 for s in snapshots), snapshots
    assert not snapshots[-1]["typing"] and snapshots[-1]["busy"] == "false"
    lengths = [s["length"] for s in snapshots if s["replies"] == 2]
    assert lengths and lengths == sorted(lengths) and lengths[-1] == len(reply), snapshots
    await page.screenshot(path=SCREENSHOTS / "widget-desktop.png")

    stored = await stored_conversation(page)
    saved = await history(live_url, stored)
    assert saved["greeting"] == SHOP_GREETING
    assert [(m["role"], m["status"]) for m in saved["messages"]] == [
        ("user", "complete"),
        ("assistant", "complete"),
    ]
    assert saved["messages"][0]["text"] == "How many days do I have to return a tent?"
    assert saved["messages"][1]["completion_tokens"] >= 1
    # The reply as stored, as the widget shows it (the tiny model may say nothing but blank lines).
    assert reply == (on_screen(saved["messages"][1]["text"]) or EMPTY_REPLY)


async def test_markup_typed_by_the_customer_is_shown_as_text_and_never_runs(page, live_url):
    await page.goto(live_url + "/")
    dialog = await open_widget(page)
    await send_and_wait(dialog, XSS_PAYLOAD, replies_before=1)
    log = dialog.get_by_role("log")
    await expect(log.locator("[data-role=user] .text")).to_have_text([XSS_PAYLOAD])
    assert await log.locator("img, script").count() == 0
    assert await page.evaluate("typeof window.__xss") == "undefined"

    # Rendered again from the stored history after a reload: still text.
    await page.reload()
    dialog = await open_widget(page)
    log = dialog.get_by_role("log")
    await expect(log.locator("[data-role=user] .text")).to_have_text([XSS_PAYLOAD])
    assert await log.locator("img, script").count() == 0
    assert await page.evaluate("typeof window.__xss") == "undefined"


async def test_after_a_reload_the_conversation_continues(page, live_url):
    await page.goto(live_url + "/")
    dialog = await open_widget(page)
    first_reply = await send_and_wait(dialog, "Do you ship to Norway?", replies_before=1)
    before = await stored_conversation(page)

    await page.reload()
    dialog = await open_widget(page)
    log = dialog.get_by_role("log")
    await expect(log.locator("[data-role=assistant] .text")).to_have_text([SHOP_GREETING, first_reply])
    await expect(log.locator("[data-role=user] .text")).to_have_text(["Do you ship to Norway?"])

    await send_and_wait(dialog, "And to Switzerland?", replies_before=2)
    after = await stored_conversation(page)
    assert after["conversation_id"] == before["conversation_id"]
    saved = await history(live_url, after)
    assert [(m["role"], m["text"]) for m in saved["messages"] if m["role"] == "user"] == [
        ("user", "Do you ship to Norway?"),
        ("user", "And to Switzerland?"),
    ]
    assert len(saved["messages"]) == 4


async def test_an_agent_takes_over_and_the_customer_sees_it_live(page, live_url):
    await page.goto(live_url + "/")
    dialog = await open_widget(page)
    await send_and_wait(dialog, "My tent pole snapped, what can you do?", replies_before=1)
    log = dialog.get_by_role("log")
    host = page.locator("[data-prefixdesk-bot]")
    await expect(host).to_have_attribute("data-live", "connected")
    conversation_id = (await stored_conversation(page))["conversation_id"]

    _, agent = await make_agent(client_app(live_url))
    async with httpx.AsyncClient(base_url=live_url, headers=agent) as api:
        response = await api.post(f"/api/v1/conversations/{conversation_id}/take-over")
        assert response.status_code == 200, response.text
        await expect(log.locator(".notice")).to_have_text(["You're now chatting with our team."])
        agent_name = (await api.get("/api/v1/me")).json()["name"]
        await expect(dialog.locator(".subtitle")).to_have_text(f"You're chatting with {agent_name}")

        agent_text = "Sorry about the pole! <b>We</b> will send a new one <img src=x onerror=window.__xss=3>"
        response = await api.post(
            f"/api/v1/conversations/{conversation_id}/messages", json={"text": agent_text}
        )
        assert response.status_code == 201, response.text
        agent_message = log.locator("[data-role=agent]")
        await expect(agent_message.locator(".text")).to_have_text([agent_text])
        # The agent's name comes with the live event (make_agent names them "agent <hex>").
        await expect(agent_message.locator(".sender")).to_have_text([AGENT_SENDER])
        assert await log.locator("img, b").count() == 0
        assert await page.evaluate("typeof window.__xss") == "undefined"

        # While a person handles it, the customer's message waits for them: no typing dots.
        box = dialog.get_by_role("textbox", name="Type your message")
        await box.fill("Thank you, it's order 1042.")
        await box.press("Enter")
        await expect(log.locator(".notice").last).to_have_text(
            "Your message is with our team; they will reply here."
        )
        await expect(log.locator("[data-typing]")).to_have_count(0)
        await expect(log.locator("[data-role=assistant]")).to_have_count(2)
        await page.screenshot(path=SCREENSHOTS / "widget-agent.png")

        # With the panel closed, a new reply shows on the launcher.
        await page.keyboard.press("Escape")
        await expect(dialog).to_be_hidden()
        response = await api.post(
            f"/api/v1/conversations/{conversation_id}/messages", json={"text": "The new pole ships today."}
        )
        assert response.status_code == 201, response.text
        await expect(page.get_by_role("button", name="Open chat (1 new message)")).to_be_visible()

    # From the history too, after a reload.
    await page.reload()
    dialog = await open_widget(page)
    senders = dialog.get_by_role("log").locator("[data-role=agent] .sender")
    await expect(senders).to_have_text([AGENT_SENDER, AGENT_SENDER])


async def test_asking_for_a_person_hands_the_chat_to_the_team(page, live_url):
    await page.goto(live_url + "/")
    dialog = await open_widget(page)
    handoff_message = await send_and_wait(dialog, "I'd like to talk to a human, please.", replies_before=1)
    assert handoff_message.startswith("I'm passing you to a colleague")
    # The bot's message is the one word of it: no notice repeats it (test_widget_handoff.py).
    await expect(dialog.get_by_role("log").locator(".notice")).to_have_count(0)
    await expect(dialog.locator(".subtitle")).to_have_text("Waiting for our team")


async def test_at_phone_width_the_panel_fills_the_screen_and_works_by_keyboard(browser, live_url):
    context = await browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True)
    page = await context.new_page()
    try:
        await page.goto(live_url + "/")
        # Tab through the shop page until the launcher has focus.
        for _ in range(60):
            await page.keyboard.press("Tab")
            if await page.evaluate(FOCUSED_IN_WIDGET) == "Open chat":
                break
        else:
            raise AssertionError("Tab never reached the chat launcher")
        await page.keyboard.press("Enter")
        dialog = chat_dialog(page)
        await expect(dialog).to_be_visible()
        full_screen = {"x": 0, "y": 0, **PHONE}

        async def fills_the_screen() -> bool:  # the layout settles a frame or two after the panel shows
            return await dialog.bounding_box() == full_screen

        await eventually(fills_the_screen, timeout_s=5, what="the panel fills the screen")
        await expect(page.locator(".launcher")).to_be_hidden()
        await expect(dialog.get_by_role("log").locator("[data-role=assistant] .text")).to_have_text(
            [SHOP_GREETING]
        )
        assert await page.evaluate(FOCUSED_IN_WIDGET) == "textarea"

        # Shift+Enter adds a line; Enter sends.
        await page.keyboard.type("Can I return a jacket")
        await page.keyboard.press("Shift+Enter")
        await page.keyboard.type("if I wore it once?")
        await expect(dialog.locator("[data-role=user]")).to_have_count(0)
        await page.keyboard.press("Enter")
        await expect(dialog.locator("[data-role=user] .text")).to_have_text(
            ["Can I return a jacket\nif I wore it once?"]
        )
        await wait_for_reply(dialog, 2)
        await page.screenshot(path=SCREENSHOTS / "widget-phone.png")

        await page.keyboard.press("Escape")
        await expect(dialog).to_be_hidden()
        assert await page.evaluate(FOCUSED_IN_WIDGET) == "Open chat"
    finally:
        await context.close()


async def test_the_chinese_bot_greets_in_chinese(page, live_url):
    await page.goto(live_url + "/?bot=appliance-zh")  # the Chinese shop's own page
    assert page.url == live_url + "/zh"
    dialog = await open_widget(page, launcher_name="打开聊天", dialog_name="暖风家电客服")
    log = dialog.get_by_role("log")
    await expect(log.locator("[data-role=assistant] .text")).to_have_text([ZH_GREETING])
    box = dialog.get_by_role("textbox", name="输入您的消息")
    await box.fill("空调可以免费安装吗？")
    await box.press("Enter")
    await wait_for_reply(dialog, 2)
    saved = await history(live_url, await stored_conversation(page, "appliance-zh"))
    assert saved["bot"] == "appliance-zh" and saved["greeting"] == ZH_GREETING
    await page.screenshot(path=SCREENSHOTS / "widget-zh.png")


async def test_refusals_are_shown_and_a_lost_conversation_starts_afresh(page, live_url):
    await page.goto(live_url + "/")
    # A conversation the server does not know (deleted, or another server's): start a new one.
    await page.evaluate(
        """() => localStorage.setItem(`prefixdesk:${location.origin}:shop-en`,
             JSON.stringify({conversation_id: "gone", customer_token: "stale"}))"""
    )
    await page.reload()
    dialog = await open_widget(page)
    log = dialog.get_by_role("log")
    await expect(log.locator("[data-role=assistant] .text")).to_have_text([SHOP_GREETING])
    assert (await stored_conversation(page))["conversation_id"] != "gone"


async def test_the_counter_shows_the_limit_warns_near_it_and_keeps_a_long_message(page, live_url):
    await page.goto(live_url + "/")
    dialog = await open_widget(page)
    counter = dialog.locator(".counter")
    box = dialog.get_by_role("textbox", name="Type your message")
    await expect(counter).to_have_text("0 / 4,000")
    await expect(box).to_have_attribute("aria-describedby", await counter.get_attribute("id"))
    await box.fill("x" * 3500)
    await expect(counter).to_have_text("3,500 / 4,000")
    await expect(counter).to_have_attribute("data-level", "ok")
    await box.fill("x" * 3700)
    await expect(counter).to_have_text("3,700 / 4,000 · 300 characters left")
    await expect(counter).to_have_attribute("data-level", "near")

    # Too long: said before sending, and the text stays in the box to shorten.
    too_long = "x" * 4001
    await box.fill(too_long)
    await expect(counter).to_have_text("4,001 / 4,000 · 1 character too many")
    await expect(counter).to_have_attribute("data-level", "over")
    await box.press("Enter")
    await expect(dialog.get_by_role("alert")).to_have_text(
        "Your message has 4,001 characters; the limit is 4,000. Please shorten it."
    )
    await expect(box).to_have_value(too_long)
    await expect(dialog.get_by_role("log").locator("[data-role=user]")).to_have_count(0)


async def test_the_chinese_widget_counts_and_explains_refusals_in_chinese(page, live_url):
    # The first config the page reads has a stale, higher limit: the server's own 413 is then
    # what refuses the message, and it too is explained in Chinese.
    configs = []

    async def stale_limit_first(route):
        response = await route.fetch()
        config = await response.json()
        configs.append(config["max_message_chars"])
        if len(configs) == 1:
            config["max_message_chars"] = 10000
        await route.fulfill(response=response, json=config)

    await page.route("**/api/v1/widget/config", stale_limit_first)
    await page.goto(live_url + "/zh")
    dialog = await open_widget(page, launcher_name="打开聊天", dialog_name="暖风家电客服")
    counter = dialog.locator(".counter")
    await expect(counter).to_have_text("0 / 10000")
    box = dialog.get_by_role("textbox", name="输入您的消息")
    too_long = "好" * 4001
    await box.fill(too_long)
    await box.press("Enter")
    refusal = dialog.locator(".composer-error")
    await expect(refusal).to_have_text("消息共 4001 个字，超过了 4000 字的上限，请删减后再发送。")
    await expect(counter).to_have_text("4001 / 4000 · 超出 1 个字")
    await expect(box).to_have_value(too_long)
    await expect(dialog.get_by_role("log").locator("[data-role=user]")).to_have_count(0)
    assert configs == [4000, 4000]

    await box.fill("好" * 3700)
    await expect(counter).to_have_text("3700 / 4000 · 还可输入 300 个字")
    # A message the server cannot store (a NUL character, 422): in Chinese too.
    await box.fill("你好\u0000")
    await box.press("Enter")
    await expect(refusal).to_have_text("这条消息无法发送，请删除特殊字符后重试。")
    await expect(dialog.get_by_role("alert")).to_have_count(1)


# The reply's stream, held open and fed by the test: what the customer sees while it streams.
HELD_REPLY = """(() => {
  const realFetch = window.fetch;
  const encoder = new TextEncoder();
  window.fetch = (url, options = {}) => {
    if (options.method !== "POST" || !String(url).endsWith("/messages")) return realFetch(url, options);
    const stream = new ReadableStream({ start: (controller) => { window.__reply = controller; } });
    window.__say = (event, data) =>
      window.__reply.enqueue(encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`));
    const headers = { "content-type": "text/event-stream" };
    return Promise.resolve(new Response(stream, { status: 200, headers }));
  };
})();"""
LOOK = """(node) => ({
  fontStyle: getComputedStyle(node).fontStyle,
  color: getComputedStyle(node).color,
  caret: getComputedStyle(node, "::after").content,
})"""


async def test_a_streaming_reply_looks_like_a_finished_one_with_a_caret(page, live_url):
    await page.add_init_script(HELD_REPLY)
    await page.goto(live_url + "/")
    dialog = await open_widget(page)
    log = dialog.get_by_role("log")
    finished = await log.locator("[data-role=assistant] .text").first.evaluate(LOOK)
    assert finished == {"fontStyle": "normal", "color": "rgb(31, 35, 40)", "caret": "none"}
    box = dialog.get_by_role("textbox", name="Type your message")
    await box.fill("Are returns free?")
    await box.press("Enter")
    await page.wait_for_function("() => window.__say !== undefined")
    await page.evaluate(
        """() => { __say("accepted", {user_message_id: 1, reply_message_id: 2});
                   __say("token", {text: "Returns are"}); }"""
    )
    reply = log.locator("[data-role=assistant] .text").nth(1)
    await expect(reply).to_have_text("Returns are")
    assert await reply.evaluate(LOOK) == {**finished, "caret": '""'}

    await page.evaluate(
        """() => { __say("token", {text: " free."});
                   __say("done", {message_id: 2, text: "Returns are free.", status: "bot", handoff: false});
                   __reply.close(); }"""
    )
    await expect(reply).to_have_text("Returns are free.")
    await expect(log).to_have_attribute("aria-busy", "false")
    assert await reply.evaluate(LOOK) == finished


def sse(*events: tuple[str, dict]) -> str:
    """A reply stream as the server frames it (CRLF line ends, keep-alive comments)."""
    blocks = [": ping - keep-alive\r\n\r\n"]
    blocks += [f"event: {kind}\r\ndata: {json.dumps(data)}\r\n\r\n" for kind, data in events]
    return "".join(blocks)


async def test_a_streamed_reply_is_put_together_from_its_tokens_and_errors_are_explained(page, live_url):
    tokens = [
        "Returns",
        " are free",
        " within 45 days.\n\n\n\nSee",
        " https://example.com/returns",
        ". <b>Thanks</b>",
    ]
    replies = iter(
        [
            {
                "status": 200,
                "content_type": "text/event-stream",
                "body": sse(
                    ("accepted", {"user_message_id": 1, "reply_message_id": 2}),
                    *[("token", {"text": token}) for token in tokens],
                    ("done", {"message_id": 2, "text": "".join(tokens), "status": "bot", "handoff": False}),
                ),
            },
            {
                "status": 200,
                "content_type": "text/event-stream",
                "body": sse(
                    ("accepted", {"user_message_id": 3, "reply_message_id": 4}),
                    ("token", {"text": "Let me"}),
                    (
                        "error",
                        {
                            "message_id": 4,
                            "code": "generation_failed",
                            "detail": "the reply could not be generated",
                        },
                    ),
                ),
            },
            {
                "status": 409,
                "content_type": "application/json",
                "body": json.dumps(
                    {"error": "conflict", "detail": "a reply is still being written; wait for it"}
                ),
            },
        ]
    )

    async def reply_from_the_script(route):
        if route.request.method == "POST":
            await route.fulfill(**next(replies))
        else:
            await route.continue_()

    await page.route("**/api/v1/widget/conversations/*/messages", reply_from_the_script)
    await page.goto(live_url + "/")
    dialog = await open_widget(page)
    log = dialog.get_by_role("log")
    box = dialog.get_by_role("textbox", name="Type your message")

    await send_and_wait(dialog, "Are returns free?", replies_before=1)
    reply = log.locator("[data-role=assistant]").last
    await expect(reply.locator(".text")).to_have_text(
        "Returns are free within 45 days.\n\nSee https://example.com/returns. <b>Thanks</b>"
    )
    await expect(reply.get_by_role("link")).to_have_attribute("href", "https://example.com/returns")
    assert await reply.locator("b").count() == 0

    # The reply fails part-way: the customer's message stays and the reason is shown.
    await box.fill("And for tents?")
    await box.press("Enter")
    await expect(log.get_by_role("alert")).to_have_text("This reply could not be written.")
    await expect(log.locator("[data-role=user] .text")).to_have_text(["Are returns free?", "And for tents?"])
    await expect(log.locator("[data-role=assistant]")).to_have_count(2)

    # Refused outright (HTTP 409): not stored, so the text goes back into the box.
    await box.fill("Hello?")
    await box.press("Enter")
    await expect(dialog.locator(".composer-error")).to_have_text(
        "The assistant is still replying. Wait for it to finish, then send again."
    )
    await expect(dialog.get_by_role("alert")).to_have_count(1)  # it replaced the one before
    await expect(box).to_have_value("Hello?")
    await expect(log.locator("[data-role=user]")).to_have_count(2)
