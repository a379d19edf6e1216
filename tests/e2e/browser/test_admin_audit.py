"""The audit log on the admin page in Debian's Chromium, under the pages' content security policy,
in a browser eight hours behind UTC: actions read as their labels, an export's range reads as
its form had it (the last day included, not the exclusive end the API keeps), and the filter by
who, what and when narrows the log."""

import uuid
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import httpx
from playwright.async_api import expect

from backend.agents.models import AgentRole
from tests.e2e.browser.admin_session import signed_in_admin, watched
from tests.support import client_app, make_agent

TIME_ZONE = "America/Los_Angeles"


async def names_of(url: str, headers: dict[str, str]) -> dict[int, str]:
    async with httpx.AsyncClient(base_url=url) as http:
        return {a["id"]: a["name"] for a in (await http.get("/api/v1/agents/names", headers=headers)).json()}


async def test_the_audit_log_reads_as_its_forms_and_filters(browser, live_url):
    app = client_app(live_url)
    first_id, first = await make_agent(app, AgentRole.ADMIN)
    second_id, second = await make_agent(app, AgentRole.ADMIN)
    origin = f"https://audit-{uuid.uuid4().hex[:8]}.example.com"
    async with httpx.AsyncClient(base_url=live_url) as http:
        added = await http.post("/api/v1/admin/widget-origins", headers=second, json={"origin": origin})
        assert added.status_code == 201
    names = await names_of(live_url, first)

    async with watched(browser, TIME_ZONE) as context:
        page = await signed_in_admin(context, live_url, first)
        records = page.get_by_role("region", name="Records: export, erasure, audit log")
        export = records.get_by_role("form", name="Export transcripts")
        await export.get_by_label("From").fill("2025-12-01")
        await export.get_by_label("to (inclusive)").fill("2025-12-04")
        async with page.expect_download():
            await export.get_by_role("button", name="Export").click()

        log = records.get_by_role("table", name="Audit log")
        cells = log.locator("tbody tr").first.locator("td")
        await expect(cells.nth(2)).to_have_text("Exported transcripts")
        await expect(cells.nth(1)).to_have_text(names[first_id])
        await expect(cells.nth(4)).to_have_text(
            "1 Dec 2025 to 4 Dec 2025 (inclusive, UTC days) · CSV · every bot"
        )
        assert await cells.nth(2).get_attribute("title") == "transcripts.export"

        # Who: only the first admin's entries.
        audit_filter = records.get_by_role("form", name="Filter the audit log")
        await audit_filter.get_by_label("Who").select_option(label=names[first_id])
        await audit_filter.get_by_role("button", name="Filter").click()
        await expect(log.locator("tbody tr")).to_have_count(1)
        await expect(records.locator("#audit-info")).to_have_text("1–1 of 1")

        # What, by whom: the second admin's origin.
        await audit_filter.get_by_label("Who").select_option(label=names[second_id])
        await audit_filter.get_by_label("did").select_option(label="Allowed a widget origin")
        await audit_filter.get_by_role("button", name="Filter").click()
        await expect(log.locator("tbody tr td:nth-child(5)")).to_have_text([origin])

        # When: whole days of this browser's time zone, the last one included.
        today = datetime.now(ZoneInfo(TIME_ZONE)).date()
        await audit_filter.get_by_label("from").fill(today.isoformat())
        await audit_filter.get_by_label("to (inclusive)").fill(today.isoformat())
        await audit_filter.get_by_role("button", name="Filter").click()
        await expect(log.locator("tbody tr td:nth-child(5)")).to_have_text([origin])
        await audit_filter.get_by_label("to (inclusive)").fill((today - timedelta(days=1)).isoformat())
        await audit_filter.get_by_label("from").fill((today - timedelta(days=1)).isoformat())
        await audit_filter.get_by_role("button", name="Filter").click()
        await expect(log.locator("tbody tr")).to_have_text(["No entry matches"])

        # Clear: every entry again, newest first.
        await audit_filter.get_by_role("button", name="Clear").click()
        await expect(log.locator("tbody tr").first.locator("td").nth(2)).to_have_text("Exported transcripts")
        assert await audit_filter.get_by_label("Who").input_value() == ""
    async with httpx.AsyncClient(base_url=live_url) as http:  # other tests list the origins added
        assert (
            await http.delete(f"/api/v1/admin/widget-origins/{added.json()['id']}", headers=second)
        ).is_success
