"""When the bot hands over: phrase detection and the count of unanswered replies."""

from backend.conversations import lifecycle
from backend.conversations.models import Conversation, ConversationStatus
from backend.prompting.handoff import HandoffRules

EN = HandoffRules.from_config("en", {"max_unanswered": 2})
ZH = HandoffRules.from_config("zh", {})


def test_customers_asking_for_a_person_are_recognised():
    assert EN.asks_for_human("Can I talk to a HUMAN?")
    assert EN.asks_for_human("I need an agent")
    assert not EN.asks_for_human("What's on the agenda for returns?")
    assert not EN.asks_for_human("How long is the warranty?")
    assert ZH.asks_for_human("我要转人工")
    assert not ZH.asks_for_human("保修多久？")


def test_two_unanswered_replies_in_a_row_hand_over():
    conversation = Conversation(id="c", status=ConversationStatus.BOT, unanswered_replies=0)
    assert lifecycle.count_unanswered(conversation, EN, "I don't know, sorry.") == []
    assert lifecycle.count_unanswered(conversation, EN, "Returns are free in the EU.") == []
    assert conversation.unanswered_replies == 0
    assert lifecycle.count_unanswered(conversation, EN, "I do not know that.") == []
    events = lifecycle.count_unanswered(conversation, EN, "Sorry, I don't know. A human colleague can help.")
    assert [e.type for e in events] == ["conversation.status_changed", "conversation.handoff_requested"]
    assert conversation.status == ConversationStatus.OPEN and conversation.handoff_reason == "unanswered"
    assert conversation.handed_off_at is not None
