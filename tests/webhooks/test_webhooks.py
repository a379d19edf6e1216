"""Outgoing webhooks: signed, retried with backoff, and never in a chat turn's way."""

import asyncio
import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import uvicorn
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from backend.agents.models import AgentRole
from backend.config import Settings
from tests.helpers import auth, done_event, send, start
from tests.support import eventually, free_port, make_agent, running_app


@asynccontextmanager
async def receiver(fail_first: int) -> AsyncIterator[tuple[str, list]]:
    """A webhook endpoint on loopback that answers 500 to its first `fail_first` calls."""
    received: list[tuple[dict, bytes, int]] = []

    async def hook(request: Request):
        body = await request.body()
        received.append((dict(request.headers), body, len(received) + 1))
        return JSONResponse({}, status_code=500 if len(received) <= fail_first else 200)

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            Starlette(routes=[Route("/hook", hook, methods=["POST"])]),
            host="127.0.0.1",
            port=port,
            log_level="warning",
        )
    )
    task = asyncio.create_task(server.serve())
    await eventually(lambda: server.started, what="the receiver started")
    try:
        yield f"http://127.0.0.1:{port}/hook", received
    finally:
        server.should_exit = True
        await task


PUBLIC_URL = "https://desk.example.com"


@pytest.fixture
def fast_retries(tiny_settings):
    return tiny_settings.model_copy(update={"webhook_backoff_base_s": 0.2, "webhook_poll_interval_s": 0.05})


async def deliveries(client, admin, webhook_id):
    return (await client.get(f"/api/v1/webhooks/{webhook_id}/deliveries", headers=admin)).json()


async def test_deliveries_are_signed_and_retried_until_they_succeed(fast_retries, tiny_engine):
    async with running_app(fast_retries, tiny_engine) as client, receiver(fail_first=2) as (url, received):
        _, admin = await make_agent(client.app, AgentRole.ADMIN)
        created = await client.post(
            "/api/v1/webhooks", headers=admin, json={"url": url, "events": ["conversation.created"]}
        )
        assert created.status_code == 201
        webhook = created.json()
        try:
            conversation = await start(client)

            async def delivered() -> list | None:
                rows = await deliveries(client, admin, webhook["id"])
                return rows if rows and rows[0]["status"] == "delivered" else None

            rows = await eventually(delivered, timeout_s=10)
            assert [(r["event_type"], r["status"], r["attempts"]) for r in rows] == [
                ("conversation.created", "delivered", 3)
            ]
            assert len(received) == 3
            headers, body, _ = received[-1]
            expected = hmac.new(
                webhook["secret"].encode(),
                headers["x-prefixdesk-timestamp"].encode() + b"." + body,
                hashlib.sha256,
            ).hexdigest()
            assert headers["x-prefixdesk-signature"] == f"sha256={expected}"
            payload = json.loads(body)
            assert payload["type"] == "conversation.created"
            assert payload["conversation_id"] == conversation["conversation_id"]
            assert {b for _, b, _ in received} == {body}  # retries send the same event
        finally:
            await client.delete(f"/api/v1/webhooks/{webhook['id']}", headers=admin)


async def test_a_customers_feedback_is_delivered_as_it_changes(fast_retries, tiny_engine):
    async with running_app(fast_retries, tiny_engine) as client, receiver(fail_first=0) as (url, received):
        _, admin = await make_agent(client.app, AgentRole.ADMIN)
        subscribed = {"url": url, "events": ["message.feedback"]}
        webhook = (await client.post("/api/v1/webhooks", headers=admin, json=subscribed)).json()
        try:
            conversation = await start(client)
            reply_id = done_event(await send(client, conversation, "Can I return a tent?"))["message_id"]
            cid = conversation["conversation_id"]
            rate_url = f"/api/v1/widget/conversations/{cid}/messages/{reply_id}/feedback"
            for feedback in ("up", "down"):
                rated = await client.put(rate_url, json={"feedback": feedback}, headers=auth(conversation))
                assert rated.status_code == 200, rated.text

            await eventually(lambda: len(received) == 2, timeout_s=10, what="both changes delivered")
            payloads = [json.loads(body) for _, body, _ in received]
            assert {p["type"] for p in payloads} == {"message.feedback"}
            assert {p["conversation_id"] for p in payloads} == {cid}
            changes = sorted((p["data"]["previous"] or "", p["data"]["feedback"]) for p in payloads)
            assert changes == [("", "up"), ("up", "down")]
            assert {p["data"]["message_id"] for p in payloads} == {reply_id}
        finally:
            await client.delete(f"/api/v1/webhooks/{webhook['id']}", headers=admin)


