"""The pages load in a real browser (Debian's Chromium)."""

from tests.support import SCREENSHOTS


async def test_the_demo_shop_page_renders_in_chromium(page, live_url):
    response = await page.goto(live_url + "/")
    assert response.status == 200
    assert await page.title() == "Northwind Outfitters"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=SCREENSHOTS / "shop.png")
