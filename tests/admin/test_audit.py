"""The audit log: what agents and admins did, written in the transaction of the action, read by
admins newest first."""

import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest
from sqlalchemy import select

from backend.agents import audit
from backend.agents import service as agents
from backend.agents.models import AgentRole, AuditEntry
from backend.conversations.models import ConversationStatus
from tests.helpers import new_agent, open_conversation, stored
from tests.support import make_agent


async def entries_about(services, target_type: str, target_id: object) -> list[AuditEntry]:
    async with services.new_work() as work:
        rows = await work.db.scalars(
            select(AuditEntry)
            .where(AuditEntry.target_type == target_type, AuditEntry.target_id == str(target_id))
            .order_by(AuditEntry.id)
        )
        return list(rows)


async def test_take_over_assign_and_tokens_are_recorded_with_who_did_them(services):
    admin = await new_agent(services, AgentRole.ADMIN)
    agent = await new_agent(services)
    cid = (await open_conversation(services)).conversation.id
    async with services.new_work() as work:
        await services.inbox.take_over(work, cid, agent)
    async with services.new_work() as work:
        await services.inbox.assign(work, cid, admin.id, by=admin)
    async with services.new_work() as work:
        token, _plain = await agents.issue_token(work.db, agent, by=admin)
    async with services.new_work() as work:
        await agents.revoke_token(work.db, token.id, by=agent)
        await agents.revoke_token(work.db, token.id, by=agent)  # already revoked: nothing more to record

    on_conversation = await entries_about(services, "conversation", cid)
    assert [(e.action, e.actor_id, e.actor_name, e.details) for e in on_conversation] == [
        (audit.TAKE_OVER, agent.id, agent.name, {}),
        (audit.ASSIGN, admin.id, admin.name, {"assignee_id": admin.id}),
    ]
    on_token = await entries_about(services, "token", token.id)
    assert [(e.action, e.actor_id, e.target_type) for e in on_token] == [
        (audit.TOKEN_CREATED, admin.id, "token"),
        (audit.TOKEN_REVOKED, agent.id, "token"),
    ]
    created = await entries_about(services, "agent", agent.id)
    assert [
        (e.action, e.actor_name, e.details["role"]) for e in created if e.action == audit.AGENT_CREATED
    ] == [(audit.AGENT_CREATED, audit.COMMAND_LINE, "agent")]


async def test_a_take_over_rolled_back_leaves_no_audit_entry(services):
    agent = await new_agent(services)
    cid = (await open_conversation(services)).conversation.id
    with pytest.raises(RuntimeError):
        async with services.new_work() as work:
            await services.inbox.take_over(work, cid, agent)
            raise RuntimeError("the request failed after the take-over")
    conversation, _ = await stored(services, cid)
    assert conversation.status == ConversationStatus.BOT
    assert await entries_about(services, "conversation", cid) == []


async def test_admins_read_the_audit_log_newest_first_in_pages(client):
    admin_id, admin = await make_agent(client.app, AgentRole.ADMIN)
    agent_id, agent = await make_agent(client.app)
    created = await client.post(
        "/api/v1/agents", headers=admin, json={"name": "Audit Probe", "email": "probe-audit@example.com"}
    )
    assert created.status_code == 201, created.text
    new_id = created.json()["agent"]["id"]
    conversation = (await client.post("/api/v1/widget/conversations", json={"bot": "shop-en"})).json()
    taken = await client.post(
        f"/api/v1/conversations/{conversation['conversation_id']}/take-over", headers=agent
    )
    assert taken.status_code == 200

    first = await client.get("/api/v1/admin/audit?page_size=3", headers=admin)
    assert first.status_code == 200, first.text
    page = first.json()
    assert (page["page"], page["page_size"], len(page["items"])) == (1, 3, 3)
    newest = page["items"][0]
    assert (newest["action"], newest["actor_id"], newest["actor_name"]) == (
        "conversation.take_over",
        agent_id,
        newest["actor_name"],
    )
    assert newest["target_id"] == conversation["conversation_id"]
    assert [(e["action"], e["actor_id"], e["target_id"]) for e in page["items"][1:]] == [
        ("token.create", admin_id, page["items"][1]["target_id"]),
        ("agent.create", admin_id, str(new_id)),
    ]
    stamps = [e["created_at"] for e in page["items"]]
    assert stamps == sorted(stamps, reverse=True)
    second = (await client.get("/api/v1/admin/audit?page=2&page_size=3", headers=admin)).json()
    assert second["total"] == page["total"] and second["items"][0]["id"] < page["items"][-1]["id"]

    refused = await client.get("/api/v1/admin/audit", headers=agent)
    assert refused.status_code == 403 and refused.json()["detail"] == "this needs an admin token"
    assert (await client.get("/api/v1/admin/audit")).status_code == 401
    assert (await client.get("/api/v1/admin/audit?page_size=500", headers=admin)).status_code == 422


