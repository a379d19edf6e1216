"""The pages load in a real browser (Debian's Chromium)."""

from playwright.async_api import expect

from tests.support import SCREENSHOTS

PAGES = ("/", "/zh", "/console", "/admin")


async def test_the_demo_shop_page_renders_in_chromium(page, live_url):
    response = await page.goto(live_url + "/")
    assert response.status == 200
    assert await page.title() == "Northwind Outfitters"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=SCREENSHOTS / "shop.png")


async def test_the_chinese_shop_page_embeds_the_chinese_bot(page, live_url):
    response = await page.goto(live_url + "/zh")
    assert response.status == 200
    assert await page.get_attribute("html", "lang") == "zh"
    assert await page.title() == "暖风家电"
    await expect(page.get_by_role("heading", level=1)).to_have_text("好家电，住得更舒服")
    widget = page.locator("script[data-bot]")
    assert await widget.get_attribute("data-bot") == "appliance-zh"
    await page.get_by_role("button", name="打开聊天").click()
    dialog = page.get_by_role("dialog", name="暖风家电客服")
    await expect(dialog.locator("[data-role=assistant] .text")).to_have_text(["您好，请问有什么可以帮您？"])
    # The demo bar leads from one shop to the other.
    await page.get_by_role("link", name="Northwind Outfitters support").click()
    await expect(page).to_have_title("Northwind Outfitters")
    await page.get_by_role("link", name="暖风家电客服").click()
    await expect(page).to_have_url(live_url + "/zh")
    await page.screenshot(path=SCREENSHOTS / "shop-zh.png")


async def test_every_page_has_the_favicon_and_its_policy_allows_it(page, live_url):
    for path in PAGES:
        await page.goto(live_url + path)
        icon = page.locator("link[rel=icon]")
        assert await icon.get_attribute("href") == "/static/favicon.svg", path
        assert await icon.get_attribute("type") == "image/svg+xml", path
        # Drawn as an image under the page's content security policy.
        size = await page.evaluate(
            """(href) => new Promise((resolve) => {
                 const image = new Image();
                 image.onload = () => resolve([image.naturalWidth, image.naturalHeight]);
                 image.onerror = () => resolve(null);
                 image.src = href;
               })""",
            "/static/favicon.svg",
        )
        assert size and size[0] > 0, path
    served = await page.request.get(live_url + "/favicon.ico")
    assert served.status == 200 and served.headers["content-type"] == "image/svg+xml"
    assert (await served.body()).startswith(b"<svg")