async def test_a_dead_webhook_never_blocks_a_chat_turn(fast_retries, tiny_engine):
    async with running_app(fast_retries, tiny_engine) as client:
        _, admin = await make_agent(client.app, AgentRole.ADMIN)
        webhook = (
            await client.post(
                "/api/v1/webhooks",
                headers=admin,
                json={"url": f"http://127.0.0.1:{free_port()}/gone", "events": []},
            )
        ).json()
        try:
            conversation = await start(client)
            done = done_event(await send(client, conversation, "Is delivery free over 60 EUR?"))
            assert done["total_ms"] < 5000

            async def tried() -> list | None:
                """Both events' deliveries, once each has been attempted."""
                rows = await deliveries(client, admin, webhook["id"])
                kinds = {r["event_type"] for r in rows}
                attempted = all(r["attempts"] >= 1 for r in rows)
                return rows if kinds == {"conversation.created", "message.created"} and attempted else None

            rows = await eventually(tried, timeout_s=10)
            assert all(
                r["status"] == "pending" and r["attempts"] >= 1 and "Connect" in r["last_error"] for r in rows
            )
        finally:
            await client.delete(f"/api/v1/webhooks/{webhook['id']}", headers=admin)


async def test_webhook_input_is_checked(client):
    _, admin = await make_agent(client.app, AgentRole.ADMIN)
    bad_event = await client.post(
        "/api/v1/webhooks", headers=admin, json={"url": "http://127.0.0.1:9/x", "events": ["nope"]}
    )
    assert bad_event.status_code == 422 and "unknown event types" in bad_event.json()["detail"]
    bad_url = await client.post("/api/v1/webhooks", headers=admin, json={"url": "ftp://x", "events": []})
    assert bad_url.status_code == 422
    for broken in ("http://[", "https://"):  # not a URL, no host: a clear 422, never a 500
        refused = await client.post("/api/v1/webhooks", headers=admin, json={"url": broken, "events": []})
        assert refused.status_code == 422 and "webhook URL" in refused.json()["detail"], refused.text


async def test_a_customers_rating_of_a_resolved_conversation_is_delivered(fast_retries, tiny_engine):
    settings = fast_retries.model_copy(update={"public_url": PUBLIC_URL})
    async with running_app(settings, tiny_engine) as client, receiver(fail_first=0) as (url, received):
        _, admin = await make_agent(client.app, AgentRole.ADMIN)
        subscribed = {"url": url, "events": ["conversation.rated"]}
        webhook = (await client.post("/api/v1/webhooks", headers=admin, json=subscribed)).json()
        try:
            conversation = await start(client)
            cid = conversation["conversation_id"]
            await client.post(f"/api/v1/conversations/{cid}/resolve", headers=admin)
            rating = {"score": 4, "comment": "Helpful, thanks"}
            rated = await client.post(
                f"/api/v1/widget/conversations/{cid}/rating", json=rating, headers=auth(conversation)
            )
            assert rated.status_code == 201, rated.text

            await eventually(lambda: len(received) == 1, timeout_s=10, what="the rating delivered")
            headers, body, _ = received[0]
            payload = json.loads(body)
            assert (payload["type"], payload["conversation_id"]) == ("conversation.rated", cid)
            assert payload["data"] == {
                "bot": "shop-en",
                "score": 4,
                "comment": "Helpful, thanks",
                "conversation_id": cid,
                # Where an agent opens it: the console on the server's public address, and the API.
                "console_url": f"{PUBLIC_URL}/console#conversation={cid}",
                "api_path": f"/api/v1/conversations/{cid}",
            }
            assert headers["x-prefixdesk-signature"].startswith("sha256=")
            linked = await client.get(payload["data"]["api_path"], headers=admin)
            assert linked.status_code == 200 and linked.json()["rating"]["score"] == 4
        finally:
            await client.delete(f"/api/v1/webhooks/{webhook['id']}", headers=admin)


def test_the_public_url_that_links_point_at_is_an_address():
    assert Settings(public_url="HTTPS://Desk.example.com:443/").public_url == "https://desk.example.com"
    assert Settings(public_url="http://10.0.0.5:8000").public_url == "http://10.0.0.5:8000"
    assert Settings().public_url is None
    for wrong in ("desk.example.com", "https://desk.example.com/console", "ftp://desk.example.com"):
        with pytest.raises(ValidationError, match="PREFIXDESK_PUBLIC_URL: .* is not an origin"):
            Settings(public_url=wrong)
