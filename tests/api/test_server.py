"""The app served by uvicorn on loopback: readiness, and a customer who hangs up mid-reply."""

import asyncio

import httpx

from tests.helpers import WrappedEngine, auth
from tests.support import eventually, served, wait_ready


class GatedEngine(WrappedEngine):
    """The real engine, held back until the test opens the gate."""

    def __init__(self, inner, gate: asyncio.Event):
        super().__init__(inner)
        self.gate = gate

    async def stream(self, *args, **kwargs):
        await self.gate.wait()
        async for item in self.inner.stream(*args, **kwargs):
            yield item


async def test_healthz_answers_at_once_and_readyz_waits_for_the_warm_up(tiny_settings, tiny_engine):
    gate = asyncio.Event()
    async with (
        served(tiny_settings, GatedEngine(tiny_engine, gate)) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        not_ready = await eventually_warming(client)
        assert not_ready.status_code == 503 and not_ready.json()["ready"] is False
        assert set(not_ready.json()["bots"].values()) == {"warming"}
        # Warming blocks no bot: a customer's message is taken, and answered once the engine runs.
        conversation = (await client.post("/api/v1/widget/conversations", json={"bot": "shop-en"})).json()
        early = asyncio.create_task(
            client.post(
                f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages",
                json={"text": "hello?"},
                headers=auth(conversation),
            )
        )
        await asyncio.sleep(0.5)
        assert not early.done()  # its reply waits for the engine, like the warm-up
        gate.set()
        assert (await early).status_code == 200
        await wait_ready(client)
        bots = (await client.get("/readyz")).json()["bots"]
        assert bots["shop-en"] == bots["appliance-zh"] == "warm"


async def eventually_warming(client: httpx.AsyncClient) -> httpx.Response:
    """/readyz once the engine is attached and the bots' prefixes are being warmed."""

    async def warming() -> bool:
        return "warming" in (await client.get("/readyz")).json()["bots"].values()

    await eventually(warming, timeout_s=30, what="/readyz says the bots are warming")
    return await client.get("/readyz")


async def test_a_reply_is_finished_and_stored_when_the_customer_disconnects(tiny_settings, tiny_engine):
    settings = tiny_settings.model_copy(update={"max_reply_tokens": 160})
    async with served(settings, tiny_engine) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
        await wait_ready(client)
        conversation = (await client.post("/api/v1/widget/conversations", json={"bot": "shop-en"})).json()
        messages = f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages"
        async with client.stream(
            "POST", messages, json={"text": "Tell me a long story"}, headers=auth(conversation)
        ) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line.startswith("event: token"):
                    break  # hang up after the first token

        async def settled() -> dict | None:
            history = (await client.get(messages, headers=auth(conversation))).json()
            return history if history["messages"][-1]["status"] != "generating" else None

        history = await eventually(settled, timeout_s=20, what="the reply was stored")
        user, reply = history["messages"]
        assert user["text"] == "Tell me a long story"
        assert reply["status"] == "complete" and reply["completion_tokens"] == 160
        assert reply["finish_reason"] == "length"
