"""A reply's outcome written down, each in a unit of work of its own (the request has ended):
the generated reply with what the checks found, a handover instead of it, or a failure."""

import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from backend.conversations import lifecycle
from backend.conversations import repository as repo
from backend.conversations.messages import message_event
from backend.conversations.models import HANDOVER, ConversationStatus, MessageStatus
from backend.engine.interface import GenerationResult
from backend.turns.checks import FinishedReply, Review
from backend.turns.decisions import AcceptedMessage, HandOver
from backend.unit_of_work import UnitOfWork

logger = logging.getLogger(__name__)

NewWork = Callable[[], AbstractAsyncContextManager[UnitOfWork]]


async def store_reply(
    new_work: NewWork,
    message: AcceptedMessage,
    reply_id: int,
    result: GenerationResult,
    reply: FinishedReply,
    review: Review,
    sources: list[dict[str, str | None]] | None = None,
    withheld: str | None = None,
) -> ConversationStatus:
    """The reply, its cost, its sources and its doubts; then what it leads to (a handover, a count)."""
    interrupted = result.finish_reason == "interrupted"
    async with new_work() as work:
        conversation = await repo.require_conversation(work.db, message.conversation.id)
        stored = await repo.get_message(work.db, reply_id)
        stored.status = MessageStatus.INTERRUPTED if interrupted else MessageStatus.COMPLETE
        stored.text, stored.token_ids = reply.text, reply.token_ids
        stored.prompt_tokens, stored.cached_tokens = result.prompt_tokens, result.cached_tokens
        stored.completion_tokens = len(result.token_ids)
        if not interrupted:
            stored.ttft_ms, stored.total_ms = result.ttft_s * 1000, result.total_s * 1000
        stored.finish_reason = result.finish_reason
        stored.doubt = "; ".join(review.doubts) or None
        stored.sources = sources or None
        stored.withheld_text = withheld
        work.emit(message_event(stored))
        if not interrupted and conversation.status == ConversationStatus.BOT:
            handoff = message.bot.definition.handoff
            work.emit(*lifecycle.after_reply(conversation, handoff, review.answered, bool(review.doubts)))
        return conversation.status


async def store_hand_over(
    new_work: NewWork, message: AcceptedMessage, reply_id: int, hand_over: HandOver, reply_ids: list[int]
) -> ConversationStatus:
    """The reply row becomes the handover message, and the conversation goes to a human."""
    async with new_work() as work:
        conversation = await repo.require_conversation(work.db, message.conversation.id)
        stored = await repo.get_message(work.db, reply_id)
        stored.status, stored.finish_reason = MessageStatus.COMPLETE, HANDOVER
        stored.text, stored.token_ids = hand_over.text, reply_ids
        work.emit(message_event(stored), *lifecycle.hand_off(conversation, hand_over.reason))
        return conversation.status


async def mark_failed(new_work: NewWork, message_id: int, error: str) -> None:
    try:
        async with new_work() as work:
            stored = await repo.get_message(work.db, message_id)
            stored.status = MessageStatus.FAILED
            stored.error = error[:2000]
    except Exception:
        logger.exception("could not mark reply %s as failed", message_id)
