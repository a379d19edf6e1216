"""Ratings, exports, erasure and the audit log in Debian's Chromium, under the pages' content
security policy: a customer rates a resolved conversation in the widget (in English and in
Chinese), an admin exports transcripts and erases a customer on the admin page, and the audit
log there shows what was done."""

import csv
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from playwright.async_api import expect

from backend.agents.models import AgentRole
from tests.support import SCREENSHOTS, client_app, make_agent

SAVED_CONVERSATION = """(bot) => {
  const key = Object.keys(localStorage).find((name) => name.endsWith(`:${bot}`));
  return key ? JSON.parse(localStorage.getItem(key)) : null;
}"""


@pytest.fixture
async def watched(browser):
    """A page, and the content security policy violations it reports."""
    context = await browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = await context.new_page()
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    yield page, violations
    await context.close()


async def resolve(live_url: str, conversation_id: str, agent: dict[str, str]) -> None:
    async with httpx.AsyncClient(base_url=live_url) as http:
        answer = await http.post(f"/api/v1/conversations/{conversation_id}/resolve", headers=agent)
        assert answer.status_code == 200, answer.text


async def test_a_customer_rates_the_conversation_once_it_is_resolved(watched, live_url):
    customer, violations = watched
    _, agent = await make_agent(client_app(live_url))
    await customer.goto(live_url + "/")
    await customer.get_by_role("button", name="Open chat").click()
    dialog = customer.get_by_role("dialog", name="Northwind Outfitters support")
    box = dialog.get_by_role("textbox", name="Type your message")
    await box.fill("Can I return a tent?")
    await box.press("Enter")
    await expect(dialog.locator("[data-role=assistant]")).to_have_count(2)
    saved = await customer.evaluate(SAVED_CONVERSATION, "shop-en")
    prompt = dialog.get_by_role("form", name="How did we do? Rate this conversation")
    await expect(prompt).to_have_count(0)

    # The agent resolves it: the status reaches the widget live, and the prompt appears.
    await resolve(live_url, saved["conversation_id"], agent)
    await expect(prompt).to_be_visible()
    await prompt.get_by_role("button", name="Send rating").click()
    await expect(prompt).to_contain_text("Choose 1 to 5 stars first.")
    await prompt.get_by_role("button", name="4 of 5").click()
    await expect(prompt.get_by_role("button", name="4 of 5")).to_have_attribute("aria-pressed", "true")
    await prompt.get_by_label("Anything to add? (optional)").fill("Quick <b>answer</b>")
    await customer.screenshot(path=SCREENSHOTS / "widget-rating.png")
    await prompt.get_by_role("button", name="Send rating").click()
    await expect(dialog.get_by_text("Thanks for rating this conversation 4 of 5.")).to_be_visible()
    await expect(prompt).to_have_count(0)

    async with httpx.AsyncClient(base_url=live_url) as http:
        url = f"/api/v1/widget/conversations/{saved['conversation_id']}/rating"
        stored = (await http.get(url, headers={"Authorization": f"Bearer {saved['customer_token']}"})).json()
    assert (stored["rating"]["score"], stored["rating"]["comment"]) == (4, "Quick <b>answer</b>")

    # A reload shows the rating given, not a second prompt.
    await customer.reload()
    await customer.get_by_role("button", name="Open chat").click()
    await expect(dialog.get_by_text("Thanks for rating this conversation 4 of 5.")).to_be_visible()
    await expect(prompt).to_have_count(0)
    assert violations == []


async def test_the_rating_prompt_speaks_the_bots_language(watched, live_url):
    customer, violations = watched
    _, agent = await make_agent(client_app(live_url))
    await customer.goto(live_url + "/?bot=appliance-zh")
    await customer.get_by_role("button", name="打开聊天").click()
    dialog = customer.get_by_role("dialog")
    await expect(dialog.locator("[data-role=assistant]")).to_have_count(1)
    saved = await customer.evaluate(SAVED_CONVERSATION, "appliance-zh")

    # Resolved while the customer was away: the prompt is there when they come back.
    await resolve(live_url, saved["conversation_id"], agent)
    await customer.reload()
    await customer.get_by_role("button", name="打开聊天").click()
    prompt = dialog.get_by_role("form", name="您对本次服务满意吗？请为本次会话评分")
    await expect(prompt).to_be_visible()
    await prompt.get_by_role("button", name="2 星（满分 5 星）").click()
    await prompt.get_by_role("button", name="提交评价").click()
    await expect(dialog.get_by_text("感谢您的评价：2 星（满分 5 星）。")).to_be_visible()
    assert violations == []


