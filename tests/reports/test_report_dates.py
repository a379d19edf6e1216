"""The reports' `from` and `to`: a day or a date and time with its offset, as the schema says; anything
else is a 422 that names the parameter, and every date the schema allows is answered."""

import jsonschema_rs
import pytest

from backend.agents.models import AgentRole
from tests.support import make_agent

REPORTS = ("/api/v1/reports", "/api/v1/reports/replies", "/api/v1/reports/transcripts")


@pytest.mark.parametrize("path", REPORTS)
async def test_a_number_or_other_text_is_not_a_date(client, path):
    _, admin = await make_agent(client.app, AgentRole.ADMIN)
    for name, value in [
        ("to", "0.5"),
        ("from", "1733300000"),
        ("to", "2025-12-04T09:30"),
        ("from", "yesterday"),
    ]:
        response = await client.get(path, headers=admin, params={name: value})
        assert response.status_code == 422, (name, value, response.text)
        assert response.json() == {
            "error": "invalid_input",
            "detail": f"{name}: not a date: write a day (2025-12-04) or a date and time with its offset "
            "(2025-12-04T09:30:00Z)",
        }


async def test_the_schema_declares_a_date_or_a_date_and_time_and_the_app_agrees(client):
    _, admin = await make_agent(client.app, AgentRole.ADMIN)
    schema = (await client.get("/openapi.json")).json()
    for path in REPORTS:
        declared = {p["name"]: p["schema"] for p in schema["paths"][path]["get"]["parameters"]}
        for name in ("from", "to"):
            assert {"type": "string", "format": "date"} in declared[name]["anyOf"]
            assert {"type": "string", "format": "date-time"} in declared[name]["anyOf"]
    allows = {
        name: jsonschema_rs.validator_for(declared[name], validate_formats=True) for name in ("from", "to")
    }
    values = [
        ("to", "0.5"),
        ("to", "2025-12-04"),
        ("to", "2025-12-04T09:30:00Z"),
        ("from", "2025-12-04t09:30:00.123456+05:30"),
        ("to", "2025-12-04T09:30:00"),  # no offset
        ("to", "2025-12-04 09:30:00Z"),
        ("from", "2025-02-30"),
        ("from", "20251204"),
        ("from", "0001-01-01T00:00:00+05:00"),  # before the year 1 in UTC: the earliest
        ("to", "9999-12-31T23:00:00-05:00"),  # after the year 9999 in UTC: the latest
    ]
    for name, value in values:
        response = await client.get("/api/v1/reports", headers=admin, params={name: value})
        answered = response.status_code == 200
        assert answered == allows[name].is_valid(value), (name, value, response.text)


async def test_the_window_reaching_past_what_a_date_holds_is_cut_to_the_earliest_and_latest(client):
    _, agent = await make_agent(client.app)
    early = await client.get("/api/v1/reports", headers=agent, params={"to": "0001-01-02T00:00:00Z"})
    assert early.status_code == 200, early.text
    assert (early.json()["from"], early.json()["to"]) == ("0001-01-01T00:00:00Z", "0001-01-02T00:00:00Z")
    offset = await client.get("/api/v1/reports", headers=agent, params={"from": "0001-01-01T00:00:00+05:00"})
    assert offset.status_code == 200 and offset.json()["from"] == "0001-01-01T00:00:00Z", offset.text
    days = await client.get(
        "/api/v1/reports", headers=agent, params={"from": "2020-01-01", "to": "2020-01-02"}
    )
    assert (days.json()["from"], days.json()["to"]) == ("2020-01-01T00:00:00Z", "2020-01-02T00:00:00Z")
