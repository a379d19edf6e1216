"""Building messages: their text checked, their place in the conversation, their event."""

from backend.conversations.models import Conversation, Message, MessageRole, MessageStatus
from backend.errors import InvalidInput, PayloadTooLarge
from backend.events.bus import MESSAGE_CREATED, Event

MIN_REPLY_TOKENS = 16  # room a reply needs at least: below this it is cut off before it says anything


def message_text(text: str, max_chars: int) -> str:
    """What a customer or an agent sends, trimmed; 422 if empty, 413 if too long."""
    text = text.strip()
    if not text:
        raise InvalidInput("the message is empty")
    if len(text) > max_chars:
        raise PayloadTooLarge(f"the message has {len(text)} characters; the limit is {max_chars}")
    return text


def append_message(
    conversation: Conversation,
    role: MessageRole,
    text: str,
    token_ids: list[int],
    *,
    status: MessageStatus = MessageStatus.COMPLETE,
    author_agent_id: int | None = None,
) -> Message:
    """The conversation's next message; the caller holds its turn lock and adds it to the session."""
    conversation.message_count += 1
    return Message(
        conversation_id=conversation.id,
        seq=conversation.message_count,
        role=role,
        status=status,
        text=text,
        token_ids=token_ids,
        author_agent_id=author_agent_id,
    )


def message_event(message: Message, *, author_name: str | None = None) -> Event:
    """`message.created`; an agent's message carries the agent's name, shown to the customer."""
    return Event(
        MESSAGE_CREATED,
        message.conversation_id,
        {
            "message_id": message.id,
            "seq": message.seq,
            "role": message.role.value,
            "text": message.text,
            "status": message.status.value,
            "finish_reason": message.finish_reason,
            "author_agent_id": message.author_agent_id,
            "author_name": author_name,
            "doubt": message.doubt,
            "sources": message.sources or [],
        },
    )
