"""Building messages and what is said about them (events to agents, the customer's `done`)."""

from typing import Any

from backend.conversations.models import Conversation, ConversationStatus, Message, MessageRole, MessageStatus
from backend.engine.vllm_engine import GenerationResult
from backend.events.bus import MESSAGE_CREATED, Event


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


def message_event(message: Message) -> Event:
    return Event(
        MESSAGE_CREATED,
        message.conversation_id,
        {
            "message_id": message.id,
            "seq": message.seq,
            "role": message.role.value,
            "text": message.text,
            "status": message.status.value,
            "author_agent_id": message.author_agent_id,
        },
    )


def done_event(message_id: int, result: GenerationResult, status: ConversationStatus) -> dict[str, Any]:
    """The last SSE event of a bot reply: what it said and what it cost."""
    return {
        "message_id": message_id,
        "text": result.text,
        "prompt_tokens": result.prompt_tokens,
        "cached_tokens": result.cached_tokens,
        "completion_tokens": len(result.token_ids),
        "ttft_ms": round(result.ttft_s * 1000, 1),
        "total_ms": round(result.total_s * 1000, 1),
        "finish_reason": result.finish_reason,
        "status": status.value,
        "handoff": status != ConversationStatus.BOT,
    }
