"""Erasing over HTTP: admin only, a dry run that counts what would go, a confirmation that must
repeat the id or the value, unknown ids 404, and the customer's widget told the conversation was
deleted. The request schema and the validation agree on what is a valid body."""

import jsonschema
import pytest

from backend.agents.models import AgentRole
from tests.helpers import auth, send, start
from tests.support import make_agent

ERASURES = "/api/v1/admin/erasures"


async def test_an_admin_previews_then_erases_by_conversation_or_by_customer(client):
    _, admin = await make_agent(client.app, AgentRole.ADMIN)
    _, agent = await make_agent(client.app)
    email = "erase-api-probe@example.com"
    by_id = await start(client, context={"email": "someone@example.com"})
    await send(client, by_id, "Where is my parcel?")
    by_email = [await start(client, context={"email": email}) for _ in range(2)]
    cid = by_id["conversation_id"]

    refused = await client.post(ERASURES, headers=agent, json={"conversation_id": cid, "dry_run": True})
    assert refused.status_code == 403

    preview = await client.post(ERASURES, headers=admin, json={"conversation_id": cid, "dry_run": True})
    assert preview.status_code == 200, preview.text
    counts = {"conversations": 1, "messages": 2, "identity_records": 1, "notes": 0, "rating_comments": 0}
    assert preview.json() == {"dry_run": True, "conversation_ids": [cid], "counts": counts}
    history = await client.get(f"/api/v1/widget/conversations/{cid}/messages", headers=auth(by_id))
    assert history.status_code == 200 and history.json()["messages"][0]["text"] == "Where is my parcel?"

    # The confirmation must repeat the id: anything else erases nothing.
    mismatch = await client.post(ERASURES, headers=admin, json={"conversation_id": cid, "confirm": cid[:-1]})
    assert mismatch.status_code == 409
    assert mismatch.json()["error"] == "confirmation_mismatch"
    assert "confirm must repeat the conversation id exactly" in mismatch.json()["detail"]
    still = await client.get(f"/api/v1/widget/conversations/{cid}/messages", headers=auth(by_id))
    assert still.status_code == 200

    answer = await client.post(ERASURES, headers=admin, json={"conversation_id": cid, "confirm": f" {cid} "})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"dry_run": False, "conversation_ids": [cid], "counts": counts}

    # The customer's widget is told, on its next request, that the conversation is gone.
    for method, path in [("GET", "/messages"), ("POST", "/messages"), ("GET", "/rating"), ("GET", "/events")]:
        gone = await client.request(
            method, f"/api/v1/widget/conversations/{cid}{path}", headers=auth(by_id), json={"text": "Hello?"}
        )
        assert gone.status_code == 410, (method, path, gone.text)
        assert gone.json()["error"] == "conversation_deleted"
        assert gone.json()["detail"].startswith("this conversation was deleted")
    # A token that never opened it learns nothing.
    wrong = await client.get(f"/api/v1/widget/conversations/{cid}/messages", headers=auth(by_email[0]))
    assert wrong.status_code == 403

    by_customer = {"customer_field": "email", "value": email}
    preview = await client.post(ERASURES, headers=admin, json={**by_customer, "dry_run": True})
    assert preview.json()["counts"]["conversations"] == 2
    wrong_value = await client.post(
        ERASURES, headers=admin, json={**by_customer, "confirm": "ada@example.com"}
    )
    assert wrong_value.status_code == 409 and "repeat the value exactly" in wrong_value.json()["detail"]
    answer = await client.post(ERASURES, headers=admin, json={**by_customer, "confirm": email})
    assert sorted(answer.json()["conversation_ids"]) == sorted(c["conversation_id"] for c in by_email)
    assert answer.json()["counts"] == preview.json()["counts"]
    transcript = (
        await client.get(f"/api/v1/conversations/{by_email[0]['conversation_id']}", headers=admin)
    ).json()
    assert transcript["context"] is None
    again = await client.post(ERASURES, headers=admin, json={**by_customer, "confirm": email})
    assert again.json()["conversation_ids"] == [] and again.json()["counts"]["conversations"] == 0


async def test_erasure_requests_are_checked(client):
    _, admin = await make_agent(client.app, AgentRole.ADMIN)

    async def refused(body: object) -> tuple[int, str]:
        response = await client.post(ERASURES, headers=admin, json=body)
        return response.status_code, response.json()["detail"]

    assert await refused({"dry_run": True}) == (
        422,
        "body: Value error, give either conversation_id, or customer_field and value",
    )
    both = {"conversation_id": "x", "customer_field": "email", "value": "a@b.c", "confirm": "x"}
    assert (await refused(both))[0] == 422
    assert await refused({"customer_field": "email", "dry_run": True}) == (
        422,
        "body: Value error, customer_field and value go together",
    )
    assert await refused({"conversation_id": "x"}) == (
        422,
        "body: Value error, to erase, type the conversation id again in confirm (or set dry_run)",
    )
    assert await refused(
        {"conversation_id": None, "value": "a", "customer_field": "email", "dry_run": True}
    ) == (
        422,
        "body: Value error, conversation_id may be left out but not null",
    )
    missing = "00000000-0000-0000-0000-000000000000"
    assert await refused({"conversation_id": missing, "confirm": missing}) == (
        404,
        f"no conversation {missing!r}",
    )
    assert await refused({"conversation_id": missing, "dry_run": True}) == (
        404,
        f"no conversation {missing!r}",
    )


BODIES = [
    {},
    {"dry_run": True},
    {"conversation_id": "", "dry_run": True},
    {"conversation_id": "", "customer_field": "email", "value": "a@b.c", "dry_run": True},
    {"conversation_id": None, "customer_field": "email", "value": "a@b.c", "dry_run": True},
    {"conversation_id": "x", "customer_field": "email", "value": "a@b.c", "dry_run": True},
    {"conversation_id": "x", "value": "a@b.c", "dry_run": True},
    {"customer_field": "email", "dry_run": True},
    {"customer_field": "email", "value": "", "dry_run": True},
    {"customer_field": "", "value": "a@b.c", "dry_run": True},
    {"customer_field": "email", "value": "a@b.c", "dry_run": True},
    {"customer_field": "email", "value": "a@b.c", "dry_run": False},
    {"customer_field": "email", "value": "a@b.c"},
    {"customer_field": "email", "value": "a@b.c", "confirm": "a@b.c"},
    {"customer_field": "email", "value": "a@b.c", "confirm": None},
    {"customer_field": "email", "value": "a@b.c", "dry_run": None},
    {"conversation_id": "x", "confirm": "x"},
    {"conversation_id": "x" * 37, "dry_run": True},
    {"conversation_id": "x", "confirm": "y"},
]


@pytest.mark.parametrize("body", BODIES, ids=[str(b) for b in BODIES])
async def test_the_schema_and_the_validation_agree(client, body):
    """A body the published schema allows is never a 422, and one it refuses always is."""
    _, admin = await make_agent(client.app, AgentRole.ADMIN)
    schema = client.app.openapi()["components"]["schemas"]["ErasureIn"]
    valid = jsonschema.Draft202012Validator(schema).is_valid(body)
    response = await client.post(ERASURES, headers=admin, json=body)
    assert (response.status_code == 422) == (not valid), (valid, response.status_code, response.text)
