"""A conversation's status changes, each with the events it announces, and those it refuses.

bot ──(customer asks | unanswered replies | agent takes over)──> open ──(hand back)──> bot
open | bot ──(resolve)──> resolved ──(customer writes)──> bot, or ──(agent reopens)──> open
"""

import pytest

from backend.conversations import lifecycle
from backend.conversations.models import Conversation, ConversationStatus, HandoffReason
from backend.errors import Conflict
from backend.events.bus import HANDOFF_REQUESTED, STATUS_CHANGED

BOT, OPEN, RESOLVED = ConversationStatus.BOT, ConversationStatus.OPEN, ConversationStatus.RESOLVED


def conversation(status: ConversationStatus = BOT, **fields) -> Conversation:
    return Conversation(id="c", status=status, unanswered_replies=0, **fields)


def kinds(events) -> list[str]:
    return [event.type for event in events]


def test_a_customer_asking_hands_over_once_and_asks_for_a_human():
    c = conversation()
    events = lifecycle.hand_off(c, HandoffReason.CUSTOMER_REQUEST)
    assert kinds(events) == [STATUS_CHANGED, HANDOFF_REQUESTED]
    assert events[0].data == {
        "status": "open",
        "previous": "bot",
        "assignee_id": None,
        "reason": "customer_request",
    }
    assert (c.status, c.handoff_reason) == (OPEN, "customer_request")
    handed_at = c.handed_off_at
    assert handed_at is not None
    again = lifecycle.hand_off(c, HandoffReason.UNANSWERED)
    assert kinds(again) == [HANDOFF_REQUESTED]  # already open: no status change
    assert (c.handed_off_at, c.handoff_reason) == (handed_at, "customer_request")  # the first handoff counts


def test_an_agent_taking_over_assigns_without_asking_for_a_human():
    c = conversation()
    events = lifecycle.take_over(c, 7)
    assert kinds(events) == [STATUS_CHANGED]
    assert (c.status, c.assignee_id, c.handoff_reason) == (OPEN, 7, "agent")
    # Taking over an open conversation only reassigns it.
    reassigned = lifecycle.take_over(c, 8)
    assert kinds(reassigned) == [STATUS_CHANGED] and reassigned[0].data["previous"] == "open"
    assert c.assignee_id == 8


def test_assigning_a_bot_conversation_to_a_person_takes_it_from_the_bot():
    c = conversation()
    lifecycle.assign(c, 3)
    assert (c.status, c.assignee_id) == (OPEN, 3)
    events = lifecycle.assign(c, None)  # unassigned, still with the humans
    assert (c.status, c.assignee_id) == (OPEN, None) and kinds(events) == [STATUS_CHANGED]


def test_hand_back_returns_an_open_conversation_to_the_bot_with_a_clean_count():
    c = conversation(OPEN, assignee_id=4)
    c.unanswered_replies = 1
    events = lifecycle.hand_back(c)
    assert events[0].data == {"status": "bot", "previous": "open", "assignee_id": None}
    assert (c.status, c.assignee_id, c.unanswered_replies) == (BOT, None, 0)
    with pytest.raises(Conflict, match="only an open conversation"):
        lifecycle.hand_back(c)


def test_resolve_and_reopen():
    c = conversation(OPEN)
    assert kinds(lifecycle.resolve(c)) == [STATUS_CHANGED]
    assert c.status == RESOLVED and c.resolved_at is not None
    with pytest.raises(Conflict, match="already resolved"):
        lifecycle.resolve(c)
    with pytest.raises(Conflict, match="resolved; reopen it first"):
        lifecycle.take_over(c, 1)
    lifecycle.reopen(c)
    assert (c.status, c.resolved_at) == (OPEN, None)
    with pytest.raises(Conflict, match="only a resolved conversation"):
        lifecycle.reopen(c)


def test_a_customer_writing_to_a_resolved_conversation_starts_over_with_the_bot():
    c = conversation(RESOLVED, assignee_id=2)
    events = lifecycle.reopen_by_customer(c)
    assert events[0].data["status"] == "bot" and events[0].data["previous"] == "resolved"
    assert (c.status, c.assignee_id, c.resolved_at) == (BOT, None, None)
    assert lifecycle.reopen_by_customer(c) == []  # only a resolved one changes


def test_the_first_human_reply_is_recorded_once():
    c = conversation(OPEN)
    lifecycle.record_human_reply(c)
    first = c.first_human_reply_at
    lifecycle.record_human_reply(c)
    assert first is not None and c.first_human_reply_at == first
