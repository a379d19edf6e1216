"""What the admin page's browser tests share: a browser context that reports every content
security policy violation, and signing in."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from playwright.async_api import Browser, BrowserContext, Page, expect


@asynccontextmanager
async def watched(browser: Browser, time_zone: str = "UTC") -> AsyncIterator[BrowserContext]:
    """A context in `time_zone` whose pages may not violate the content security policy."""
    context = await browser.new_context(
        viewport={"width": 1280, "height": 900}, timezone_id=time_zone, accept_downloads=True
    )
    violations: list[str] = []
    context.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    try:
        yield context
    finally:
        await context.close()
    assert violations == []


async def signed_in_admin(context: BrowserContext, url: str, headers: dict[str, str]) -> Page:
    """The admin page, signed in with the token in `headers`, its records drawn."""
    page = await context.new_page()
    await page.goto(url + "/admin")
    await page.fill("#admin-token", headers["Authorization"].removeprefix("Bearer "))
    await page.click("text=Sign in")
    await expect(page.get_by_role("region", name="Records: export, erasure, audit log")).to_be_visible()
    return page
