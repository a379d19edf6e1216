"""Erasure on the admin page in Debian's Chromium, under the pages' content security policy: a
preview that counts what would go, a confirmation that must repeat the conversation id (a wrong
one is refused and erases nothing), and the customer's widget told plainly that the
conversation was deleted, on its next message and after a reload."""

import httpx
from playwright.async_api import expect

from backend.agents.models import AgentRole
from tests.e2e.browser.admin_session import signed_in_admin, watched
from tests.support import SCREENSHOTS, client_app, make_agent

SAVED_CONVERSATION = """(bot) => {
  const key = Object.keys(localStorage).find((name) => name.endsWith(`:${bot}`));
  return key ? JSON.parse(localStorage.getItem(key)) : null;
}"""
DELETED = "This conversation was deleted: its messages are no longer kept."
GREETING = "Hi, I'm the Northwind Outfitters assistant. How can I help you today?"


async def test_an_admin_previews_confirms_and_the_customer_is_told(browser, live_url):
    _, admin = await make_agent(client_app(live_url), AgentRole.ADMIN)
    async with watched(browser) as customer_context, watched(browser) as admin_context:
        customer = await customer_context.new_page()
        await customer.goto(live_url + "/")
        await customer.get_by_role("button", name="Open chat").click()
        dialog = customer.get_by_role("dialog", name="Northwind Outfitters support")
        box = dialog.get_by_role("textbox", name="Type your message")
        await box.fill("My order 4471 never came")
        await box.press("Enter")
        await expect(dialog.locator("[data-role=assistant]")).to_have_count(2)
        cid = (await customer.evaluate(SAVED_CONVERSATION, "shop-en"))["conversation_id"]

        page = await signed_in_admin(admin_context, live_url, admin)
        records = page.get_by_role("region", name="Records: export, erasure, audit log")
        eraser = records.get_by_role("form", name="Erase a customer's conversations")
        status = records.locator("#erase-status")
        # Nothing matches: nothing to confirm.
        await eraser.get_by_label("equal to").fill("nobody-here@example.com")
        await eraser.get_by_role("button", name="Preview erasure").click()
        await expect(status).to_have_text("No conversation matches: nothing to erase.")
        # Both ways at once: the API's reason.
        await eraser.get_by_label("Conversation id").fill(cid)
        await eraser.get_by_role("button", name="Preview erasure").click()
        await expect(status).to_contain_text("give either conversation_id, or customer_field and value")
        await eraser.get_by_label("equal to").fill("")

        await eraser.get_by_role("button", name="Preview erasure").click()
        confirmation = records.get_by_role("form", name="Confirm the erasure")
        await expect(confirmation).to_be_visible()
        await expect(confirmation.locator("#erase-summary")).to_have_text(
            "This erases 1 conversation: the texts of 2 messages, 0 identity records, 0 private notes "
            "and 0 rating comments. It cannot be undone."
        )
        typed = confirmation.get_by_label(f"Type the conversation id {cid} to confirm")
        await expect(typed).to_be_focused()
        await typed.fill(cid[:-1])
        await confirmation.get_by_role("button", name="Erase for good").click()
        await expect(confirmation.get_by_role("alert")).to_contain_text(
            "confirm must repeat the conversation id exactly"
        )
        async with httpx.AsyncClient(base_url=live_url) as http:
            kept = (await http.get(f"/api/v1/conversations/{cid}", headers=admin)).json()
        assert kept["messages"][0]["text"] == "My order 4471 never came"
        await page.locator(".erasure").screenshot(path=SCREENSHOTS / "admin-erasure.png")

        await typed.fill(cid)
        await confirmation.get_by_role("button", name="Erase for good").click()
        await expect(status).to_have_text(
            "Erased 1 conversation: the texts of 2 messages, 0 identity records, 0 private notes "
            "and 0 rating comments."
        )
        await expect(confirmation).to_be_hidden()
        first = records.get_by_role("table", name="Audit log").locator("tbody tr").first.locator("td")
        await expect(first.nth(2)).to_have_text("Erased a conversation")
        await expect(first.nth(3)).to_have_text(f"conversation {cid}")
        await expect(first.nth(4)).to_have_text("matched by conversation id")

        # The customer's next message: told plainly, and offered a new conversation.
        await box.fill("Hello?")
        await box.press("Enter")
        error = dialog.get_by_role("alert")
        await expect(error).to_contain_text(DELETED)
        await expect(dialog.get_by_role("button", name="Start a new conversation")).to_be_visible()
        # After a reload too: the notice, then a new conversation's greeting.
        await customer.reload()
        await customer.get_by_role("button", name="Open chat").click()
        await expect(dialog.get_by_text(DELETED)).to_be_visible()
        await expect(dialog.locator("[data-role=assistant] .text")).to_have_text([GREETING])
        fresh = (await customer.evaluate(SAVED_CONVERSATION, "shop-en"))["conversation_id"]
        assert fresh != cid
