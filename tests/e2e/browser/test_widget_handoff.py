"""The handoff in a real browser (Debian's Chromium) under the pages' content security policy:
the bot steps aside in one message, the header waits for the team then names the agent (in
the bot's language), outside office hours the widget asks for an address and says when the
team answers (the console shows it), as the shipped tallybook-en bot does on a Saturday, and
handed back, the bot answers what waited."""

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest
from playwright.async_api import expect

from backend.config import Settings
from backend.engine.interface import Engine
from backend.prompting.office_hours import opening_text
from tests.e2e.browser.test_console_page import open_conversation, sign_in, unique_marker
from tests.e2e.browser.test_widget_page import history, open_widget, stored_conversation, wait_for_reply
from tests.helpers import add_office_hours, away_until_in_two_days
from tests.support import SCREENSHOTS, client_app, copy_prompts, make_agent, served, wait_ready

HANDOVER = "I'm passing you to a colleague from the Northwind Outfitters team; they will reply here shortly."
TIMEZONE = "Europe/Amsterdam"


@pytest.fixture
async def away_live_url(tiny_settings: Settings, tiny_engine: Engine, tmp_path) -> AsyncIterator[str]:
    """The app with shop-en's team away now: its office hours open in two days."""
    prompts = copy_prompts(tmp_path)
    add_office_hours(prompts, "shop-en", away_until_in_two_days(TIMEZONE)[0], TIMEZONE)
    settings = tiny_settings.model_copy(update={"prompts_dir": prompts})
    async with served(settings, tiny_engine) as url, httpx.AsyncClient(base_url=url) as client:
        await wait_ready(client)
        yield url


async def write(dialog, text: str, *, box_name: str = "Type your message") -> None:
    box = dialog.get_by_role("textbox", name=box_name)
    await box.fill(text)
    await box.press("Enter")


async def agent_name(api: httpx.AsyncClient) -> str:
    return (await api.get("/api/v1/me")).json()["name"]


async def test_the_bot_steps_aside_in_one_message_and_the_header_waits_then_names_the_agent(page, live_url):
    await page.goto(live_url + "/")
    dialog = await open_widget(page)
    log = dialog.get_by_role("log")
    await expect(page.locator("[data-prefixdesk-bot]")).to_have_attribute("data-live", "connected")
    await write(dialog, "I'd like to talk to a human, please.")
    assert await wait_for_reply(dialog, 2) == HANDOVER
    # One message: the bot's own, no notice repeating it (however the live status arrives).
    await expect(log.locator("[data-role=assistant] .text").filter(has_text="passing you")).to_have_count(1)
    await expect(log.locator(".notice")).to_have_count(0)
    await expect(log.locator("[data-feedback]")).to_have_count(0)  # the handover is no answer to rate
    subtitle = dialog.locator(".subtitle")
    await expect(subtitle).to_have_text("Waiting for our team")
    await expect(log.locator("[data-away]")).to_have_count(0)  # no office hours: the team is there

    conversation_id = (await stored_conversation(page))["conversation_id"]
    _, agent = await make_agent(client_app(live_url))
    async with httpx.AsyncClient(base_url=live_url, headers=agent) as api:
        assert (await api.post(f"/api/v1/conversations/{conversation_id}/take-over")).status_code == 200
        await expect(subtitle).to_have_text(f"You're chatting with {await agent_name(api)}")
    await expect(log.locator(".notice")).to_have_text(["You're now chatting with our team."])
    await page.screenshot(path=SCREENSHOTS / "widget-handoff-agent.png")


@pytest.fixture
async def zh_cn_live_url(tiny_settings: Settings, tiny_engine: Engine, tmp_path) -> AsyncIterator[str]:
    """The app with appliance-zh's language written as a tag with a region, "zh-CN"."""
    prompts = copy_prompts(tmp_path)
    toml = prompts / "appliance-zh" / "bot.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(text.replace('language = "zh"', 'language = "zh-CN"'), encoding="utf-8")
    settings = tiny_settings.model_copy(update={"prompts_dir": prompts})
    async with served(settings, tiny_engine) as url, httpx.AsyncClient(base_url=url) as client:
        await wait_ready(client)
        yield url


async def test_the_waiting_header_speaks_the_bot_s_language(page, live_url):
    await expect_the_handoff_in_chinese(page, live_url)


async def test_a_bots_language_tag_with_a_region_speaks_its_language(page, zh_cn_live_url):
    await expect_the_handoff_in_chinese(page, zh_cn_live_url)


async def expect_the_handoff_in_chinese(page, url: str) -> None:
    await page.goto(url + "/?bot=appliance-zh")
    dialog = await open_widget(page, launcher_name="打开聊天", dialog_name="暖风家电客服")
    await write(dialog, "我要转人工", box_name="输入您的消息")
    assert await wait_for_reply(dialog, 2) == "正在为您转接暖风家电人工客服，请稍候。"
    await expect(dialog.locator(".subtitle")).to_have_text("正在等待人工客服")
    await expect(dialog.get_by_role("log").locator(".notice")).to_have_count(0)


