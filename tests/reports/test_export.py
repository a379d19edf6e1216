"""Transcript exports over HTTP: CSV and JSON with every message in order, admin only, the range
bounded by the setting, each export in the audit log."""

import csv
import io
import json
from datetime import UTC, datetime, timedelta

from backend.agents.models import AgentRole
from tests.helpers import done_event, send, start
from tests.support import make_agent, running_app


def window(**extra: str) -> dict[str, str]:
    now = datetime.now(UTC)
    return {
        "from": (now - timedelta(minutes=5)).isoformat(),
        "to": (now + timedelta(minutes=5)).isoformat(),
        **extra,
    }


async def test_an_admin_exports_transcripts_as_csv_and_json(client):
    _, admin = await make_agent(client.app, AgentRole.ADMIN)
    conversation = await start(client)
    cid = conversation["conversation_id"]
    reply = done_event(await send(client, conversation, 'Can I return a "tent", unused?'))

    response = await client.get("/api/v1/reports/transcripts", headers=admin, params=window(format="csv"))
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert response.headers["content-disposition"].startswith('attachment; filename="transcripts-')
    rows = list(csv.DictReader(io.StringIO(response.text)))
    mine = [row for row in rows if row["conversation_id"] == cid]
    assert [(r["seq"], r["role"], r["bot"]) for r in mine] == [
        ("1", "user", "shop-en"),
        ("2", "assistant", "shop-en"),
    ]
    assert mine[0]["text"] == 'Can I return a "tent", unused?'
    assert mine[0]["message_status"] == "complete" and mine[0]["conversation_status"] == "bot"

    response = await client.get(
        "/api/v1/reports/transcripts", headers=admin, params=window(format="json", bot="shop-en")
    )
    assert response.headers["content-type"] == "application/json"
    exported = json.loads(response.text)
    assert {row["bot"] for row in exported} == {"shop-en"}
    mine = [row for row in exported if row["conversation_id"] == cid]
    assert [row["text"] for row in mine] == [
        'Can I return a "tent", unused?',
        reply["text"],
    ]
    assert [row["seq"] for row in mine] == [1, 2] and mine[1]["role"] == "assistant"

    # Nothing in the range: an empty array, a header alone.
    old = {"from": "2001-01-01T00:00:00Z", "to": "2001-01-02T00:00:00Z"}
    assert (
        await client.get("/api/v1/reports/transcripts", headers=admin, params={**old, "format": "json"})
    ).json() == []
    header = (await client.get("/api/v1/reports/transcripts", headers=admin, params=old)).text
    assert header.strip().split(",") == [
        "conversation_id",
        "bot",
        "conversation_status",
        "conversation_created_at",
        "seq",
        "role",
        "author_agent_id",
        "message_status",
        "text",
        "created_at",
    ]

    audit = (await client.get("/api/v1/admin/audit?page_size=5", headers=admin)).json()["items"]
    exports = [e for e in audit if e["action"] == "transcripts.export"]
    assert (
        exports
        and exports[0]["details"]["format"] == "csv"
        and exports[0]["details"]["start"].startswith("2001")
    )


async def test_exports_are_admin_only_and_bounded(tiny_settings, tiny_engine):
    async with running_app(tiny_settings.model_copy(update={"export_max_days": 3}), tiny_engine) as client:
        _, admin = await make_agent(client.app, AgentRole.ADMIN)
        _, agent = await make_agent(client.app)
        assert (await client.get("/api/v1/reports/transcripts", headers=agent)).status_code == 403
        assert (await client.get("/api/v1/reports/transcripts")).status_code == 401

        too_long = {"from": "2026-01-01T00:00:00Z", "to": "2026-01-05T00:00:00Z"}
        response = await client.get("/api/v1/reports/transcripts", headers=admin, params=too_long)
        assert response.status_code == 422
        assert response.json() == {
            "error": "invalid_input",
            "detail": "the range covers 4.0 days; an export covers at most 3 days "
            "(PREFIXDESK_EXPORT_MAX_DAYS): export it in parts",
        }
        fits = {"from": "2026-01-01T00:00:00Z", "to": "2026-01-04T00:00:00Z", "format": "xml"}
        assert (
            await client.get("/api/v1/reports/transcripts", headers=admin, params=fits)
        ).status_code == 422
        fits["format"] = "json"
        assert (
            await client.get("/api/v1/reports/transcripts", headers=admin, params=fits)
        ).status_code == 200
