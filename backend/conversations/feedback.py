"""A customer's thumbs up or down on a bot reply: set, changed or taken back, and announced."""

from backend.conversations import repository as repo
from backend.conversations.models import (
    HANDOVER,
    Conversation,
    Message,
    MessageRole,
    MessageStatus,
    ReplyFeedback,
)
from backend.db import utcnow
from backend.errors import Conflict, InvalidInput, NotFound
from backend.events.bus import MESSAGE_FEEDBACK, Event
from backend.unit_of_work import UnitOfWork

WRITTEN_BY = {MessageRole.USER: "the customer", MessageRole.AGENT: "an agent"}


async def rate_reply(
    work: UnitOfWork, conversation: Conversation, message_id: int, feedback: ReplyFeedback | None
) -> Message:
    """Sets the customer's feedback on one of the bot's complete replies in their conversation;
    None takes it back. Giving the same feedback again changes nothing and announces nothing."""
    # Locked so that two quick clicks announce what each one really changed.
    message = await repo.lock_message(work.db, conversation.id, message_id)
    if message is None:  # another conversation's message is as unknown here as a missing one
        raise NotFound(f"no message {message_id} in this conversation")
    if message.role != MessageRole.ASSISTANT:
        author = WRITTEN_BY[message.role]
        raise InvalidInput(f"only the bot's replies take feedback; message {message_id} is by {author}")
    if message.status != MessageStatus.COMPLETE:
        status = message.status.value
        raise Conflict(f"only a complete reply takes feedback; message {message_id} is {status}")
    if message.finish_reason == HANDOVER:
        raise InvalidInput(f"message {message_id} hands over to a person; no answer, so no feedback")
    if message.feedback == feedback:
        return message
    previous = message.feedback
    message.feedback = feedback
    message.feedback_at = utcnow()
    await work.db.flush()
    work.emit(feedback_event(message, previous))
    return message


def feedback_event(message: Message, previous: ReplyFeedback | None) -> Event:
    return Event(
        MESSAGE_FEEDBACK,
        message.conversation_id,
        {
            "message_id": message.id,
            "seq": message.seq,
            "feedback": message.feedback.value if message.feedback else None,
            "previous": previous.value if previous else None,
        },
    )
