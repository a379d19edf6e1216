"""Feedback on the bot's replies over the widget API: the route, its token and its refusals."""

from tests.helpers import auth, done_event, send, start
from tests.support import make_agent


def feedback_url(conversation: dict, message_id: int) -> str:
    return f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages/{message_id}/feedback"


async def history(client, conversation: dict) -> dict:
    url = f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages"
    return (await client.get(url, headers=auth(conversation))).json()


async def test_a_customer_rates_a_reply_and_the_history_shows_it(client):
    conversation = await start(client)
    reply_id = done_event(await send(client, conversation, "Can I return a tent?"))["message_id"]
    url = feedback_url(conversation, reply_id)

    rated = await client.put(url, json={"feedback": "down"}, headers=auth(conversation))
    assert rated.status_code == 200, rated.text
    body = rated.json()
    assert (body["message_id"], body["feedback"]) == (reply_id, "down") and body["feedback_at"]
    changed = await client.put(url, json={"feedback": "up"}, headers=auth(conversation))
    assert changed.json()["feedback"] == "up"
    reply = (await history(client, conversation))["messages"][1]
    assert (reply["id"], reply["feedback"]) == (reply_id, "up") and reply["feedback_at"]

    cleared = await client.put(url, json={"feedback": None}, headers=auth(conversation))
    assert cleared.status_code == 200 and cleared.json()["feedback"] is None
    assert (await history(client, conversation))["messages"][1]["feedback"] is None


async def test_feedback_is_refused_with_reasons(client):
    conversation = await start(client)
    other = await start(client)
    reply_id = done_event(await send(client, conversation, "Is delivery free?"))["message_id"]
    others_reply = done_event(await send(client, other, "Hello"))["message_id"]
    _, agent = await make_agent(client.app)
    agent_message = await client.post(
        f"/api/v1/conversations/{conversation['conversation_id']}/messages",
        headers=agent,
        json={"text": "Delivery is free over 60 EUR."},
    )
    mine = auth(conversation)

    async def refused(message_id: int, body: object, headers: dict) -> tuple[int, dict]:
        response = await client.put(feedback_url(conversation, message_id), json=body, headers=headers)
        return response.status_code, response.json()

    assert (await refused(reply_id, {"feedback": "up"}, {}))[0] == 401
    # Another customer's token does not open this conversation, nor does an agent's.
    status, body = await refused(reply_id, {"feedback": "up"}, auth(other))
    assert (status, body["error"]) == (403, "forbidden")
    assert (await refused(reply_id, {"feedback": "up"}, agent))[0] == 403
    # Their own token on another conversation's reply, or on no reply at all.
    for missing in (others_reply, 2**31 - 1):
        status, body = await refused(missing, {"feedback": "up"}, mine)
        assert (status, body["detail"]) == (404, f"no message {missing} in this conversation")

    status, body = await refused(reply_id, {"feedback": "great"}, mine)
    assert (status, body["detail"]) == (422, "feedback: Input should be 'up' or 'down'")
    status, body = await refused(reply_id, {}, mine)
    assert (status, body["detail"]) == (422, "feedback: Field required")
    status, body = await refused(agent_message.json()["id"], {"feedback": "up"}, mine)
    assert status == 422 and body["detail"].startswith("only the bot's replies take feedback")

    # Nothing refused was stored.
    assert [m["feedback"] for m in (await history(client, conversation))["messages"]] == [None, None, None]
    assert [m["feedback"] for m in (await history(client, other))["messages"]] == [None, None]