async def test_outside_office_hours_the_widget_asks_for_an_address_the_console_shows(page, away_live_url):
    opening = opening_text(away_until_in_two_days(TIMEZONE)[1], "en")
    marker = unique_marker("tent")
    await page.goto(away_live_url + "/")
    dialog = await open_widget(page)
    await write(dialog, f"I'd like to talk to a human about my {marker}.")
    await wait_for_reply(dialog, 2)
    away = dialog.get_by_role("log").locator("[data-away]")
    await expect(away).to_contain_text(f"Our team is away right now and will answer from {opening}.")
    await expect(dialog.locator(".subtitle")).to_have_text("Waiting for our team")

    address = away.get_by_label("Your e-mail address")
    await address.fill("ada@example")
    await away.get_by_role("button", name="Send address").click()
    await expect(away.get_by_role("alert")).to_have_text(
        "That is not an e-mail address. Check it and try again."
    )
    await address.fill("ada@example.com")
    await away.get_by_role("button", name="Send address").click()
    await expect(away.get_by_role("status")).to_have_text(
        "Thank you. Our team will write to ada@example.com."
    )
    await page.screenshot(path=SCREENSHOTS / "widget-away.png")

    # After a reload the widget remembers: it says when, and that it has the address.
    await page.reload()
    dialog = await open_widget(page)
    away = dialog.get_by_role("log").locator("[data-away]")
    await expect(away).to_contain_text("Our team will write to ada@example.com.")
    await expect(away.locator("input")).to_have_count(0)

    conversation_id = (await stored_conversation(page))["conversation_id"]
    console = await page.context.new_page()
    _, agent = await make_agent(client_app(away_live_url))
    await sign_in(console, away_live_url, agent)
    await open_conversation(console, conversation_id, marker)
    await expect(console.locator("#conversation-contact")).to_contain_text("ada@example.com")
    await expect(console.locator("#conversation-contact")).to_contain_text(
        "Given by the customer, unverified"
    )


async def test_the_shipped_tallybook_bot_asks_for_an_address_outside_its_office_hours(
    page, live_url, monkeypatch
):
    """prompts/tallybook-en ships with office hours (weekdays 08:00-18:00, Amsterdam); the
    team's clock is fixed on a Saturday, so the test does not depend on when it runs."""
    saturday_noon = datetime(2026, 12, 12, 11, 0, tzinfo=UTC)
    monkeypatch.setattr(client_app(live_url).state.services.team, "clock", lambda: saturday_noon)
    await page.goto(live_url + "/?bot=tallybook-en")
    dialog = await open_widget(page, dialog_name="Tallybook support")
    await write(dialog, "I'd like to talk to a human, please.")
    assert "colleague from the Tallybook support team" in await wait_for_reply(dialog, 2)
    away = dialog.get_by_role("log").locator("[data-away]")
    await expect(away).to_contain_text(
        "Our team is away right now and will answer from Monday, December 14, 2026, 8:00\u202fAM"
        " (Central European Standard Time)."
    )
    await away.get_by_label("Your e-mail address").fill("ada@example.com")
    await away.get_by_role("button", name="Send address").click()
    await expect(away.get_by_role("status")).to_have_text(
        "Thank you. Our team will write to ada@example.com."
    )


async def test_handed_back_the_bot_answers_what_the_customer_asked_meanwhile(page, live_url):
    await page.goto(live_url + "/")
    dialog = await open_widget(page)
    log = dialog.get_by_role("log")
    await expect(page.locator("[data-prefixdesk-bot]")).to_have_attribute("data-live", "connected")
    await write(dialog, "Do you sell tent poles?")
    await wait_for_reply(dialog, 2)
    conversation = await stored_conversation(page)
    conversation_id = conversation["conversation_id"]
    _, agent = await make_agent(client_app(live_url))
    async with httpx.AsyncClient(base_url=live_url, headers=agent) as api:
        assert (await api.post(f"/api/v1/conversations/{conversation_id}/take-over")).status_code == 200
        await expect(dialog.locator(".subtitle")).to_contain_text("You're chatting with")
        await write(dialog, "Hello? Which sizes do you have?")
        await expect(log.locator(".notice").last).to_have_text(
            "Your message is with our team; they will reply here."
        )
        waiting = (await history(live_url, conversation))["messages"][-1]
        assert waiting["role"] == "user"

        handed = await api.post(f"/api/v1/conversations/{conversation_id}/hand-back")
        assert handed.status_code == 200, handed.text
        assert handed.json()["answering_message_id"] == waiting["id"]
        await expect(log.locator(".notice").last).to_have_text("You're chatting with our assistant again.")
    # The bot's answer arrives live, once, under the waiting question.
    await expect(log.locator("[data-role=assistant]")).to_have_count(3)
    stored = (await history(live_url, conversation))["messages"]
    assert [m["role"] for m in stored[-2:]] == ["user", "assistant"]
    assert stored[-1]["status"] == "complete"
    await expect(log.locator("[data-role=assistant]").last).to_have_attribute(
        "data-message-id", str(stored[-1]["id"])
    )
    await expect(dialog.locator(".subtitle")).to_have_text("Virtual assistant · replies instantly")
