"""A burst of simultaneous widget conversations over loopback HTTP on the tiny engine.

The reply queue is small (16), so most of the burst is refused: a refusal is a 429 with
Retry-After and stores nothing; every accepted turn is stored with its reply; nothing is
a 5xx. Latencies of the accepted turns are reported.
"""

import asyncio
import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
from sqlalchemy import select

from backend.conversations.models import Message
from tests.helpers import auth, parse_sse
from tests.support import client_app, eventually, served, wait_ready

CONVERSATIONS = 50
MAX_PENDING = 16


@dataclass
class Turn:
    conversation: dict
    text: str
    status: int = 0
    retry_after: str | None = None
    events: list | None = None
    first_token_ms: float | None = None
    total_ms: float | None = None


@pytest.fixture
async def live(tiny_settings, tiny_engine) -> AsyncIterator[httpx.AsyncClient]:
    settings = tiny_settings.model_copy(
        # Long enough replies that the burst overlaps them, short enough for a quick test.
        update={"max_pending_replies": MAX_PENDING, "max_reply_tokens": 48}
    )
    limits = httpx.Limits(max_connections=CONVERSATIONS * 2, max_keepalive_connections=CONVERSATIONS * 2)
    async with (
        served(settings, tiny_engine) as url,
        httpx.AsyncClient(base_url=url, timeout=40, limits=limits) as client,
    ):
        await wait_ready(client)
        client.app = client_app(url)
        yield client
    # Leaving `served` drained every reply: nothing runs on in the session's shared engine.


async def send(client: httpx.AsyncClient, turn: Turn, waiting: list[Turn], go: asyncio.Event) -> None:
    url = f"/api/v1/widget/conversations/{turn.conversation['conversation_id']}/messages"
    waiting.append(turn)
    await go.wait()
    began = time.perf_counter()
    async with client.stream(
        "POST", url, json={"text": turn.text}, headers=auth(turn.conversation)
    ) as response:
        turn.status = response.status_code
        turn.retry_after = response.headers.get("retry-after")
        lines = []
        async for line in response.aiter_lines():
            if turn.first_token_ms is None and line.strip() == "event: token":
                turn.first_token_ms = (time.perf_counter() - began) * 1000
            lines.append(line)
    turn.total_ms = (time.perf_counter() - began) * 1000
    if turn.status == 200:
        turn.events = parse_sse("\n".join(lines))


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


async def burst(client: httpx.AsyncClient, turns: list[Turn]) -> None:
    """Every turn's request leaves at the same moment."""
    go, waiting = asyncio.Event(), []
    tasks = [asyncio.create_task(send(client, turn, waiting, go)) for turn in turns]
    await eventually(lambda: len(waiting) == len(turns), what="every request waits at the start line")
    go.set()
    await asyncio.gather(*tasks)


def check_wave(turns: list[Turn]) -> tuple[list[Turn], list[Turn]]:
    accepted = [t for t in turns if t.status == 200]
    refused = [t for t in turns if t.status == 429]
    assert len(accepted) + len(refused) == len(turns), sorted({t.status for t in turns})
    # A refusal means the queue was full, so at least that many were accepted.
    assert accepted and (not refused or len(accepted) >= MAX_PENDING)
    assert all(t.retry_after is not None and int(t.retry_after) >= 1 for t in refused)
    for turn in accepted:
        kinds = [kind for kind, _ in turn.events]
        assert kinds[0] == "accepted" and kinds[-1] == "done", kinds
    return accepted, refused


async def test_a_burst_beyond_the_reply_queue_is_refused_cleanly(live, record_property):
    began = time.perf_counter()
    async with asyncio.timeout(50):
        started = await asyncio.gather(
            *(
                live.post("/api/v1/widget/conversations", json={"bot": "shop-en"})
                for _ in range(CONVERSATIONS)
            )
        )
        assert [r.status_code for r in started] == [201] * CONVERSATIONS
        first = [
            Turn(r.json(), f"Customer {n}: can I return a tent I bought?") for n, r in enumerate(started)
        ]
        await burst(live, first)
        accepted, refused = check_wave(first)
        assert refused, "the burst never filled the reply queue"
        # Every accepted reply was read to its end, so the queue has room again: the refused
        # customers come back at once rather than after their Retry-After.
        assert live.app.state.services.claims.slots.taken == 0
        second = [Turn(t.conversation, t.text) for t in refused]
        await burst(live, second)
        accepted_again, refused_again = check_wave(second)
    elapsed_s = time.perf_counter() - began

    accepted += accepted_again
    async with live.app.state.services.sessions() as db:
        rows = list(
            await db.scalars(
                select(Message)
                .where(Message.conversation_id.in_([t.conversation["conversation_id"] for t in first]))
                .order_by(Message.conversation_id, Message.seq)
            )
        )
    stored: dict[str, list[Message]] = {}
    for row in rows:
        stored.setdefault(row.conversation_id, []).append(row)
    for turn in accepted:
        user, reply = stored.pop(turn.conversation["conversation_id"])
        done = turn.events[-1][1]
        assert (user.role, user.status, user.text) == ("user", "complete", turn.text)
        assert (reply.role, reply.status, reply.id) == ("assistant", "complete", done["message_id"])
        assert reply.text == done["text"] and reply.completion_tokens == done["completion_tokens"] > 0
    assert stored == {}, "a refused message was stored"

    totals = [t.total_ms for t in accepted]
    firsts = [t.first_token_ms for t in accepted if t.first_token_ms is not None]
    figures = {
        "accepted": len(accepted),
        "refused_429_first_burst": len(refused),
        "refused_429_retry_burst": len(refused_again),
        "turn_p50_ms": round(percentile(totals, 50), 1),
        "turn_p95_ms": round(percentile(totals, 95), 1),
        "first_token_p50_ms": round(percentile(firsts, 50), 1),
        "first_token_p95_ms": round(percentile(firsts, 95), 1),
        "elapsed_s": round(elapsed_s, 1),
    }
    for name, value in figures.items():
        record_property(name, value)
    print("load:", ", ".join(f"{name}={value}" for name, value in figures.items()))
