"""Redis stopped mid-conversation: clean 503s while it is down, recovery by itself after.

Runs its own redis-server, so the shared one stays up for the other tests.
"""

import asyncio

import redis.asyncio as aioredis

from backend.events.bus import STATUS_CHANGED, Event, RedisEventBus
from backend.redis_client import create_redis
from tests.helpers import auth, done_event, send, start
from tests.support import eventually, free_port, running_app


async def start_redis(port: int) -> asyncio.subprocess.Process:
    process = await asyncio.create_subprocess_exec(
        "redis-server",
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    client = aioredis.Redis(port=port)
    try:
        await eventually(
            client.ping, timeout_s=10, ignoring=(aioredis.ConnectionError,), what="redis-server up"
        )
    finally:
        await client.aclose()
    return process


async def stop(process: asyncio.subprocess.Process) -> None:
    process.terminate()
    await process.wait()


async def test_turns_fail_cleanly_while_redis_is_down_and_recover_by_themselves(tiny_settings, tiny_engine):
    port = free_port()
    redis_url = f"redis://127.0.0.1:{port}/0"
    redis_server = await start_redis(port)
    settings = tiny_settings.model_copy(update={"redis_url": redis_url})
    try:
        async with running_app(settings, tiny_engine) as client:
            conversation = await start(client)
            messages = f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages"
            first = done_event(await send(client, conversation, "Do you ship to Norway?"))

            await stop(redis_server)
            down = await client.post(messages, json={"text": "Still there?"}, headers=auth(conversation))
            assert down.status_code == 503 and "session store" in down.json()["detail"]
            assert down.headers["retry-after"]
            history = await client.get(messages, headers=auth(conversation))  # Postgres alone serves it
            assert [m["text"] for m in history.json()["messages"]][0] == "Do you ship to Norway?"
            assert len(history.json()["messages"]) == 2  # the refused message was not half-stored

            redis_server = await start_redis(port)  # back, and empty: every session is gone
            again = done_event(await send(client, conversation, "And to Switzerland?"))
            # Rebuilt from Postgres token for token, so the engine's cache still serves it.
            assert again["cached_tokens"] >= first["prompt_tokens"] - 32

            # The process's own event subscription came back too: a takeover elsewhere still
            # reaches a reply being written here.
            stops = client.app.state.services.claims.stops
            other_process = create_redis(redis_url)
            bus = RedisEventBus(other_process, channel=f"{settings.redis_key_prefix}events")
            try:
                with stops.watch("outage-probe") as stop_flag:

                    async def stopped() -> bool:
                        """Announced until the app's resubscribed listener hears it."""
                        await bus.publish(Event(STATUS_CHANGED, "outage-probe", {"status": "open"}))
                        return stop_flag.is_set()

                    await eventually(stopped, timeout_s=15, interval_s=0.1, what="the takeover was heard")
            finally:
                await other_process.aclose()
    finally:
        await stop(redis_server)
