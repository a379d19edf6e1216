"""The bot's replies counted per bot over a date range, with their doubts and the customers'
thumbs up and down: in the report's service, then through both report routes."""

from dataclasses import asdict
from datetime import UTC, datetime, timedelta

import pytest

from backend.conversations import repository
from backend.conversations.feedback import rate_reply
from backend.conversations.models import ReplyFeedback
from backend.errors import InvalidInput
from backend.reports.replies import ReplyCounts, replies_per_bot
from backend.reports.service import build_report
from tests.helpers import auth, done_event, done_of, open_conversation, send, start, take_turn
from tests.support import make_agent

UP, DOWN = ReplyFeedback.UP, ReplyFeedback.DOWN


async def replies_rated(services, bot: str, *ratings: ReplyFeedback | None) -> list[int]:
    """One conversation with `bot`, a reply per rating, each reply rated so; the replies' ids."""
    customer = await open_conversation(services, bot)
    cid = customer.conversation.id
    replies = []
    for number, feedback in enumerate(ratings):
        reply_id = done_of(await take_turn(services, cid, f"Question {number}?")).message_id
        replies.append(reply_id)
        if feedback is not None:
            async with services.new_work() as work:
                conversation = await services.customers.authorize(work, cid, customer.customer_token)
                await rate_reply(work, conversation, reply_id, feedback)
    return replies


async def test_replies_are_counted_per_bot_over_the_range_with_doubts_and_feedback(services):
    before = datetime.now(UTC)
    await replies_rated(services, "shop-en", UP)
    start = datetime.now(UTC)  # the reply above was written before the range
    shop = await replies_rated(services, "shop-en", UP, UP, DOWN, None)
    await replies_rated(services, "appliance-zh", DOWN)
    end = datetime.now(UTC) + timedelta(seconds=1)
    async with services.new_work() as work:  # one doubtful reply, as the checks mark it
        (await repository.get_message(work.db, shop[0])).doubt = "9.99 eur is not in the policy"

    async with services.new_work() as work:
        counts = await replies_per_bot(work.db, start, end, None)
        only_zh = await replies_per_bot(work.db, start, end, "appliance-zh")
        from_before = await replies_per_bot(work.db, before, end, "shop-en")
        report = await build_report(work.db, start, end, None)

    assert counts == {
        "appliance-zh": ReplyCounts.of(replies=1, doubtful=0, up=0, down=1),
        "shop-en": ReplyCounts.of(replies=4, doubtful=1, up=2, down=1),
    }
    assert counts["shop-en"].up_share == 0.6667 and counts["shop-en"].doubtful_share == 0.25
    assert only_zh == {"appliance-zh": counts["appliance-zh"]}
    assert from_before["shop-en"] == ReplyCounts.of(replies=5, doubtful=1, up=3, down=1)
    assert report["total"].replies == ReplyCounts.of(replies=5, doubtful=1, up=2, down=2)
    assert {slug: r.replies for slug, r in report["per_bot"].items()} == counts
    assert report["per_bot"]["shop-en"].messages == {"user": 4, "assistant": 4}


async def test_a_bot_without_ratings_has_no_share(services):
    start = datetime.now(UTC)
    await replies_rated(services, "shop-en", None)
    async with services.new_work() as work:
        report = await build_report(work.db, start, datetime.now(UTC) + timedelta(seconds=1), None)
    assert asdict(report["per_bot"]["shop-en"].replies) == {
        "replies": 1, "doubtful": 0, "doubtful_share": 0.0, "up": 0, "down": 0, "up_share": None,
    }  # fmt: skip


async def test_the_report_routes_show_the_feedback(client):
    _, agent = await make_agent(client.app)
    window = {"from": datetime.now(UTC).isoformat()}
    for bot, feedback in (("shop-en", "up"), ("shop-en", "down"), ("appliance-zh", "up")):
        conversation = await start(client, bot)
        reply_id = done_event(await send(client, conversation, "Hello"))["message_id"]
        rated = await client.put(
            f"/api/v1/widget/conversations/{conversation['conversation_id']}/messages/{reply_id}/feedback",
            json={"feedback": feedback},
            headers=auth(conversation),
        )
        assert rated.status_code == 200, rated.text

    figures = (await client.get("/api/v1/reports/replies", headers=agent, params=window)).json()
    rated = {
        slug: (c["replies"], c["up"], c["down"], c["up_share"]) for slug, c in figures["per_bot"].items()
    }
    assert rated == {"appliance-zh": (1, 1, 0, 1.0), "shop-en": (2, 1, 1, 0.5)}
    assert (figures["total"]["up"], figures["total"]["down"], figures["total"]["up_share"]) == (2, 1, 0.6667)
    report = (await client.get("/api/v1/reports", headers=agent, params=window)).json()
    assert report["total"]["replies"] == figures["total"]
    assert {slug: r["replies"] for slug, r in report["per_bot"].items()} == figures["per_bot"]
    zh = {**window, "bot": "appliance-zh"}
    only_zh = await client.get("/api/v1/reports/replies", headers=agent, params=zh)
    assert only_zh.json()["per_bot"] == {"appliance-zh": figures["per_bot"]["appliance-zh"]}

    assert (await client.get("/api/v1/reports/replies", params=window)).status_code == 401
    backwards = await client.get(
        "/api/v1/reports/replies", headers=agent, params={"from": "2030-01-02", "to": "2030-01-01"}
    )
    assert (backwards.status_code, backwards.json()["detail"]) == (422, "'from' must be before 'to'")


async def test_the_handover_message_is_no_answer_it_takes_no_thumbs_and_is_not_counted(services):
    start = datetime.now(UTC)
    customer = await open_conversation(services, "shop-en")
    cid = customer.conversation.id
    answer = done_of(await take_turn(services, cid, "Is delivery free?"))
    handover = done_of(await take_turn(services, cid, "I want to talk to a human, please"))
    assert handover.handoff and handover.finish_reason == "handoff"

    async with services.new_work() as work:
        conversation = await services.customers.authorize(work, cid, customer.customer_token)
        with pytest.raises(InvalidInput, match="hands over to a person; no answer, so no feedback"):
            await rate_reply(work, conversation, handover.message_id, UP)
        await rate_reply(work, conversation, answer.message_id, UP)
    async with services.new_work() as work:
        counts = await replies_per_bot(work.db, start, datetime.now(UTC) + timedelta(seconds=1), "shop-en")
    assert counts == {"shop-en": ReplyCounts.of(replies=1, doubtful=0, up=1, down=0)}