async def test_admins_filter_the_audit_log_by_who_what_and_when(client):
    first_id, first = await make_agent(client.app, AgentRole.ADMIN)
    second_id, second = await make_agent(client.app, AgentRole.ADMIN)
    began = datetime.now(UTC) - timedelta(seconds=1)
    origin = f"https://filter-{uuid.uuid4().hex[:8]}.example.com"
    added = await client.post("/api/v1/admin/widget-origins", headers=second, json={"origin": origin})
    assert added.status_code == 201, added.text
    created = await client.post(
        "/api/v1/agents",
        headers=first,
        json={"name": "Filter Probe", "email": f"{uuid.uuid4().hex[:8]}@x.example"},
    )
    assert created.status_code == 201

    async def items(query: str) -> list[dict]:
        answer = await client.get(f"/api/v1/admin/audit?{query}", headers=first)
        assert answer.status_code == 200, answer.text
        return answer.json()["items"]

    by_first = await items(f"actor_id={first_id}")
    assert [(e["action"], e["action_label"]) for e in by_first] == [
        ("token.create", "Created an API token"),
        ("agent.create", "Created an agent"),
    ]
    by_second = await items(f"actor_id={second_id}&action=widget_origin.add")
    assert [(e["action_label"], e["details"]) for e in by_second] == [
        ("Allowed a widget origin", {"origin": origin})
    ]
    assert await items(f"actor_id={first_id}&action=widget_origin.add") == []
    # From (inclusive) and to (exclusive), as RFC 3339 date-times.
    since = quote(began.isoformat())
    assert len(await items(f"actor_id={first_id}&from={since}")) == 2
    assert await items(f"actor_id={first_id}&to={since}") == []
    assert (
        await items(f"actor_id={first_id}&from={quote((datetime.now(UTC) + timedelta(hours=1)).isoformat())}")
        == []
    )

    unknown = await client.get("/api/v1/admin/audit?action=conversation.delete", headers=first)
    assert unknown.status_code == 422
    assert unknown.json()["detail"].startswith("action: Input should be 'conversation.take_over'")
    assert all(f"'{a}'" in unknown.json()["detail"] for a in audit.ACTIONS)
    for bad in ("0.5", "2025-12-04", "12/04/2025"):
        refused = await client.get(f"/api/v1/admin/audit?to={quote(bad)}", headers=first)
        assert refused.status_code == 422, bad
        assert "write a date and time with its offset, e.g. 2025-12-04T00:00:00Z" in refused.json()["detail"]

    # The origin goes again: other tests list the origins admins added.
    assert (
        await client.delete(f"/api/v1/admin/widget-origins/{added.json()['id']}", headers=second)
    ).is_success

    actions = await client.get("/api/v1/admin/audit/actions", headers=first)
    assert [a["action"] for a in actions.json()] == list(audit.ACTIONS)
    assert {a["label"] for a in actions.json()} == set(audit.LABELS.values())
    assert (
        await client.get("/api/v1/admin/audit/actions", headers=first | {"Authorization": "Bearer x"})
    ).status_code == 401
