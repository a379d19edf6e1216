"""Every admin action that changes something writes an audit entry.

The admin write endpoints are read from the app's own routes: every POST, PUT, PATCH or DELETE
under /api/v1/admin, or that needs an admin's token. Each must have an example request below,
and that request must add an entry by the admin who sent it: a new endpoint without one, or
one that forgets to audit, fails here."""

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from backend.agents import audit
from backend.agents.auth import current_admin
from backend.agents.models import AgentRole
from tests.helpers import start
from tests.support import make_agent

WRITES = {"POST", "PUT", "PATCH", "DELETE"}
ADMIN_PREFIX = "/api/v1/admin/"

# A request: its concrete path and JSON body, after whatever it needs exists.
Prepared = tuple[str, dict[str, Any] | None]
Prepare = Callable[[httpx.AsyncClient, dict[str, str]], Awaitable[Prepared]]


async def erasure(client: httpx.AsyncClient, _admin: dict[str, str]) -> Prepared:
    cid = (await start(client))["conversation_id"]
    return "/api/v1/admin/erasures", {"conversation_id": cid, "confirm": cid}


async def new_origin(client: httpx.AsyncClient, admin: dict[str, str]) -> Prepared:
    return "/api/v1/admin/widget-origins", {"origin": f"https://audit-{uuid.uuid4().hex[:8]}.example.com"}


async def origin_to_remove(client: httpx.AsyncClient, admin: dict[str, str]) -> Prepared:
    path, body = await new_origin(client, admin)
    added = await client.post(path, headers=admin, json=body)
    return f"{path}/{added.json()['id']}", None


async def prompts_reload(_client: httpx.AsyncClient, _admin: dict[str, str]) -> Prepared:
    return "/api/v1/admin/prompts/reload", None


async def new_agent(_client: httpx.AsyncClient, _admin: dict[str, str]) -> Prepared:
    email = f"audited-{uuid.uuid4().hex[:8]}@example.com"
    return "/api/v1/agents", {"name": "Audited Agent", "email": email}


async def new_token(client: httpx.AsyncClient, admin: dict[str, str]) -> Prepared:
    agent_id, _ = await make_agent(client.app)
    return f"/api/v1/agents/{agent_id}/tokens", None


async def new_webhook(_client: httpx.AsyncClient, _admin: dict[str, str]) -> Prepared:
    return "/api/v1/webhooks", {"url": "http://127.0.0.1:9/audited"}


async def webhook_to_delete(client: httpx.AsyncClient, admin: dict[str, str]) -> Prepared:
    created = await client.post("/api/v1/webhooks", headers=admin, json={"url": "http://127.0.0.1:9/gone"})
    return f"/api/v1/webhooks/{created.json()['id']}", None


EXAMPLES: dict[tuple[str, str], tuple[Prepare, audit.AuditAction]] = {
    ("POST", "/api/v1/admin/erasures"): (erasure, audit.ERASE),
    ("POST", "/api/v1/admin/widget-origins"): (new_origin, audit.ORIGIN_ADDED),
    ("DELETE", "/api/v1/admin/widget-origins/{origin_id}"): (origin_to_remove, audit.ORIGIN_REMOVED),
    ("POST", "/api/v1/admin/prompts/reload"): (prompts_reload, audit.PROMPTS_RELOADED),
    ("POST", "/api/v1/agents"): (new_agent, audit.AGENT_CREATED),
    ("POST", "/api/v1/agents/{agent_id}/tokens"): (new_token, audit.TOKEN_CREATED),
    ("POST", "/api/v1/webhooks"): (new_webhook, audit.WEBHOOK_CREATED),
    ("DELETE", "/api/v1/webhooks/{webhook_id}"): (webhook_to_delete, audit.WEBHOOK_DELETED),
}


def needs_admin(dependant: Dependant) -> bool:
    return any(d.call is current_admin or needs_admin(d) for d in dependant.dependencies)


def admin_writes(app) -> set[tuple[str, str]]:
    found = set()
    for route in app.routes:
        if not isinstance(route, APIRoute):
            continue
        for method in route.methods & WRITES:
            if route.path.startswith(ADMIN_PREFIX) or needs_admin(route.dependant):
                found.add((method, route.path))
    return found


async def entries_by(client: httpx.AsyncClient, admin: dict[str, str], admin_id: int) -> list[dict[str, Any]]:
    answer = await client.get(f"/api/v1/admin/audit?actor_id={admin_id}&page_size=200", headers=admin)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["items"])


def test_the_routes_are_read_not_listed_by_hand(client):
    """The finder sees the admin writes it should (and not an agent's own token revocation)."""
    found = admin_writes(client.app)
    assert ("POST", "/api/v1/admin/erasures") in found and ("POST", "/api/v1/webhooks") in found
    assert ("DELETE", "/api/v1/tokens/{token_id}") not in found
    assert all(method in WRITES for method, _ in found)


async def test_every_admin_write_endpoint_writes_an_audit_entry(client):
    found = admin_writes(client.app)
    missing = sorted(found - EXAMPLES.keys())
    assert not missing, f"admin write endpoints without an example here (add one, and audit them): {missing}"
    assert not EXAMPLES.keys() - found, f"examples of endpoints that are gone: {EXAMPLES.keys() - found}"
    for (method, _template), (prepare, action) in sorted(EXAMPLES.items()):
        admin_id, admin = await make_agent(client.app, AgentRole.ADMIN)
        path, body = await prepare(client, admin)
        before = await entries_by(client, admin, admin_id)
        answer = await client.request(method, path, headers=admin, json=body)
        assert answer.is_success, (method, path, answer.status_code, answer.text)
        after = await entries_by(client, admin, admin_id)
        new = {e["action"]: e for e in after[: len(after) - len(before)]}
        assert action in new, (method, path, list(new))
        assert new[action]["action_label"] == audit.LABELS[action]
        if action == audit.ORIGIN_ADDED:  # other tests list the origins admins added
            await client.delete(f"{path}/{answer.json()['id']}", headers=admin)
