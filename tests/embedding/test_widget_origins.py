"""Which pages may embed the widget: a clear 403 on a refused preflight, and origins an admin adds
or removes in effect in every app process without a restart."""

import uuid

import pytest
from pydantic import ValidationError
from sqlalchemy import delete

from backend.agents.models import AgentRole
from backend.config import Settings
from backend.embedding.models import WidgetOrigin
from backend.embedding.origins import AllowedOrigins
from tests.support import make_agent, running_app

# Each run its own shop: the HTTP tier commits to the session's database.
HOST = f"shop-{uuid.uuid4().hex[:8]}.example.com"
SHOP = f"http://{HOST}:8443"
ORIGINS = "/api/v1/admin/widget-origins"
PREFLIGHT = {"access-control-request-method": "POST", "access-control-request-headers": "content-type"}


async def preflight(client, origin: str, path: str = "/api/v1/widget/conversations"):
    return await client.options(path, headers={"origin": origin, **PREFLIGHT})


async def test_a_refused_origin_gets_a_403_that_says_what_to_set(client):
    refused = await preflight(client, SHOP)
    assert refused.status_code == 403
    assert refused.json()["error"] == "origin_not_allowed"
    detail = refused.json()["detail"]
    assert SHOP in detail and "PREFIXDESK_WIDGET_ORIGINS" in detail and ORIGINS in detail
    assert "access-control-allow-origin" not in refused.headers
    # Only the widget API is meant for other origins.
    elsewhere = await preflight(client, SHOP, "/api/v1/conversations")
    assert elsewhere.status_code == 403 and "only the widget API" in elsewhere.json()["detail"]

    # The widget may always ask whether its page is allowed, and learns its limits.
    config = await client.get("/api/v1/widget/config", headers={"origin": SHOP})
    assert config.status_code == 200 and config.headers["access-control-allow-origin"] == "*"
    assert config.json() == {
        "max_message_chars": 4000,
        "origin": SHOP,
        "origin_allowed": False,
        "origins_setting": "PREFIXDESK_WIDGET_ORIGINS",
    }
    own = (await client.get("/api/v1/widget/config")).json()
    assert own["origin"] is None and own["origin_allowed"] is True


async def test_an_admin_allows_an_origin_in_every_process_without_a_restart(tiny_settings, tiny_engine):
    settings = tiny_settings.model_copy(update={"widget_origins": ["https://shop.example.com"]})
    async with running_app(settings, tiny_engine) as one, running_app(settings, tiny_engine) as two:
        _, admin = await make_agent(one.app, AgentRole.ADMIN)
        _, agent = await make_agent(one.app)
        # Both processes have read (and cached) the list before it changes.
        for app in (one, two):
            assert (await preflight(app, SHOP)).status_code == 403

        written = f"HTTP://{HOST.upper()}:8443/"  # as an admin might type it
        added = await one.post(ORIGINS, headers=admin, json={"origin": written})
        assert added.status_code == 201, added.text
        assert added.json()["origin"] == SHOP
        for app in (one, two):
            allowed = await preflight(app, SHOP)
            assert allowed.status_code == 200
            assert allowed.headers["access-control-allow-origin"] == SHOP
            started = await app.post(
                "/api/v1/widget/conversations", json={"bot": "shop-en"}, headers={"origin": SHOP}
            )
            assert started.status_code == 201 and started.headers["access-control-allow-origin"] == SHOP
            config = await app.get("/api/v1/widget/config", headers={"origin": SHOP})
            assert config.json()["origin_allowed"] is True
        # Scheme, host and port must match exactly.
        assert (await preflight(two, f"https://{HOST}:8443")).status_code == 403
        assert (await preflight(two, f"http://{HOST}")).status_code == 403

        listed = (await two.get(ORIGINS, headers=admin)).json()
        assert listed["configured"] == ["https://shop.example.com"]
        assert [o["origin"] for o in listed["added"]] == [SHOP]

        removed = await two.delete(f"{ORIGINS}/{added.json()['id']}", headers=admin)
        assert removed.status_code == 204
        for app in (one, two):
            assert (await preflight(app, SHOP)).status_code == 403
        assert (await preflight(one, "https://shop.example.com")).status_code == 200

        # Bad input is refused with what to do; only admins may change the list.
        bad = await one.post(ORIGINS, headers=admin, json={"origin": "shop.example.com"})
        assert bad.status_code == 422 and "scheme://host:port" in bad.json()["detail"]
        path = await one.post(ORIGINS, headers=admin, json={"origin": "https://shop.example.com/shop"})
        assert path.status_code == 422
        configured = await one.post(ORIGINS, headers=admin, json={"origin": "https://shop.example.com:443"})
        assert configured.status_code == 409 and "PREFIXDESK_WIDGET_ORIGINS" in configured.json()["detail"]
        again = await one.post(ORIGINS, headers=admin, json={"origin": SHOP})
        assert again.status_code == 201
        twice = await one.post(ORIGINS, headers=admin, json={"origin": SHOP})
        assert twice.status_code == 409
        refused = await one.post(ORIGINS, headers=agent, json={"origin": "http://x.example"})
        assert refused.status_code == 403
        assert (await one.get(ORIGINS)).status_code == 401
        assert (await one.delete(f"{ORIGINS}/999999", headers=admin)).status_code == 404
        await one.delete(f"{ORIGINS}/{again.json()['id']}", headers=admin)


