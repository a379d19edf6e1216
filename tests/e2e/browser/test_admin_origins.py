"""The widget origins on the admin page in Debian's Chromium, under the pages' content security
policy: an invalid origin is refused with how to write one, a valid one is allowed at once (a
page of it passes the widget API's preflight) and removed again, and the audit log shows who did
each, and when."""

import uuid

import httpx
from playwright.async_api import expect

from backend.agents.models import AgentRole
from tests.e2e.browser.admin_session import signed_in_admin, watched
from tests.support import client_app, make_agent

PREFLIGHT = {"access-control-request-method": "POST", "access-control-request-headers": "content-type"}


async def preflight(url: str, origin: str) -> int:
    async with httpx.AsyncClient(base_url=url) as http:
        answer = await http.options("/api/v1/widget/conversations", headers={"origin": origin, **PREFLIGHT})
    return answer.status_code


async def test_an_admin_allows_and_removes_an_origin(browser, live_url):
    admin_id, admin = await make_agent(client_app(live_url), AgentRole.ADMIN)
    host = f"shop-{uuid.uuid4().hex[:8]}.example.com"
    origin = f"https://{host}:8443"
    async with watched(browser) as context:
        page = await signed_in_admin(context, live_url, admin)
        section = page.get_by_role("region", name="Widget origins")
        table = section.get_by_role("table")
        form = section.get_by_role("form", name="Allow another origin")
        field = form.get_by_label("Origin (scheme://host:port)")

        for invalid in (host, f"{origin}/shop"):
            await field.fill(invalid)
            await form.get_by_role("button", name="Allow").click()
            await expect(form.get_by_role("alert")).to_contain_text(
                f"'{invalid}' is not an origin: write scheme://host:port"
            )
        await expect(table).not_to_contain_text(host)
        assert await preflight(live_url, origin) == 403

        await field.fill(f"  HTTPS://{host.upper()}:8443/ ")
        await form.get_by_role("button", name="Allow").click()
        await expect(form.get_by_role("status")).to_have_text(
            f"Allowed {origin}: its pages may embed the widget now."
        )
        await expect(form.get_by_role("alert")).to_have_text("")
        added = table.get_by_role("row").filter(has_text=origin)
        name = await admin_name(live_url, admin, admin_id)
        await expect(added.locator("td").nth(1)).to_have_text(name)
        assert await preflight(live_url, origin) == 200

        audit = page.get_by_role("table", name="Audit log")
        newest = audit.locator("tbody tr").first.locator("td")
        await expect(newest.nth(2)).to_have_text("Allowed a widget origin")
        await expect(newest.nth(4)).to_have_text(origin)

        await added.get_by_role("button", name=f"Remove {origin}").click()
        await expect(form.get_by_role("status")).to_have_text(f"Removed {origin}.")
        await expect(table).not_to_contain_text(host)
        await expect(newest.nth(2)).to_have_text("Removed a widget origin")
        await expect(newest.nth(1)).to_have_text(name)
        assert await preflight(live_url, origin) == 403


async def admin_name(url: str, headers: dict[str, str], agent_id: int) -> str:
    async with httpx.AsyncClient(base_url=url) as http:
        names = (await http.get("/api/v1/agents/names", headers=headers)).json()
    return next(a["name"] for a in names if a["id"] == agent_id)