async def test_an_admin_exports_and_erases_and_the_audit_log_shows_it(watched, live_url):
    admin_page, violations = watched
    app = client_app(live_url)
    _, admin = await make_agent(app, AgentRole.ADMIN)
    marker = f"parcel{uuid.uuid4().hex[:8]}"
    email = f"{marker}@example.com"
    async with httpx.AsyncClient(base_url=live_url) as http:
        started = await http.post(
            "/api/v1/widget/conversations", json={"bot": "shop-en", "context": {"email": email}}
        )
        conversation = started.json()
        cid = conversation["conversation_id"]
        customer = {"Authorization": f"Bearer {conversation['customer_token']}"}
        sent = await http.post(
            f"/api/v1/widget/conversations/{cid}/messages",
            headers=customer,
            json={"text": f"Where is {marker}?"},
        )
        assert sent.status_code == 200

    await admin_page.goto(live_url + "/admin")
    await admin_page.fill("#admin-token", admin["Authorization"].removeprefix("Bearer "))
    await admin_page.click("text=Sign in")
    records = admin_page.get_by_role("region", name="Records: export, erasure, audit log")
    await expect(records).to_be_visible()

    # Export today's transcripts as CSV: the file has the customer's message.
    today = datetime.now(UTC).date()
    export = records.get_by_role("form", name="Export transcripts")
    await export.get_by_label("From").fill(today.isoformat())
    await export.get_by_label("to (inclusive)").fill(today.isoformat())
    async with admin_page.expect_download() as download_info:
        await export.get_by_role("button", name="Export").click()
    download = await download_info.value
    assert download.suggested_filename == f"transcripts-{today}-{today}.csv"
    rows = list(csv.DictReader(Path(await download.path()).read_text(encoding="utf-8").splitlines()))
    assert [r["text"] for r in rows if r["conversation_id"] == cid][0] == f"Where is {marker}?"
    await expect(records.locator("#export-status")).to_contain_text("Exported transcripts-")

    # As JSON too.
    await export.get_by_label("as", exact=True).select_option("json")
    async with admin_page.expect_download() as download_info:
        await export.get_by_role("button", name="Export").click()
    exported = json.loads(Path(await (await download_info.value).path()).read_text(encoding="utf-8"))
    assert any(r["conversation_id"] == cid and r["role"] == "user" for r in exported)

    # A range over the limit is refused with the limit.
    await export.get_by_label("From").fill((today - timedelta(days=60)).isoformat())
    await export.get_by_role("button", name="Export").click()
    await expect(records.locator("#export-status")).to_contain_text("at most 31 days")

    # Erase the customer by their e-mail address, typed again to confirm.
    await records.get_by_label("or customer field").fill("email")
    await records.get_by_label("equal to").fill(email)
    await records.get_by_role("button", name="Preview erasure").click()
    confirmation = records.get_by_role("form", name="Confirm the erasure")
    await confirmation.get_by_label(f"Type the value {email} to confirm").fill(email)
    await confirmation.get_by_role("button", name="Erase for good").click()
    await expect(records.locator("#erase-status")).to_have_text(
        "Erased 1 conversation: the texts of 2 messages, 1 identity record, 0 private notes "
        "and 0 rating comments."
    )
    async with httpx.AsyncClient(base_url=live_url) as http:
        transcript = (await http.get(f"/api/v1/conversations/{cid}", headers=admin)).json()
    assert transcript["context"] is None and {m["text"] for m in transcript["messages"]} == {""}

    # The audit log, newest first: the erasure, then the exports.
    log = records.get_by_role("table", name="Audit log")
    first = log.locator("tbody tr").first
    await expect(first).to_contain_text("Erased a conversation")
    await expect(first).to_contain_text(f"conversation {cid}")
    await expect(first).to_contain_text("matched by customer email")
    actions = await log.locator("tbody tr td:nth-child(3)").all_text_contents()
    assert actions[:3] == ["Erased a conversation", "Exported transcripts", "Exported transcripts"]
    assert email not in await log.text_content()
    await admin_page.screenshot(path=SCREENSHOTS / "admin-records.png", full_page=True)
    assert violations == []
