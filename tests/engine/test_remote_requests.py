"""What a router in front of `vllm serve` replicas sees of the app's requests, and the errors of
a remote engine that cannot be reached (on a fake transport; the real router: e2e/processes)."""

import json

import httpx
import pytest

from backend.config import Settings
from backend.engine.factory import create_remote_engine
from backend.engine.interface import EngineUnavailable
from backend.engine.remote import Replica, ReplicaUnavailable

ROUTER = "http://router:30000"


def completion_stream(request: httpx.Request) -> httpx.Response:
    chunks = [
        {"choices": [{"text": "Hi", "token_ids": [5], "finish_reason": None}]},
        {"choices": [{"text": "", "token_ids": [], "finish_reason": "stop"}], "usage": {}},
    ]
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return httpx.Response(200, text=body, headers={"content-type": "text/event-stream"})


def replica_seeing(
    seen: list[httpx.Request], header: str = "X-Session-Id", status: int = 200, bots: dict | None = None
) -> Replica:
    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if status != 200:
            return httpx.Response(status, text="upstream failed")
        if json.loads(request.content).get("n"):
            return httpx.Response(200, json={"choices": [{"text": "a"}, {"text": "b"}]})
        return completion_stream(request)

    client = httpx.AsyncClient(transport=httpx.MockTransport(answer))
    replica = Replica(
        ROUTER, temperature=0.0, timeout_s=5, session_header=header, bot_of=(bots or {}).get, client=client
    )
    replica.model = "m"
    return replica


async def drain(replica: Replica, **options) -> None:
    async for _ in replica.stream([1, 2, 3], max_tokens=4, **options):
        pass


async def test_a_conversations_requests_carry_its_id_in_the_configured_header():
    seen: list[httpx.Request] = []
    replica = replica_seeing(seen, header="X-Conversation")
    await drain(replica, cache_salt="bot-salt", session="conversation-1")
    await replica.sample([1, 2], n=2, max_tokens=4, temperature=0.8, seed=1, session="conversation-1")
    assert [request.headers.get("X-Conversation") for request in seen] == ["conversation-1"] * 2
    assert "X-Session-Id" not in seen[0].headers


async def test_a_bots_warm_ups_share_one_key_so_a_router_keeps_them_with_their_prefix():
    seen: list[httpx.Request] = []
    replica = replica_seeing(seen)
    await drain(replica, cache_salt="shop-salt")
    await drain(replica, cache_salt="shop-salt")
    await drain(replica, cache_salt="other-salt")
    keys = [request.headers["X-Session-Id"] for request in seen]
    assert keys[0] == keys[1] != keys[2]
    await drain(replica)  # no bot, no conversation: nothing to keep together
    assert "X-Session-Id" not in seen[-1].headers


async def test_a_request_names_its_bot_where_its_salt_is_a_bots():
    seen: list[httpx.Request] = []
    replica = replica_seeing(seen, bots={"shop-salt": "shop-en"})
    await drain(replica, cache_salt="shop-salt", session="c1")
    await drain(replica, cache_salt="labelled")  # the eval's own requests: no bot
    assert seen[0].headers["X-Prefixdesk-Bot"] == "shop-en"
    assert "X-Prefixdesk-Bot" not in seen[1].headers


async def test_a_router_answering_5xx_is_an_unavailable_engine():
    replica = replica_seeing([], status=502)
    with pytest.raises(ReplicaUnavailable, match="502"):
        await drain(replica, session="c1")


async def test_an_unreachable_url_at_start_up_names_the_setting():
    engine = create_remote_engine(
        Settings(engine="remote", engine_url="http://127.0.0.1:9", health_check_interval_s=0.1)
    )
    with pytest.raises(EngineUnavailable, match="PREFIXDESK_ENGINE_URL http://127.0.0.1:9"):
        await engine.wait_until_ready(0.3)
    engine.shutdown()


@pytest.mark.parametrize("url", ["router:30000", "http://", "http://a b:1", "ftp://router"])
def test_an_engine_url_that_is_not_one_is_refused_with_the_setting(monkeypatch, url):
    monkeypatch.setenv("PREFIXDESK_ENGINE", "remote")
    monkeypatch.setenv("PREFIXDESK_ENGINE_URL", url)
    with pytest.raises(ValueError, match="PREFIXDESK_ENGINE_URL: write it as http://host:port"):
        Settings()


def test_remote_mode_takes_one_url_and_says_where_several_replicas_go(monkeypatch):
    monkeypatch.setenv("PREFIXDESK_ENGINE", "remote")
    monkeypatch.setenv("PREFIXDESK_ENGINE_URL", "http://router:30000/")
    assert Settings().engine_url == "http://router:30000"
    monkeypatch.setenv("PREFIXDESK_ENGINE_URLS", "http://a:8000,http://b:8000")
    with pytest.raises(ValueError, match="PREFIXDESK_ENGINE_URLS is no longer read.*router"):
        Settings()
    monkeypatch.delenv("PREFIXDESK_ENGINE_URLS")
    monkeypatch.delenv("PREFIXDESK_ENGINE_URL")
    with pytest.raises(ValueError, match="needs PREFIXDESK_ENGINE_URL"):
        Settings()


def test_the_session_header_must_be_a_header_name(monkeypatch):
    monkeypatch.setenv("PREFIXDESK_SESSION_HEADER", "X Session: id")
    with pytest.raises(ValueError, match="session_header"):
        Settings()
