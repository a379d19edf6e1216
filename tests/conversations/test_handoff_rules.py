"""When the bot hands over after a reply: replies that did not answer, in a row, or a doubtful one."""

from backend.conversations import lifecycle
from backend.conversations.models import Conversation, ConversationStatus
from backend.prompting.definitions import HandoffSettings

SETTINGS = HandoffSettings(message="passing you on", max_unanswered=2, on_doubt=False)


def bot_conversation() -> Conversation:
    return Conversation(id="c", status=ConversationStatus.BOT, unanswered_replies=0)


def test_two_unanswered_replies_in_a_row_hand_over():
    conversation = bot_conversation()
    assert lifecycle.after_reply(conversation, SETTINGS, answered=False, doubtful=False) == []
    assert lifecycle.after_reply(conversation, SETTINGS, answered=True, doubtful=False) == []
    assert conversation.unanswered_replies == 0
    assert lifecycle.after_reply(conversation, SETTINGS, answered=False, doubtful=True) == []
    events = lifecycle.after_reply(conversation, SETTINGS, answered=False, doubtful=False)
    assert [e.type for e in events] == ["conversation.status_changed", "conversation.handoff_requested"]
    assert conversation.status == ConversationStatus.OPEN and conversation.handoff_reason == "unanswered"
    assert conversation.handed_off_at is not None


def test_a_doubtful_reply_hands_over_only_where_the_bot_says_so():
    stays = bot_conversation()
    assert lifecycle.after_reply(stays, SETTINGS, answered=True, doubtful=True) == []
    assert stays.status == ConversationStatus.BOT
    careful = HandoffSettings(message="passing you on", max_unanswered=2, on_doubt=True)
    goes = bot_conversation()
    events = lifecycle.after_reply(goes, careful, answered=True, doubtful=True)
    assert [e.type for e in events] == ["conversation.status_changed", "conversation.handoff_requested"]
    assert goes.handoff_reason == "doubt"
