"""Rating a resolved conversation over the widget API: bounds, ownership, once only, the report."""

from backend.agents.models import AgentRole
from tests.helpers import auth, start
from tests.support import make_agent


def rating_url(conversation: dict) -> str:
    return f"/api/v1/widget/conversations/{conversation['conversation_id']}/rating"


async def resolved(client) -> dict:
    conversation = await start(client)
    _, agent = await make_agent(client.app)
    answer = await client.post(
        f"/api/v1/conversations/{conversation['conversation_id']}/resolve", headers=agent
    )
    assert answer.status_code == 200, answer.text
    return conversation


async def test_a_customer_rates_their_resolved_conversation_once(client):
    conversation = await resolved(client)
    url = rating_url(conversation)
    before = (await client.get(url, headers=auth(conversation))).json()
    assert before == {
        "conversation_id": conversation["conversation_id"],
        "status": "resolved",
        "language": "en",
        "rating": None,
    }

    rated = await client.post(
        url, json={"score": 5, "comment": "Sorted in a minute."}, headers=auth(conversation)
    )
    assert rated.status_code == 201, rated.text
    assert (rated.json()["score"], rated.json()["comment"]) == (5, "Sorted in a minute.")
    after = (await client.get(url, headers=auth(conversation))).json()
    assert (after["rating"]["score"], after["rating"]["comment"]) == (5, "Sorted in a minute.")

    again = await client.post(url, json={"score": 1}, headers=auth(conversation))
    assert again.status_code == 409
    assert again.json()["detail"] == "this conversation has been rated already; a conversation is rated once"
    assert (await client.get(url, headers=auth(conversation))).json()["rating"]["score"] == 5


async def test_ratings_out_of_bounds_or_by_others_are_refused(client):
    conversation = await resolved(client)
    other = await resolved(client)
    _, agent = await make_agent(client.app)
    url = rating_url(conversation)

    async def refused(body: object, headers: dict) -> tuple[int, str]:
        response = await client.post(url, json=body, headers=headers)
        return response.status_code, response.json()["detail"]

    mine = auth(conversation)
    assert await refused({"score": 0}, mine) == (422, "score: Input should be greater than or equal to 1")
    assert await refused({"score": 6}, mine) == (422, "score: Input should be less than or equal to 5")
    assert (await refused({"score": "great"}, mine))[0] == 422
    assert await refused({}, mine) == (422, "score: Field required")
    status, detail = await refused({"score": 3, "comment": "x" * 1001}, mine)
    assert status == 422 and detail.startswith("comment: String should have at most 1000 characters")
    # Only the conversation's own customer: no token, another customer's token, an agent's token.
    assert (await refused({"score": 3}, {}))[0] == 401
    assert await refused({"score": 3}, auth(other)) == (
        403,
        "this customer token does not open this conversation",
    )
    assert (await refused({"score": 3}, agent))[0] == 403
    assert (await client.get(url, headers=auth(other))).status_code == 403

    # Nothing refused was stored: the customer can still rate.
    assert (await client.get(url, headers=mine)).json()["rating"] is None
    assert (await client.post(url, json={"score": 3}, headers=mine)).status_code == 201


async def test_a_conversation_not_resolved_is_not_rated(client):
    conversation = await start(client)
    response = await client.post(rating_url(conversation), json={"score": 4}, headers=auth(conversation))
    assert response.status_code == 409
    assert response.json() == {
        "error": "conflict",
        "detail": "only a resolved conversation can be rated; this one is bot",
    }


async def test_the_report_shows_ratings_per_bot(client):
    _, admin = await make_agent(client.app, AgentRole.ADMIN)
    before = (await client.get("/api/v1/reports?bot=appliance-zh", headers=admin)).json()["total"]["ratings"]
    conversation = await start(client, "appliance-zh")
    _, agent = await make_agent(client.app)
    await client.post(f"/api/v1/conversations/{conversation['conversation_id']}/resolve", headers=agent)
    state = (await client.get(rating_url(conversation), headers=auth(conversation))).json()
    assert state["language"] == "zh"
    await client.post(rating_url(conversation), json={"score": 2}, headers=auth(conversation))

    report = (await client.get("/api/v1/reports?bot=appliance-zh", headers=admin)).json()
    ratings = report["per_bot"]["appliance-zh"]["ratings"]
    assert ratings["count"] == before["count"] + 1
    assert ratings["distribution"]["2"] == before["distribution"]["2"] + 1
    assert sum(ratings["distribution"].values()) == ratings["count"]
    assert ratings["mean"] == round(
        sum(int(s) * n for s, n in ratings["distribution"].items()) / ratings["count"], 2
    )
