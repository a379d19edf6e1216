"""Small helpers for talking to the widget API in tests."""

import json

import httpx

from backend import sse_reader


async def start(client: httpx.AsyncClient, bot: str = "shop-en", **body) -> dict:
    response = await client.post("/api/v1/widget/conversations", json={"bot": bot, **body})
    assert response.status_code == 201, response.text
    return response.json()


def auth(conversation: dict) -> dict[str, str]:
    return {"Authorization": f"Bearer {conversation['customer_token']}"}


def parse_sse(body: str) -> list[tuple[str, dict]]:
    return [(event.event, json.loads(event.data)) for event in sse_reader.parse_sse(body)]


async def send(client: httpx.AsyncClient, conversation: dict, text: str) -> list[tuple[str, dict]]:
    """Send a message and read the whole SSE reply."""
    response = await client.post(
        f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages",
        json={"text": text},
        headers=auth(conversation),
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse_sse(response.text)


def done_event(events: list[tuple[str, dict]]) -> dict:
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "accepted" and kinds[-1] == "done", kinds
    return events[-1][1]
