"""Remote mode end to end: two `vllm serve` replicas on the tiny model behind vLLM's router
(`vllm-router`, consistent hashing on the session header), and two app processes on the router.

The app processes share the session's Postgres and Redis; the replicas run as the embedded
engine would (same block size, KV cache size and context window).
"""

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy import text

from backend.agents import service as agents
from backend.agents.models import AgentRole
from backend.config import PROJECT_ROOT, Settings
from backend.db import create_db_engine, create_session_factory
from backend.engine.local_replicas import LocalReplica, start_local_replicas
from backend.engine.local_router import start_local_router
from backend.engine.remote import Replica
from backend.judges.yes_no import YesNoJudge
from backend.prompting.chat_format import ChatFormat
from backend.prompting.definitions import load_bot
from tests.helpers import done_event, send, start
from tests.support import app_process, eventually, free_port, serve_env

QUESTIONS = [
    "Do you ship to Norway?",
    "How long does a refund take?",
    "Can I change the size of my order?",
    "Is the tent waterproof?",
]


@pytest.fixture(scope="module")
async def replicas(tiny_settings: Settings, tmp_path_factory) -> AsyncIterator[list[LocalReplica]]:
    logs = tmp_path_factory.mktemp("replicas")
    started = await start_local_replicas(tiny_settings, tiny_settings.model, [free_port(), free_port()], logs)
    yield started
    await asyncio.gather(*(replica.stop() for replica in started))


@pytest.fixture(scope="module")
async def apps(tiny_settings: Settings, replicas, tmp_path_factory) -> AsyncIterator[list[httpx.AsyncClient]]:
    """The router before the replicas, and two `prefixdesk serve` processes that know its URL
    alone, on the session's Postgres and Redis."""
    logs = tmp_path_factory.mktemp("apps")
    urls = [replica.url for replica in replicas]
    router = await start_local_router(urls, free_port(), logs / "router.log", policy="consistent_hash")
    env = serve_env(
        tiny_settings,  # its model gives the tokenizer; no engine runs in the apps
        PREFIXDESK_ENGINE="remote",
        PREFIXDESK_ENGINE_URL=router.url,
        PREFIXDESK_ENGINE_HEALTH_PATH="/readiness",  # the router's /health fails while a replica is down
        PREFIXDESK_HEALTH_CHECK_INTERVAL_S="0.5",
    )
    try:
        async with contextlib.AsyncExitStack() as stack:
            clients = []
            for i in range(2):
                app = await stack.enter_async_context(app_process(env, logs / f"app-{i}.log"))
                client = httpx.AsyncClient(base_url=app.url, timeout=120)
                clients.append(await stack.enter_async_context(client))
            yield clients
    finally:
        await router.stop()


async def finished_requests(replicas: list[LocalReplica]) -> dict[str, float]:
    """Each replica's count of finished requests, from its own /metrics."""
    counts = {}
    async with httpx.AsyncClient(timeout=5) as client:
        for replica in replicas:
            try:
                body = (await client.get(f"{replica.url}/metrics")).text
            except httpx.HTTPError:
                counts[replica.url] = -1.0  # gone
                continue
            counts[replica.url] = sum(
                float(line.rsplit(" ", 1)[1])
                for line in body.splitlines()
                if line.startswith("vllm:request_success_total")
            )
    return counts


async def turn_on(client, replicas, conversation: dict, question: str) -> tuple[dict, str]:
    """One customer turn; the reply's done event and the replica that generated it."""
    before = await finished_requests(replicas)
    done = done_event(await send(client, conversation, question))

    async def served() -> list[str]:
        """The replicas that finished a request since: each counts it a moment after its last chunk."""
        after = await finished_requests(replicas)
        return [url for url in after if after[url] > before[url] >= 0]

    urls = await eventually(served, timeout_s=5, interval_s=0.05, what="a replica counted the request")
    assert len(urls) == 1, (before, urls)
    return done, urls[0]


def full_blocks(tokens: int, block_size: int = 32) -> int:
    return tokens // block_size * block_size


async def test_a_conversation_stays_on_one_replica_through_both_app_processes(apps, replicas):
    first, second = apps
    homes: set[str] = set()
    for i in range(12):  # until the router's hash has put conversations on both replicas
        conversation = await start(first if i % 2 else second)
        one, home = await turn_on(first, replicas, conversation, QUESTIONS[0])
        two, again = await turn_on(second, replicas, conversation, QUESTIONS[1])
        three, still = await turn_on(first, replicas, conversation, QUESTIONS[2])
        assert home == again == still  # the conversation's id is the router's session key
        # Each turn is served from the cache of everything before it, whichever process sent it.
        assert two["cached_tokens"] >= full_blocks(one["prompt_tokens"])
        assert three["cached_tokens"] >= full_blocks(two["prompt_tokens"])
        homes.add(home)
        if len(homes) == 2:
            break
    assert len(homes) == 2


async def admin_headers(database_url: str) -> dict[str, str]:
    db = create_db_engine(database_url)
    async with create_session_factory(db)() as session:
        agent = await agents.create_agent(
            session, name="Ops", email=f"{uuid.uuid4().hex[:10]}@example.com", role=AgentRole.ADMIN, by=None
        )
        _token, plain = await agents.issue_token(session, agent, by=None)
        await session.commit()
    await db.dispose()
    return {"Authorization": f"Bearer {plain}"}


