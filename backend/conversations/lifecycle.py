"""Status changes of a conversation. Each changes the row and returns the events to publish.

bot ──(customer asks for a person | unanswered replies | a doubtful reply | agent takes over)──> open
open ──(hand back)──> bot          open | bot ──(resolve)──> resolved
resolved ──(customer writes)──> bot          resolved ──(agent reopens)──> open
"""

from backend.conversations.models import Conversation, ConversationStatus, HandoffReason
from backend.db import utcnow
from backend.errors import Conflict
from backend.events.bus import HANDOFF_REQUESTED, STATUS_CHANGED, Event
from backend.prompting.definitions import HandoffSettings


def _set_status(conversation: Conversation, status: ConversationStatus, **extra: str) -> list[Event]:
    previous = conversation.status
    conversation.status = status
    if previous == status:
        return []
    data = {
        "status": status.value,
        "previous": previous.value,
        "assignee_id": conversation.assignee_id,
        **extra,
    }
    return [Event(STATUS_CHANGED, conversation.id, data)]


def hand_off(conversation: Conversation, reason: HandoffReason) -> list[Event]:
    """The bot steps aside; the conversation waits for a human."""
    if conversation.handed_off_at is None:
        conversation.handed_off_at = utcnow()
        conversation.handoff_reason = reason
    events = _set_status(conversation, ConversationStatus.OPEN, reason=reason.value)
    if reason != HandoffReason.AGENT:
        events.append(Event(HANDOFF_REQUESTED, conversation.id, {"reason": reason.value}))
    return events


def after_reply(
    conversation: Conversation, handoff: HandoffSettings, answered: bool, doubtful: bool
) -> list[Event]:
    """A bot reply was checked: a doubtful one hands over if the bot says so; else count it."""
    if doubtful and handoff.on_doubt:
        return hand_off(conversation, HandoffReason.DOUBT)
    return count_unanswered(conversation, answered, handoff.max_unanswered)


def count_unanswered(conversation: Conversation, answered: bool, max_unanswered: int) -> list[Event]:
    """Replies that did not answer, in a row: at `max_unanswered` a human takes over."""
    if answered:
        conversation.unanswered_replies = 0
        return []
    conversation.unanswered_replies += 1
    if conversation.unanswered_replies >= max_unanswered:
        return hand_off(conversation, HandoffReason.UNANSWERED)
    return []


def take_over(conversation: Conversation, agent_id: int) -> list[Event]:
    if conversation.status == ConversationStatus.RESOLVED:
        raise Conflict("this conversation is resolved; reopen it first")
    conversation.assignee_id = agent_id
    return hand_off(conversation, HandoffReason.AGENT) or _assigned(conversation)


def assign(conversation: Conversation, agent_id: int | None) -> list[Event]:
    """Assigning to a person means a person handles it: the bot stops replying."""
    if agent_id is not None and conversation.status == ConversationStatus.BOT:
        return take_over(conversation, agent_id)
    conversation.assignee_id = agent_id
    return _assigned(conversation)


def _assigned(conversation: Conversation) -> list[Event]:
    data = {
        "status": conversation.status.value,
        "previous": conversation.status.value,
        "assignee_id": conversation.assignee_id,
    }
    return [Event(STATUS_CHANGED, conversation.id, data)]


def hand_back(conversation: Conversation) -> list[Event]:
    if conversation.status != ConversationStatus.OPEN:
        raise Conflict(
            f"only an open conversation can be handed back (this one is {conversation.status.value})"
        )
    conversation.assignee_id = None
    conversation.unanswered_replies = 0
    return _set_status(conversation, ConversationStatus.BOT)


def resolve(conversation: Conversation) -> list[Event]:
    if conversation.status == ConversationStatus.RESOLVED:
        raise Conflict("this conversation is already resolved")
    conversation.resolved_at = utcnow()
    return _set_status(conversation, ConversationStatus.RESOLVED)


def reopen(conversation: Conversation) -> list[Event]:
    """An agent reopens a resolved conversation and keeps it with the humans."""
    if conversation.status != ConversationStatus.RESOLVED:
        raise Conflict(
            f"only a resolved conversation can be reopened (this one is {conversation.status.value})"
        )
    conversation.resolved_at = None
    return _set_status(conversation, ConversationStatus.OPEN)


def reopen_by_customer(conversation: Conversation) -> list[Event]:
    """A customer writing to a resolved conversation starts again with the bot."""
    if conversation.status != ConversationStatus.RESOLVED:
        return []
    conversation.resolved_at = None
    conversation.assignee_id = None
    conversation.unanswered_replies = 0
    return _set_status(conversation, ConversationStatus.BOT)


def record_human_reply(conversation: Conversation) -> None:
    if conversation.first_human_reply_at is None:
        conversation.first_human_reply_at = utcnow()
