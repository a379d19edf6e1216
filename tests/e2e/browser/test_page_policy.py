"""Every page runs under its Content Security Policy in a real browser (Debian's Chromium)."""


async def test_the_pages_run_under_their_policy(browser, live_url):
    context = await browser.new_context()
    page = await context.new_page()
    violations: list[str] = []
    page.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    for path in ("/", "/zh", "/console", "/admin"):
        await page.goto(live_url + path)
        await page.wait_for_load_state("networkidle")
    await page.goto(live_url + "/")
    await page.get_by_role("button", name="Open chat").click()
    await page.get_by_role("dialog").wait_for()
    await context.close()
    assert violations == []
