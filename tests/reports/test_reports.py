"""The reports endpoint counts what happened, with human times measured from the handoff."""

from datetime import UTC, datetime, timedelta

import pytest

from backend.conversations import lifecycle
from tests.helpers import done_event, send, start
from tests.support import make_agent


class LifecycleClock:
    """When handoffs, first human replies and resolutions happen: moved by the test."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch) -> LifecycleClock:
    clock = LifecycleClock()
    monkeypatch.setattr(lifecycle, "utcnow", clock)
    return clock


async def test_reports_count_bot_and_human_work_over_a_window(client, clock):
    _, agent = await make_agent(client.app)
    window_start = datetime.now(UTC).isoformat()
    by_bot = await start(client)
    done_event(await send(client, by_bot, "How much is express delivery?"))
    await client.post(f"/api/v1/conversations/{by_bot['conversation_id']}/resolve", headers=agent)

    handed = await start(client, "appliance-zh")
    done_event(await send(client, handed, "请转人工"))
    clock.advance(30)  # a human answers half a minute after the handoff
    await client.post(
        f"/api/v1/conversations/{handed['conversation_id']}/messages",
        headers=agent,
        json={"text": "您好，我是人工客服小王。"},
    )
    clock.advance(45)  # and resolves it 75 s after the handoff
    await client.post(f"/api/v1/conversations/{handed['conversation_id']}/resolve", headers=agent)

    report = (await client.get("/api/v1/reports", headers=agent, params={"from": window_start})).json()
    total = report["total"]
    assert total["conversations"] == 2 and total["handed_off"] == 1 and total["resolved_by_bot"] == 1
    assert total["handoff_rate"] == 0.5
    assert total["messages"] == {"user": 2, "assistant": 2, "agent": 1}
    assert total["first_human_response_s"] == {"mean": 30.0, "median": 30.0, "count": 1}
    assert total["resolution_s"] == {"mean": 75.0, "median": 75.0, "count": 1}
    assert set(report["per_bot"]) == {"shop-en", "appliance-zh"}
    assert report["per_bot"]["appliance-zh"]["handed_off"] == 1
    assert report["per_bot"]["appliance-zh"]["handoff_rate"] == 1.0
    assert report["per_bot"]["shop-en"]["handoff_rate"] == 0.0
    assert report["per_bot"]["shop-en"]["resolved_by_bot"] == 1

    only_zh = (
        await client.get(
            "/api/v1/reports", headers=agent, params={"from": window_start, "bot": "appliance-zh"}
        )
    ).json()
    assert only_zh["total"]["conversations"] == 1
    nothing = (
        await client.get("/api/v1/reports", headers=agent, params={"from": "2020-01-01", "to": "2020-01-02"})
    ).json()
    assert nothing["total"]["conversations"] == 0 and nothing["total"]["handoff_rate"] is None
    empty = await client.get(
        "/api/v1/reports", headers=agent, params={"from": "2030-01-02", "to": "2030-01-01"}
    )
    assert empty.status_code == 422
