"""Customers' thumbs up and down, counted per bot over the replies of a date range: in the
report's service, then through both report routes."""

from dataclasses import asdict
from datetime import UTC, datetime, timedelta

from backend.conversations.feedback import rate_reply
from backend.conversations.models import ReplyFeedback
from backend.reports.feedback import FeedbackCounts, feedback_per_bot
from backend.reports.service import build_report
from tests.helpers import auth, done_event, done_of, open_conversation, send, start, take_turn
from tests.support import make_agent

UP, DOWN = ReplyFeedback.UP, ReplyFeedback.DOWN


async def replies_rated(services, bot: str, *ratings: ReplyFeedback | None) -> None:
    """One conversation with `bot`, a reply per rating, each reply rated so."""
    customer = await open_conversation(services, bot)
    cid = customer.conversation.id
    for number, feedback in enumerate(ratings):
        reply_id = done_of(await take_turn(services, cid, f"Question {number}?")).message_id
        if feedback is not None:
            async with services.new_work() as work:
                conversation = await services.customers.authorize(work, cid, customer.customer_token)
                await rate_reply(work, conversation, reply_id, feedback)


async def test_feedback_is_counted_per_bot_over_the_replies_of_the_range(services):
    before = datetime.now(UTC)
    await replies_rated(services, "shop-en", UP)
    start = datetime.now(UTC)  # the reply above was written before the range
    await replies_rated(services, "shop-en", UP, UP, DOWN, None)
    await replies_rated(services, "appliance-zh", DOWN)
    end = datetime.now(UTC) + timedelta(seconds=1)

    async with services.new_work() as work:
        counts = await feedback_per_bot(work.db, start, end, None)
        only_zh = await feedback_per_bot(work.db, start, end, "appliance-zh")
        from_before = await feedback_per_bot(work.db, before, end, "shop-en")
        report = await build_report(work.db, start, end, None)

    assert counts == {
        "appliance-zh": FeedbackCounts(up=0, down=1, up_share=0.0),
        "shop-en": FeedbackCounts(up=2, down=1, up_share=0.6667),
    }
    assert only_zh == {"appliance-zh": counts["appliance-zh"]}
    assert from_before["shop-en"] == FeedbackCounts(up=3, down=1, up_share=0.75)
    assert report["total"].feedback == FeedbackCounts(up=2, down=2, up_share=0.5)
    assert {slug: r.feedback for slug, r in report["per_bot"].items()} == counts
    assert report["per_bot"]["shop-en"].messages == {"user": 4, "assistant": 4}


async def test_a_bot_without_ratings_has_no_share(services):
    start = datetime.now(UTC)
    await replies_rated(services, "shop-en", None)
    async with services.new_work() as work:
        report = await build_report(work.db, start, datetime.now(UTC) + timedelta(seconds=1), None)
    assert asdict(report["per_bot"]["shop-en"].feedback) == {"up": 0, "down": 0, "up_share": None}


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

    figures = (await client.get("/api/v1/reports/feedback", headers=agent, params=window)).json()
    assert figures["total"] == {"up": 2, "down": 1, "up_share": 0.6667}
    assert figures["per_bot"] == {
        "appliance-zh": {"up": 1, "down": 0, "up_share": 1.0},
        "shop-en": {"up": 1, "down": 1, "up_share": 0.5},
    }
    report = (await client.get("/api/v1/reports", headers=agent, params=window)).json()
    assert report["total"]["feedback"] == figures["total"]
    assert {slug: r["feedback"] for slug, r in report["per_bot"].items()} == figures["per_bot"]
    zh = {**window, "bot": "appliance-zh"}
    only_zh = await client.get("/api/v1/reports/feedback", headers=agent, params=zh)
    assert only_zh.json()["per_bot"] == {"appliance-zh": figures["per_bot"]["appliance-zh"]}

    assert (await client.get("/api/v1/reports/feedback", params=window)).status_code == 401
    backwards = await client.get(
        "/api/v1/reports/feedback", headers=agent, params={"from": "2030-01-02", "to": "2030-01-01"}
    )
    assert (backwards.status_code, backwards.json()["detail"]) == (422, "'from' must be before 'to'")
