"""Erasing over HTTP: admin only, one way at a time, unknown ids 404, and the customer's widget
token opens nothing afterwards."""

from backend.agents.models import AgentRole
from tests.helpers import auth, start
from tests.support import make_agent


async def test_an_admin_erases_by_conversation_or_by_customer(client):
    _, admin = await make_agent(client.app, AgentRole.ADMIN)
    _, agent = await make_agent(client.app)
    email = "erase-api-probe@example.com"
    by_id = await start(client, context={"email": "someone@example.com"})
    by_email = [await start(client, context={"email": email}) for _ in range(2)]

    refused = await client.post(
        "/api/v1/admin/erasures", headers=agent, json={"conversation_id": by_id["conversation_id"]}
    )
    assert refused.status_code == 403
    answer = await client.post(
        "/api/v1/admin/erasures", headers=admin, json={"conversation_id": by_id["conversation_id"]}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"erased": [by_id["conversation_id"]]}
    history = await client.get(
        f"/api/v1/widget/conversations/{by_id['conversation_id']}/messages", headers=auth(by_id)
    )
    assert history.status_code == 403

    answer = await client.post(
        "/api/v1/admin/erasures", headers=admin, json={"customer_field": "email", "value": email}
    )
    assert sorted(answer.json()["erased"]) == sorted(c["conversation_id"] for c in by_email)
    transcript = (
        await client.get(f"/api/v1/conversations/{by_email[0]['conversation_id']}", headers=admin)
    ).json()
    assert transcript["context"] is None
    again = await client.post(
        "/api/v1/admin/erasures", headers=admin, json={"customer_field": "email", "value": email}
    )
    assert again.json() == {"erased": []}


async def test_erasure_requests_are_checked(client):
    _, admin = await make_agent(client.app, AgentRole.ADMIN)

    async def refused(body: object) -> tuple[int, str]:
        response = await client.post("/api/v1/admin/erasures", headers=admin, json=body)
        return response.status_code, response.json()["detail"]

    assert await refused({}) == (
        422,
        "body: Value error, give either conversation_id, or customer_field and value",
    )
    both = {"conversation_id": "x", "customer_field": "email", "value": "a@b.c"}
    assert (await refused(both))[0] == 422
    assert await refused({"customer_field": "email"}) == (
        422,
        "body: Value error, customer_field and value go together",
    )
    missing = "00000000-0000-0000-0000-000000000000"
    assert await refused({"conversation_id": missing}) == (404, f"no conversation {missing!r}")
