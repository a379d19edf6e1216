"""Office hours and the e-mail capture over HTTP: who answers and when, an address left for the
team (a bad one is a clear 422, a verified identity is never written over), and what an
agent's hand-back says about the customer's waiting messages."""

import uuid
from datetime import UTC, datetime

from pydantic import SecretStr

from backend.conversations.identity import sign
from tests.helpers import (
    ALWAYS_OPEN,
    add_office_hours,
    auth,
    away_until_in_two_days,
    done_event,
    send,
    start,
)
from tests.support import copy_prompts, make_agent, running_app

WIDGET = "/api/v1/widget/conversations"
INBOX = "/api/v1/conversations"
SECRET = "shop-identity-secret-for-team-tests"


def team_url(conversation: dict) -> str:
    return f"{WIDGET}/{conversation['conversation_id']}/team"


async def test_outside_office_hours_the_customer_is_told_when_and_leaves_an_address(
    tiny_settings, tiny_engine, tmp_path
):
    prompts = copy_prompts(tmp_path)
    hours, opening = away_until_in_two_days("Asia/Shanghai")
    add_office_hours(prompts, "appliance-zh", hours, "Asia/Shanghai")
    add_office_hours(prompts, "shop-en", ALWAYS_OPEN)
    settings = tiny_settings.model_copy(update={"prompts_dir": prompts, "identity_secret": SecretStr(SECRET)})
    async with running_app(settings, tiny_engine) as client:
        _, agent = await make_agent(client.app)
        away = await start(client, "appliance-zh")
        team = (await client.get(team_url(away), headers=auth(away))).json()
        assert team["open_now"] is False and team["language"] == "zh"
        assert datetime.fromisoformat(team["next_opening"]) == opening
        assert team["next_opening_text"].endswith("09:00（中国标准时间）")
        assert team["assignee_name"] is None and team["contact_email"] is None

        url = f"{WIDGET}/{away['conversation_id']}/contact-email"
        bad = await client.put(url, json={"email": "ada@"}, headers=auth(away))
        assert bad.status_code == 422, bad.text
        assert bad.json()["error"] == "invalid_input"
        assert bad.json()["detail"].startswith("email: value is not a valid email address")
        given = await client.put(url, json={"email": "Ada@Example.com"}, headers=auth(away))
        assert given.status_code == 200, given.text
        assert given.json()["contact_email"] == "Ada@example.com"
        # Another customer's token does not open it.
        other = await start(client, "appliance-zh")
        assert (
            await client.put(url, json={"email": "x@example.com"}, headers=auth(other))
        ).status_code == 403
        transcript = (await client.get(f"{INBOX}/{away['conversation_id']}", headers=agent)).json()
        assert transcript["contact_email"] == "Ada@example.com" and transcript["customer"] is None

        # Within office hours nothing is asked; a verified identity stays as the shop signed it.
        email = f"ada.{uuid.uuid4().hex[:8]}@example.com"
        identity = {"email": email, "signature": sign(SECRET, "", email, "")}
        there = await start(client, "shop-en", identity=identity)
        team = (await client.get(team_url(there), headers=auth(there))).json()
        assert (team["open_now"], team["next_opening"], team["language"]) == (True, None, "en")
        url = f"{WIDGET}/{there['conversation_id']}/contact-email"
        assert (
            await client.put(url, json={"email": "other@example.com"}, headers=auth(there))
        ).status_code == 200
        transcript = (await client.get(f"{INBOX}/{there['conversation_id']}", headers=agent)).json()
        assert transcript["customer"] == {"user_id": None, "email": email, "name": None, "verified": True}
        assert transcript["contact_email"] == "other@example.com"


async def test_the_shipped_tallybook_team_is_away_on_a_saturday_and_there_on_a_wednesday(client, monkeypatch):
    """The demo bot with office hours as shipped (prompts/tallybook-en/bot.toml), on the team's
    clock fixed at two moments: handed over on a Saturday, the customer is told when and leaves
    an address; on a weekday morning the team is there and nothing is asked."""
    moment = [datetime(2026, 12, 12, 11, 0, tzinfo=UTC)]  # Saturday, noon in Amsterdam
    monkeypatch.setattr(client.app.state.services.team, "clock", lambda: moment[0])
    away = await start(client, "tallybook-en")
    assert done_event(await send(client, away, "I'd like to talk to a human, please."))["handoff"]
    team = (await client.get(team_url(away), headers=auth(away))).json()
    assert (team["status"], team["open_now"], team["language"]) == ("open", False, "en")
    opening = "Monday, December 14, 2026, 8:00\u202fAM (Central European Standard Time)"
    assert team["next_opening_text"] == opening
    url = f"{WIDGET}/{away['conversation_id']}/contact-email"
    given = await client.put(url, json={"email": "ada@example.com"}, headers=auth(away))
    assert given.status_code == 200 and given.json()["contact_email"] == "ada@example.com", given.text

    moment[0] = datetime(2026, 12, 9, 9, 0, tzinfo=UTC)  # Wednesday, 10:00 in Amsterdam
    there = await start(client, "tallybook-en")
    team = (await client.get(team_url(there), headers=auth(there))).json()
    assert (team["open_now"], team["next_opening"], team["next_opening_text"]) == (True, None, None)


async def test_the_team_names_the_agent_once_one_has_the_conversation(client):
    agent_id, agent = await make_agent(client.app)
    conversation = await start(client)
    assert (await client.get(team_url(conversation), headers=auth(conversation))).json()[
        "assignee_name"
    ] is None
    cid = conversation["conversation_id"]
    assert (await client.post(f"{INBOX}/{cid}/take-over", headers=agent)).status_code == 200
    team = (await client.get(team_url(conversation), headers=auth(conversation))).json()
    me = (await client.get("/api/v1/me", headers=agent)).json()
    assert me["id"] == agent_id
    assert team["status"] == "open" and team["assignee_name"] == me["name"]


async def test_a_hand_back_says_which_waiting_message_the_bot_answers(client):
    _, agent = await make_agent(client.app)
    conversation = await start(client)
    cid = conversation["conversation_id"]
    assert (await client.post(f"{INBOX}/{cid}/take-over", headers=agent)).status_code == 200
    events = await send(client, conversation, "Hello? Is anyone there?")
    waiting_id = events[0][1]["user_message_id"]
    handed = await client.post(f"{INBOX}/{cid}/hand-back", headers=agent)
    assert handed.status_code == 200, handed.text
    body = handed.json()
    assert body["status"] == "bot" and body["waiting_messages"] == 1
    assert (body["answering_message_id"], body["unanswered_reason"]) == (waiting_id, None)
