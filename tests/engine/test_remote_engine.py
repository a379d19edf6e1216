"""The engine over one URL (vLLM's router, or a replica), on a fake replica: its health, its
failures and what it passes on (the real router: e2e/processes/test_scale_out.py)."""

import asyncio

import pytest

from backend.engine.interface import EngineUnavailable, GenerationResult, TokenDelta
from backend.engine.remote import ReplicaUnavailable
from backend.engine.remote_engine import MISSES_BEFORE_DEAD, RemoteEngine
from tests.support import eventually


class FakeReplica:
    """Answers like a router in front of replicas; `up` and `fail_requests` stand for its failures."""

    def __init__(self):
        self.url, self.health_path = "http://router:8000", "/readiness"
        self.max_model_len = 1024
        self.up = True
        self.fail_requests = False
        self.probes = 0
        self.slow_probes = 0
        self.last_error = "ConnectError: refused"
        self.sessions: list[str | None] = []
        self.open_streams = 0

    async def probe(self) -> bool:
        self.probes += 1
        if self.slow_probes:  # a router too busy to answer within the probe's timeout
            self.slow_probes -= 1
            await asyncio.sleep(0.01)
            return False
        return self.up

    async def stream(self, prompt_ids, *, max_tokens, request_id=None, cache_salt=None, session=None):
        self.sessions.append(session)
        if self.fail_requests:
            raise ReplicaUnavailable(f"{self.url} answered 502")
        self.open_streams += 1
        try:
            yield TokenDelta("x", [7])
            yield GenerationResult("x", [7], "length", len(prompt_ids), 0, 0.01, 0.02)
        finally:
            self.open_streams -= 1

    async def read_labels(self, prompt_ids, labels, *, request_id=None, cache_salt=None, session=None):
        self.sessions.append(session)
        raise ReplicaUnavailable(f"{self.url} refused the connection")

    async def sample(self, prompt_ids, *, n, session=None, **options):
        self.sessions.append(session)
        return ["a"] * n

    async def aclose(self) -> None:
        pass


async def started(fake: FakeReplica, interval_s: float = 3600) -> RemoteEngine:
    engine = RemoteEngine(fake, block_size=32, max_model_len=2048, health_interval_s=interval_s)  # type: ignore[arg-type]
    await engine.wait_until_ready(5)
    return engine


async def reply(engine, key="c1") -> GenerationResult:
    async for item in engine.stream([1, 2, 3], max_tokens=4, cache_salt="salt", affinity_key=key):
        last = item
    return last


async def test_every_request_passes_its_conversation_as_the_session_key():
    fake = FakeReplica()
    engine = await started(fake)
    assert engine.max_model_len == 1024  # what the replicas serve, below the app's own
    assert (await reply(engine, "c1")).finish_reason == "length"
    await engine.sample([1], n=2, max_tokens=4, temperature=0.8, seed=1, affinity_key="c1")
    assert fake.sessions == ["c1", "c1"]
    engine.shutdown()


async def test_the_engine_is_dead_while_the_url_fails_its_health_check():
    fake = FakeReplica()
    engine = await started(fake, interval_s=0.01)
    assert not engine.is_dead
    fake.up = False
    await eventually(lambda: engine.is_dead, timeout_s=2, what="the failed health check seen")
    with pytest.raises(EngineUnavailable, match="not answering"):
        await reply(engine)
    engine.shutdown()


async def test_a_few_missed_health_checks_under_load_are_not_a_death():
    fake = FakeReplica()
    engine = await started(fake)
    fake.slow_probes = MISSES_BEFORE_DEAD - 1
    for _ in range(MISSES_BEFORE_DEAD - 1):
        await engine.check_health()
    assert not engine.is_dead
    await engine.check_health()  # answered: the misses start again from none
    fake.slow_probes = MISSES_BEFORE_DEAD - 1
    for _ in range(MISSES_BEFORE_DEAD - 1):
        await engine.check_health()
    assert not engine.is_dead
    # However many requests fail at once, one check runs: a burst of failures is one miss.
    fake.slow_probes, probes = 1, fake.probes
    await asyncio.gather(*(engine.check_health() for _ in range(10)))
    assert fake.probes == probes + 1
    assert engine.is_dead  # the third miss in a row
    engine.shutdown()


async def test_a_failed_request_fails_its_turn_and_has_the_url_checked_at_once():
    fake = FakeReplica()
    engine = await started(fake)
    probes = fake.probes
    fake.fail_requests = True
    with pytest.raises(EngineUnavailable, match="502"):
        await reply(engine)
    await eventually(lambda: fake.probes > probes, timeout_s=2, what="a health check after the failure")
    assert not engine.is_dead  # the router still answers: the next turn goes through
    fake.fail_requests = False
    assert (await reply(engine)).finish_reason == "length"
    with pytest.raises(EngineUnavailable, match="refused"):
        await engine.read_labels([1], [5, 6], affinity_key="c1")
    engine.shutdown()


async def test_a_reply_cut_short_closes_its_request_at_once():
    fake = FakeReplica()
    engine = await started(fake)
    stream = engine.stream([1, 2], max_tokens=4, affinity_key="c1")
    assert isinstance(await anext(stream), TokenDelta)
    assert fake.open_streams == 1
    await stream.aclose()
    assert fake.open_streams == 0
    engine.shutdown()


async def test_a_url_that_never_answers_fails_the_start_naming_the_setting():
    fake = FakeReplica()
    fake.up = False
    engine = RemoteEngine(fake, block_size=32, max_model_len=2048, health_interval_s=0.05)  # type: ignore[arg-type]
    with pytest.raises(
        EngineUnavailable, match="PREFIXDESK_ENGINE_URL http://router:8000 did not answer /readiness.*refused"
    ):
        await engine.wait_until_ready(0.2)
    assert engine.is_dead
    await asyncio.sleep(0)