def test_the_setting_refuses_what_is_not_an_origin():
    with pytest.raises(ValidationError, match="WIDGET_ORIGINS: 'shop.example.com' is not an origin"):
        Settings(widget_origins=["shop.example.com"])
    settings = Settings(widget_origins=["https://Shop.example.com:443/", "http://localhost:8080"])
    assert settings.widget_origins == ["https://shop.example.com", "http://localhost:8080"]


async def test_without_redis_a_process_caches_the_list_briefly_and_drops_it_on_a_change(services):
    now = [0.0]
    origins = AllowedOrigins(
        ["https://shop.example.com"], services.sessions, None, key_prefix="", ttl_s=5, clock=lambda: now[0]
    )
    assert await origins.allows("https://shop.example.com") and not await origins.allows(SHOP)
    assert not await origins.allows("null") and not await origins.allows(None)
    async with services.new_work() as work:
        work.db.add(WidgetOrigin(origin=SHOP))
    assert not await origins.allows(SHOP)  # the list read a moment ago
    now[0] += 6
    assert await origins.allows(SHOP)  # read again once it is older than the cache's lifetime
    async with services.new_work() as work:
        await work.db.execute(delete(WidgetOrigin).where(WidgetOrigin.origin == SHOP))
    await origins.changed()  # what the admin API does after its commit
    assert not await origins.allows(SHOP)


async def test_each_change_to_the_origins_is_in_the_audit_log(client):
    admin_id, admin = await make_agent(client.app, AgentRole.ADMIN)
    origin = f"https://audit-{uuid.uuid4().hex[:8]}.example.com:8443"
    added = await client.post(ORIGINS, headers=admin, json={"origin": origin.upper()})
    assert added.status_code == 201, added.text
    assert (added.json()["origin"], added.json()["added_by"]) == (origin, admin_id)
    removed = await client.delete(f"{ORIGINS}/{added.json()['id']}", headers=admin)
    assert removed.status_code == 204
    # Refused changes are not recorded: an invalid origin is a 422 that says how to write one.
    for bad in (
        "shop.example.com",
        "ftp://shop.example.com",
        "https://shop.example.com/path",
        "https://x:99999",
    ):
        refused = await client.post(ORIGINS, headers=admin, json={"origin": bad})
        assert refused.status_code == 422, bad
        assert "is not an origin: write scheme://host:port" in refused.json()["detail"]

    log = await client.get(f"/api/v1/admin/audit?actor_id={admin_id}", headers=admin)
    entries = [
        (e["action"], e["action_label"], e["target_type"], e["target_id"], e["details"], e["actor_name"])
        for e in log.json()["items"]
    ]
    name = entries[0][-1]
    assert entries == [
        (
            "widget_origin.remove",
            "Removed a widget origin",
            "widget_origin",
            str(added.json()["id"]),
            {"origin": origin},
            name,
        ),
        (
            "widget_origin.add",
            "Allowed a widget origin",
            "widget_origin",
            str(added.json()["id"]),
            {"origin": origin},
            name,
        ),
    ]
    assert name.startswith("admin ")
