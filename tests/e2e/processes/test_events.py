"""Live events through Redis pub/sub, across two app processes sharing Postgres and Redis."""

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from backend.agents.models import AgentRole
from backend.config import Settings
from tests.helpers import auth, done_event, send, start
from tests.support import app_process, copy_prompts, eventually, make_agent, running_app, serve_env


@pytest.fixture(scope="module")
def shared_prompts(tmp_path_factory) -> Path:
    """A prompts/ folder both processes read, so a test may edit it."""
    return copy_prompts(tmp_path_factory.mktemp("shared"))


@pytest.fixture(scope="module")
async def second_process(tiny_settings: Settings, tmp_path_factory, shared_prompts) -> AsyncIterator[str]:
    """`prefixdesk serve` in its own process, on the same database and Redis as the tests' app."""
    env = serve_env(tiny_settings, PREFIXDESK_PROMPTS_DIR=str(shared_prompts))
    async with app_process(env, tmp_path_factory.mktemp("second") / "serve.log") as app:
        yield app.url


async def collect(url: str, path: str, headers: dict, into: list, ready: asyncio.Event) -> None:
    async with (
        httpx.AsyncClient(base_url=url, timeout=None) as client,
        client.stream("GET", path, headers=headers) as response,
    ):
        assert response.status_code == 200, await response.aread()
        ready.set()
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                into.append(json.loads(line[5:]))


async def wait_for(events: list, predicate, timeout_s: float = 20.0) -> dict:
    """The first event that satisfies `predicate`, as soon as it has arrived."""
    try:
        return await eventually(lambda: next((e for e in events if predicate(e)), None), timeout_s=timeout_s)
    except AssertionError:
        raise AssertionError(f"no such event among {[e['type'] for e in events]}") from None


async def subscribed(url: str, path: str, headers: dict, into: list) -> asyncio.Task:
    ready = asyncio.Event()
    task = asyncio.create_task(collect(url, path, headers, into, ready))
    await asyncio.wait_for(ready.wait(), 10)
    return task


async def test_an_agent_on_one_process_sees_what_happens_on_another(client, second_process):
    _, agent = await make_agent(client.app)
    seen: list[dict] = []
    listener = await subscribed(second_process, "/api/v1/events", agent, seen)
    try:
        conversation = await start(client)  # served by this process, not the second one
        cid = conversation["conversation_id"]
        await wait_for(seen, lambda e: e["type"] == "conversation.created" and e["conversation_id"] == cid)
        done_event(await send(client, conversation, "Do you ship to Norway?"))
        await wait_for(
            seen,
            lambda e: (
                e["type"] == "message.created" and e["data"]["role"] == "user" and e["conversation_id"] == cid
            ),
        )
        await wait_for(
            seen,
            lambda e: (
                e["type"] == "message.created"
                and e["data"]["role"] == "assistant"
                and e["data"]["status"] == "complete"
                and e["conversation_id"] == cid
            ),
        )
        done_event(await send(client, conversation, "Can I speak to someone, a human?"))
        await wait_for(
            seen, lambda e: e["type"] == "conversation.handoff_requested" and e["conversation_id"] == cid
        )
        changed = await wait_for(
            seen, lambda e: e["type"] == "conversation.status_changed" and e["conversation_id"] == cid
        )
        assert changed["data"]["status"] == "open" and changed["data"]["previous"] == "bot"
        # Each event arrived once, though two processes are subscribed.
        ids = [e["id"] for e in seen if e["conversation_id"] == cid]
        assert len(ids) == len(set(ids))
    finally:
        listener.cancel()


async def test_the_customer_sees_an_agent_reply_live_through_another_process(client, second_process):
    _, agent = await make_agent(client.app)
    conversation = await start(client)
    cid = conversation["conversation_id"]
    seen: list[dict] = []
    listener = await subscribed(
        second_process, f"/api/v1/widget/conversations/{cid}/events", auth(conversation), seen
    )
    try:
        reply = await client.post(
            f"/api/v1/conversations/{cid}/messages",
            headers=agent,
            json={"text": "Hello, Sam from support here."},
        )
        assert reply.status_code == 201
        status = await wait_for(seen, lambda e: e["type"] == "conversation.status_changed")
        assert status["data"]["status"] == "open"
        message = await wait_for(seen, lambda e: e["type"] == "message.created")
        assert (
            message["data"]["text"] == "Hello, Sam from support here." and message["data"]["role"] == "agent"
        )
        other = await start(client)
        forbidden = await httpx.AsyncClient(base_url=second_process).get(
            f"/api/v1/widget/conversations/{cid}/events", headers=auth(other)
        )
        assert forbidden.status_code == 403
    finally:
        listener.cancel()


async def test_a_prompt_reload_reaches_every_process(
    tiny_settings, tiny_engine, second_process, shared_prompts
):
    settings = tiny_settings.model_copy(update={"prompts_dir": shared_prompts})
    async with running_app(settings, tiny_engine) as client:
        _, admin = await make_agent(client.app, AgentRole.ADMIN)
        bot_file = shared_prompts / "shop-en" / "bot.toml"
        bot_file.write_text(
            bot_file.read_text().replace("How can I help you today?", "What can I do for you?")
        )
        assert (await client.post("/api/v1/admin/prompts/reload", headers=admin)).status_code == 200
    async with httpx.AsyncClient(base_url=second_process) as other:

        async def greeted_anew() -> bool:
            started = (await other.post("/api/v1/widget/conversations", json={"bot": "shop-en"})).json()
            return started["greeting"].endswith("What can I do for you?")

        await eventually(greeted_anew, timeout_s=20, interval_s=0.1, what="the second process reloaded")
