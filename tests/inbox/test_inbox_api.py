"""The inbox API on the real stack: lifecycle, handoff, notes, canned responses, listing, ratings."""

import uuid
from datetime import datetime

from backend.agents.models import Agent
from backend.conversations import repository
from tests.helpers import auth, done_event, send, start
from tests.support import make_agent

API = "/api/v1/conversations"


async def transcript(client, headers, conversation):
    response = await client.get(f"{API}/{conversation['conversation_id']}", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


async def test_take_over_hand_back_and_the_bot_resumes_with_its_cache(client):
    agent_id, agent = await make_agent(client.app)
    conversation = await start(client, context={"name": "Ada"})
    cid = conversation["conversation_id"]
    done_event(await send(client, conversation, "Where is my order?"))

    taken = await client.post(f"{API}/{cid}/take-over", headers=agent)
    assert taken.json()["status"] == "open" and taken.json()["assignee_id"] == agent_id
    waiting = await send(client, conversation, "Hello? Anyone there?")
    assert [kind for kind, _ in waiting] == ["accepted", "waiting"]
    reply = await client.post(
        f"{API}/{cid}/messages", headers=agent, json={"text": "Hi Ada, I'm Sam. Let me check."}
    )
    assert reply.status_code == 201 and reply.json()["role"] == "agent"
    history = (
        await client.get(f"/api/v1/widget/conversations/{cid}/messages", headers=auth(conversation))
    ).json()
    assert [m["role"] for m in history["messages"]] == ["user", "assistant", "user", "agent"]
    assert history["messages"][-1]["text"] == "Hi Ada, I'm Sam. Let me check."
    # The customer sees who wrote it; the bot's and the customer's messages have no author.
    chat = client.app.state.services
    async with chat.sessions() as db:
        name = (await db.get(Agent, agent_id)).name
    assert [m["author_name"] for m in history["messages"]] == [None, None, None, name]
    assert reply.json()["author_name"] == name
    assert (await transcript(client, agent, conversation))["messages"][-1]["author_name"] == name

    async with chat.sessions() as db:
        context_before = await chat.context.rebuild(db, await repository.get_conversation(db, cid))
    assert (await client.post(f"{API}/{cid}/hand-back", headers=agent)).json()["status"] == "bot"
    resumed = done_event(await send(client, conversation, "Thanks. And the delivery time?"))
    # The agent's words are in the model's context, and the hand-back warmed all of it.
    assert resumed["prompt_tokens"] > len(context_before)
    assert resumed["cached_tokens"] >= len(context_before) - 32
    assert resumed["status"] == "bot"


async def test_the_bot_hands_over_when_the_customer_asks_for_a_person(client):
    _, agent = await make_agent(client.app)
    conversation = await start(client)
    events = await send(client, conversation, "I want to talk to a real person please")
    done = done_event(events)
    assert done["handoff"] and done["status"] == "open"
    assert "passing you to a colleague" in done["text"]
    detail = await transcript(client, agent, conversation)
    assert detail["status"] == "open" and detail["handoff_reason"] == "customer_request"
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant"]
    assert detail["created_at"] <= detail["messages"][0]["created_at"]
    zh = await start(client, "appliance-zh")
    assert (
        done_event(await send(client, zh, "我要转人工"))["text"] == "正在为您转接暖风家电人工客服，请稍候。"
    )


async def test_notes_are_private_and_canned_responses_expand(client):
    _, agent = await make_agent(client.app)
    conversation = await start(client)
    cid = conversation["conversation_id"]
    done_event(await send(client, conversation, "My tent pole broke"))
    chat = client.app.state.services
    context_before = (await chat.context.store.get(cid)).token_ids

    note = await client.post(f"{API}/{cid}/notes", headers=agent, json={"text": "VIP: offer express repair"})
    assert note.status_code == 201
    assert (await chat.context.store.get(cid)).token_ids == context_before  # the model never sees it
    customer_view = (
        await client.get(f"/api/v1/widget/conversations/{cid}/messages", headers=auth(conversation))
    ).text
    assert "VIP" not in customer_view

    shortcode = f"poles{cid[:6]}"
    created = await client.post(
        "/api/v1/canned-responses",
        headers=agent,
        json={"shortcode": shortcode, "text": "Tent poles are repaired free within 2 years."},
    )
    assert created.status_code == 201
    sent = await client.post(f"{API}/{cid}/messages", headers=agent, json={"text": f"/{shortcode}"})
    assert sent.json()["text"] == "Tent poles are repaired free within 2 years."
    missing = await client.post(f"{API}/{cid}/messages", headers=agent, json={"text": "/no-such-code"})
    assert missing.status_code == 404
    detail = await transcript(client, agent, conversation)
    assert [n["text"] for n in detail["notes"]] == ["VIP: offer express repair"]


async def test_listing_filters_searches_and_paginates(client):
    agent_id, agent = await make_agent(client.app)
    other_id, _ = await make_agent(client.app)
    marker = "zebra-" + (await start(client))["conversation_id"][:8]
    mine = await start(client)
    done_event(await send(client, mine, f"Question about {marker}"))
    await client.post(f"{API}/{mine['conversation_id']}/assign", headers=agent, json={"agent_id": agent_id})
    zh = await start(client, "appliance-zh")
    done_event(await send(client, zh, f"关于 {marker}"))

    found = (await client.get(API, headers=agent, params={"q": marker})).json()
    assert {c["id"] for c in found["items"]} == {mine["conversation_id"], zh["conversation_id"]}
    only_zh = (await client.get(API, headers=agent, params={"q": marker, "bot": "appliance-zh"})).json()
    assert [c["id"] for c in only_zh["items"]] == [zh["conversation_id"]]
    assigned = (await client.get(API, headers=agent, params={"assignee_id": agent_id})).json()
    assert [c["id"] for c in assigned["items"]] == [mine["conversation_id"]]
    assert assigned["items"][0]["status"] == "open"
    open_page = (await client.get(API, headers=agent, params={"status": "open", "page_size": 1})).json()
    assert open_page["total"] >= 1 and len(open_page["items"]) == 1
    page2 = (await client.get(API, headers=agent, params={"q": marker, "page_size": 1, "page": 2})).json()
    assert page2["total"] == 2 and len(page2["items"]) == 1
    assert (await client.get(API, headers=agent, params={"status": "bogus"})).status_code == 422
    reassign = await client.post(
        f"{API}/{mine['conversation_id']}/assign", headers=agent, json={"agent_id": other_id}
    )
    assert reassign.json()["assignee_id"] == other_id
    unknown = await client.post(
        f"{API}/{mine['conversation_id']}/assign", headers=agent, json={"agent_id": 999999}
    )
    assert unknown.status_code == 404


async def test_resolve_and_reopen(client):
    _, agent = await make_agent(client.app)
    conversation = await start(client)
    cid = conversation["conversation_id"]
    assert (await client.post(f"{API}/{cid}/resolve", headers=agent)).json()["status"] == "resolved"
    assert (await client.post(f"{API}/{cid}/resolve", headers=agent)).status_code == 409
    assert (await client.post(f"{API}/{cid}/take-over", headers=agent)).status_code == 409
    assert (await client.post(f"{API}/{cid}/reopen", headers=agent)).json()["status"] == "open"
    assert (await client.post(f"{API}/{cid}/resolve", headers=agent)).status_code == 200
    # A customer writing again starts over with the bot.
    done = done_event(await send(client, conversation, "One more question"))
    assert done["status"] == "bot"


async def rated(client, agent, email: str, score: int | None, comment: str | None = None) -> str:
    """A customer's resolved conversation, rated `score` (None: not rated); its id."""
    conversation = await start(client, identity={"email": email})
    cid = conversation["conversation_id"]
    assert (await client.post(f"{API}/{cid}/resolve", headers=agent)).status_code == 200
    if score is not None:
        given = await client.post(
            f"/api/v1/widget/conversations/{cid}/rating",
            headers=auth(conversation),
            json={"score": score, "comment": comment},
        )
        assert given.status_code == 201, given.text
    return cid


async def test_ratings_show_in_the_inbox_and_the_transcript_and_filter_it(client):
    _, agent = await make_agent(client.app)
    email = f"rater-{uuid.uuid4().hex[:8]}@example.com"
    poor = await rated(client, agent, email, 2, "Too slow <b>really</b>")
    worst = await rated(client, agent, email, 1)
    good = await rated(client, agent, email, 5, "Great")
    unrated = await rated(client, agent, email, None)

    detail = (await client.get(f"{API}/{poor}", headers=agent)).json()
    assert (detail["rating"]["score"], detail["rating"]["comment"]) == (2, "Too slow <b>really</b>")
    rated_at, resolved_at = (
        datetime.fromisoformat(at) for at in (detail["rating"]["created_at"], detail["resolved_at"])
    )
    assert rated_at >= resolved_at
    assert (await client.get(f"{API}/{unrated}", headers=agent)).json()["rating"] is None

    everyone = (await client.get(API, headers=agent, params={"email": email})).json()
    scores = {c["id"]: c["rating"] and c["rating"]["score"] for c in everyone["items"]}
    assert scores == {poor: 2, worst: 1, good: 5, unrated: None}
    low = (await client.get(API, headers=agent, params={"email": email, "rating_at_most": 2})).json()
    assert {c["id"] for c in low["items"]} == {poor, worst} and low["total"] == 2
    assert [c["rating"]["comment"] for c in low["items"] if c["id"] == poor] == ["Too slow <b>really</b>"]
    any_rated = await client.get(API, headers=agent, params={"email": email, "rating_at_most": 5})
    assert {c["id"] for c in any_rated.json()["items"]} == {poor, worst, good}

    # An action's answer carries the rating too: reopened, the conversation keeps it.
    reopened = (await client.post(f"{API}/{poor}/reopen", headers=agent)).json()
    assert (reopened["status"], reopened["rating"]["score"]) == ("open", 2)

    for bad in ("0", "6", "two", "2.5"):
        refused = await client.get(API, headers=agent, params={"rating_at_most": bad})
        assert refused.status_code == 422, (bad, refused.text)
        assert refused.json()["error"] == "invalid_input"
        assert refused.json()["detail"].startswith("rating_at_most: "), refused.json()
    too_high = await client.get(API, headers=agent, params={"rating_at_most": "6"})
    assert "less than or equal to 5" in too_high.json()["detail"]
    # A customer's token opens nothing here.
    customer = await start(client)
    assert (await client.get(API, headers=auth(customer), params={"rating_at_most": 2})).status_code == 401
