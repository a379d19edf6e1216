"""The widget embedded by a shop on another origin (another port on loopback), under that shop's
own content security policy: refused with one clear message until an admin allows the origin,
then working at once, without a restart; a server out of reach is said so, once."""

import asyncio
from collections.abc import AsyncIterator, Callable

import httpx
import pytest
import uvicorn
from playwright.async_api import expect
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from backend.agents.models import AgentRole
from tests.support import client_app, eventually, free_port, make_agent

GREETING = "Hi, I'm the Northwind Outfitters assistant. How can I help you today?"
SHOP_PAGE = """<!doctype html>
<html lang="{lang}"><head><meta charset="utf-8"><title>Another shop</title></head>
<body><h1>Another shop</h1>
<script src="{script}/static/widget.js" data-bot="{bot}" data-server="{server}" data-name="Help"
        defer></script>
</body></html>"""


async def shop_page(request: Request) -> HTMLResponse:
    """A shop's page embedding the widget of `server` (its script from `script`, by default the same)."""
    query = request.query_params
    server = query["server"]
    script = query.get("script", server)
    lang, bot = query.get("lang", "en"), query.get("bot", "shop-en")
    html = SHOP_PAGE.format(lang=lang, bot=bot, server=server, script=script)
    policy = (
        f"default-src 'self'; script-src {script}; connect-src {server}; style-src 'unsafe-inline'; "
        "img-src 'self' data:; base-uri 'none'; object-src 'none'"
    )
    return HTMLResponse(html, headers={"Content-Security-Policy": policy})


@pytest.fixture
async def other_shop() -> AsyncIterator[Callable[..., str]]:
    """A shop on another origin (http://127.0.0.1:<another port>); call it for a page's address."""
    port = free_port()
    app = Starlette(routes=[Route("/", shop_page)])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started or task.done(), timeout_s=30, what="the shop's server started")
    origin = f"http://127.0.0.1:{port}"

    def page_url(**query: str) -> str:
        return f"{origin}/?{httpx.QueryParams(query)}"

    page_url.origin = origin  # type: ignore[attr-defined]
    try:
        yield page_url
    finally:
        server.should_exit = True
        await task


def watch_console(page) -> list[tuple[str, str]]:
    messages: list[tuple[str, str]] = []
    page.on("console", lambda message: messages.append((message.type, message.text)))
    return messages


async def test_a_site_not_allowed_is_told_once_until_an_admin_allows_it(page, live_url, other_shop):
    console = watch_console(page)
    origin = other_shop.origin
    await page.goto(other_shop(server=live_url))
    await page.get_by_role("button", name="Open chat").click()
    dialog = page.get_by_role("dialog", name="Help")
    errors = dialog.locator(".error")
    await expect(errors).to_have_count(1)
    await expect(errors.first).to_contain_text("This site is not allowed to use this chat.")
    await expect(dialog.locator(".subtitle")).to_have_text("Chat unavailable on this site")
    # Retrying replaces the message; it never stacks.
    for _ in range(2):
        await dialog.get_by_role("button", name="Try again").click()
        await expect(errors).to_have_count(1)
    await expect(errors.first).to_contain_text("This site is not allowed to use this chat.")
    told = [text for kind, text in console if kind == "error" and "prefixdesk widget" in text]
    assert len(told) == 1, console
    assert f"PREFIXDESK_WIDGET_ORIGINS='[\"{origin}\"]'" in told[0]
    assert f'POST {{"origin": "{origin}"}} to {live_url}/api/v1/admin/widget-origins' in told[0]

    # An admin allows the origin; the next try works, no restart.
    _, admin = await make_agent(client_app(live_url), AgentRole.ADMIN)
    async with httpx.AsyncClient(base_url=live_url, headers=admin) as api:
        added = await api.post("/api/v1/admin/widget-origins", json={"origin": origin})
        assert added.status_code == 201, added.text
        try:
            await dialog.get_by_role("button", name="Try again").click()
            log = dialog.get_by_role("log")
            await expect(log.locator("[data-role=assistant] .text")).to_have_text([GREETING])
            await expect(errors).to_have_count(0)
            await expect(dialog.locator(".subtitle")).to_have_text("Virtual assistant · replies instantly")
            box = dialog.get_by_role("textbox", name="Type your message")
            await box.fill("Can I return a tent?")
            await box.press("Enter")
            await expect(log.locator("[data-role=assistant]")).to_have_count(2)
            await expect(log).to_have_attribute("aria-busy", "false")
            await expect(log.locator(".error")).to_have_count(0)
        finally:
            await api.delete(f"/api/v1/admin/widget-origins/{added.json()['id']}")
    assert not [text for _, text in console if "Content Security Policy" in text], console


async def test_a_chinese_site_not_allowed_is_told_in_chinese(page, live_url, other_shop):
    await page.goto(other_shop(server=live_url, lang="zh", bot="appliance-zh"))
    await page.get_by_role("button", name="打开聊天").click()
    dialog = page.get_by_role("dialog", name="Help")
    await expect(dialog.locator(".error")).to_contain_text("此网站未获准使用本聊天服务。")
    await expect(dialog.locator(".subtitle")).to_have_text("本网站无法使用聊天")


async def test_a_server_out_of_reach_is_said_once_and_the_header_agrees(page, live_url, other_shop):
    gone = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    await page.goto(other_shop(server=gone, script=live_url))
    await page.get_by_role("button", name="Open chat").click()
    dialog = page.get_by_role("dialog", name="Help")
    errors = dialog.locator(".error")
    await expect(errors).to_have_count(1)
    await expect(errors.first).to_contain_text("We couldn't reach the chat server.")
    await expect(dialog.locator(".subtitle")).to_have_text("Offline · can't reach the chat server")
    for _ in range(2):
        await dialog.get_by_role("button", name="Try again").click()
        await expect(errors).to_have_count(1)
    # Sending meanwhile keeps the text and says the same, in one place.
    box = dialog.get_by_role("textbox", name="Type your message")
    await box.fill("Hello?")
    await box.press("Enter")
    await expect(errors).to_have_count(1)
    await expect(box).to_have_value("Hello?")
    await expect(dialog.get_by_role("alert")).to_have_count(1)
