"""Agents' credentials on the real stack: every staff endpoint needs a token, stored hashed, revocable."""

from sqlalchemy import select

from backend.agents.models import AgentRole, ApiToken
from tests.helpers import auth, start
from tests.support import make_agent

API = "/api/v1/conversations"


async def test_every_agent_endpoint_needs_an_agent_token(client):
    conversation = await start(client)
    cid = conversation["conversation_id"]
    _, agent = await make_agent(client.app)
    calls = [
        ("GET", API),
        ("GET", f"{API}/{cid}"),
        ("POST", f"{API}/{cid}/take-over"),
        ("GET", "/api/v1/reports"),
        ("GET", "/api/v1/canned-responses"),
        ("GET", "/api/v1/me"),
    ]
    for method, url in calls:
        assert (await client.request(method, url)).status_code == 401, url
        assert (await client.request(method, url, headers=auth(conversation))).status_code == 401, url
        assert (
            await client.request(method, url, headers={"Authorization": "Bearer pdk_forged"})
        ).status_code == 401
    assert (await client.get("/api/v1/me", headers=agent)).json()["role"] == "agent"
    # Admin-only endpoints: the wrong role is a 403, not a 401.
    for method, url in [("GET", "/api/v1/agents"), ("GET", "/api/v1/webhooks"), ("POST", "/api/v1/agents")]:
        assert (await client.request(method, url, headers=agent, json={})).status_code == 403, url


async def test_tokens_are_stored_hashed_and_revocable(client):
    _, admin = await make_agent(client.app, AgentRole.ADMIN)
    created = await client.post(
        "/api/v1/agents",
        headers=admin,
        json={"name": "Bo", "email": "bo-hashed@example.com", "role": "agent"},
    )
    assert created.status_code == 201
    plain = created.json()["token"]
    bo = {"Authorization": f"Bearer {plain}"}
    assert (await client.get("/api/v1/me", headers=bo)).json()["email"] == "bo-hashed@example.com"
    async with client.app.state.services.sessions() as db:
        stored = (
            await db.scalars(select(ApiToken).where(ApiToken.agent_id == created.json()["agent"]["id"]))
        ).one()
    assert plain not in (stored.token_hash, stored.display_prefix) and len(stored.token_hash) == 64
    assert (await client.delete(f"/api/v1/tokens/{stored.id}", headers=bo)).status_code == 200
    assert (await client.get("/api/v1/me", headers=bo)).status_code == 401


async def test_every_agent_may_read_colleagues_names_and_nothing_more(client):
    colleague_id, _ = await make_agent(client.app, AgentRole.ADMIN)
    me_id, agent = await make_agent(client.app)
    assert (await client.get("/api/v1/agents/names")).status_code == 401
    response = await client.get("/api/v1/agents/names", headers=agent)
    assert response.status_code == 200
    names = {entry["id"]: entry for entry in response.json()}
    assert {me_id, colleague_id} <= set(names)
    assert set(names[colleague_id]) == {"id", "name", "active"}  # no e-mail, no role, no tokens
    colleague = (await client.get("/api/v1/me", headers=agent)).json()
    assert names[me_id]["name"] == colleague["name"]