async def reply_totals(client, headers) -> dict:
    response = await client.get("/api/v1/admin/metrics", params={"window": 3600}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["totals"]


async def test_a_judge_read_on_a_replica_is_the_embedded_engines_and_hits_its_cache(
    replicas, tiny_vllm, tiny_model_dir
):
    from transformers import AutoTokenizer

    chat_format = ChatFormat(AutoTokenizer.from_pretrained(tiny_model_dir))
    judge = YesNoJudge(load_bot(PROJECT_ROOT / "prompts" / "shop-en").judges["handoff"], chat_format)
    prompt = judge.prompt_for("Customer's message: can I talk to someone?")
    labels = [*judge.labels.yes_ids, *judge.labels.no_ids]
    replica = Replica(replicas[0].url, temperature=0.0, timeout_s=60)
    try:
        assert await replica.probe()
        first = await replica.read_labels(prompt, labels, request_id=uuid.uuid4().hex, cache_salt="judge")
        again = await replica.read_labels(prompt, labels, request_id=uuid.uuid4().hex, cache_salt="judge")
    finally:
        await replica.aclose()
    embedded = await tiny_vllm.read_labels(prompt, labels, request_id=uuid.uuid4().hex, cache_salt="judge")

    assert len(first.logprobs) == len(labels) and all(value <= 0 for value in first.logprobs)
    assert first.logprobs == pytest.approx(embedded.logprobs, abs=1e-3)
    assert again.cached_tokens >= full_blocks(len(judge.prefix_ids))  # its few-shot prefix, cached


async def test_samples_on_a_replica_are_those_of_the_embedded_engine(replicas, tiny_vllm, tiny_model_dir):
    from transformers import AutoTokenizer

    prompt = AutoTokenizer.from_pretrained(tiny_model_dir).encode("Customer's message: is it free?")
    options = {"n": 3, "max_tokens": 8, "temperature": 0.8, "seed": 3, "cache_salt": "samples"}
    replica = Replica(replicas[0].url, temperature=0.0, timeout_s=60)
    try:
        remote = await replica.sample(prompt, request_id=uuid.uuid4().hex, **options)
    finally:
        await replica.aclose()
    assert len(remote) == 3 and remote == await tiny_vllm.sample(prompt, **options)


async def test_the_replicas_decode_speculatively_as_the_embedded_engine_does(replicas, tiny_settings):
    assert (
        tiny_settings.speculative_method == "ngram"
    )  # the tests' setting, passed on as `--speculative-config`
    async with httpx.AsyncClient(timeout=5) as client:
        body = (await client.get(f"{replicas[0].url}/metrics")).text
    assert "vllm:spec_decode_num_draft_tokens_total" in body  # vLLM counts drafts only when speculating


async def first_turns(client, replicas, count: int, until_both: bool = False) -> list[tuple[dict, dict, str]]:
    """`count` new conversations (more, `until_both` replicas hold some), each after one turn:
    (conversation, its reply, its replica)."""
    started: list[tuple[dict, dict, str]] = []
    while len(started) < count or (until_both and len({home for *_, home in started}) < 2):
        assert len(started) < count + 12, "the router put every conversation on one replica"
        conversation = await start(client)
        # Its own words from the first token on: no other conversation shares its history's blocks.
        question = f"Order {uuid.uuid4().hex}: {QUESTIONS[len(started) % 4]} I bought it last week, thanks."
        done, home = await turn_on(client, replicas, conversation, question)
        started.append((conversation, done, home))
    return started


async def test_a_killed_replica_is_a_cache_miss_not_an_error(apps, replicas, tiny_settings):
    first, second = apps
    admin = await admin_headers(tiny_settings.database_url)
    totals_before = await reply_totals(second, admin)
    opened = await first_turns(first, replicas, 4, until_both=True)
    replies = [done for _, done, _ in opened]
    victim, survivor = replicas
    victim.kill()
    for i, (conversation, turn_one, home) in enumerate(opened):
        # The router's first request to the dead replica fails, opens its circuit and is sent
        # to the other: the turn is a cache miss on its history, not an error.
        done, served = await turn_on(apps[i % 2], replicas, conversation, "And one more thing?")
        replies.append(done)
        assert served == survivor.url and done["finish_reason"] in ("stop", "length")
        if home == victim.url:
            assert done["cached_tokens"] < full_blocks(turn_one["prompt_tokens"])
        else:
            assert done["cached_tokens"] >= full_blocks(turn_one["prompt_tokens"])
    for client in apps:
        assert (await client.get("/readyz")).status_code == 200
    # Every process's replies counted once each in the shared metrics, none as an error.
    totals = await reply_totals(first, admin)
    assert totals["replies"] - totals_before["replies"] == len(replies) == 2 * len(opened)
    assert totals["errors"] == totals_before["errors"]
    for field in ("prompt_tokens", "cached_tokens"):
        assert totals[field] - totals_before[field] == sum(done[field] for done in replies)
    # Nothing lost, nothing twice: every turn stored once, in order, every reply complete.
    db = create_db_engine(tiny_settings.database_url)
    async with db.connect() as connection:
        rows = (
            await connection.execute(
                text(
                    "SELECT conversation_id, seq, role, status FROM messages "
                    "WHERE conversation_id = ANY(:ids) ORDER BY conversation_id, seq"
                ),
                {"ids": [conversation["conversation_id"] for conversation, *_ in opened]},
            )
        ).all()
    await db.dispose()
    for cid in {conversation["conversation_id"] for conversation, *_ in opened}:
        mine = [(seq, role, status) for c, seq, role, status in rows if c == cid]
        assert [role for _, role, _ in mine] == ["user", "assistant", "user", "assistant"], mine
        assert [seq for seq, _, _ in mine] == sorted({seq for seq, _, _ in mine})
        assert all(status == "complete" for _, role, status in mine if role == "assistant"), mine
