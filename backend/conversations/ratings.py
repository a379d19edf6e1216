"""A customer's rating of their resolved conversation: 1 to 5 stars and an optional comment.

One rating per conversation; a second one is refused (409), so the figures count each
conversation once and an event announces each rating once.
"""

from sqlalchemy.exc import IntegrityError

from backend.conversations.models import Conversation, ConversationRating, ConversationStatus
from backend.errors import Conflict
from backend.events.bus import CONVERSATION_RATED, Event
from backend.unit_of_work import UnitOfWork

MIN_SCORE, MAX_SCORE = 1, 5
MAX_COMMENT_CHARS = 1000


async def rating_of(work: UnitOfWork, conversation: Conversation) -> ConversationRating | None:
    return await work.db.get(ConversationRating, conversation.id)


def conversation_links(conversation_id: str, public_url: str | None) -> dict[str, str]:
    """Where staff open the conversation: the console (on the server's public address when it
    is set, else a path) and the agents' API (a path)."""
    return {
        "console_url": f"{public_url or ''}/console#conversation={conversation_id}",
        "api_path": f"/api/v1/conversations/{conversation_id}",
    }


async def rate_conversation(
    work: UnitOfWork,
    conversation: Conversation,
    score: int,
    comment: str | None,
    *,
    public_url: str | None = None,
) -> ConversationRating:
    """Stores the rating of `conversation` (its own customer's: the route checked the token).
    Its event links to the conversation, for whoever reads a poor one."""
    assert MIN_SCORE <= score <= MAX_SCORE, score  # bounded by the request body's schema
    if conversation.status != ConversationStatus.RESOLVED:
        raise Conflict(f"only a resolved conversation can be rated; this one is {conversation.status.value}")
    if await rating_of(work, conversation) is not None:
        raise Conflict("this conversation has been rated already; a conversation is rated once")
    rating = ConversationRating(conversation_id=conversation.id, score=score, comment=comment or None)
    work.db.add(rating)
    try:
        await work.db.flush()
    except IntegrityError:  # rated at the same moment by another request
        raise Conflict("this conversation has been rated already; a conversation is rated once") from None
    work.emit(
        Event(
            CONVERSATION_RATED,
            conversation.id,
            {
                "bot": conversation.bot.slug,
                "score": score,
                "comment": rating.comment,
                "conversation_id": conversation.id,
                **conversation_links(conversation.id, public_url),
            },
        )
    )
    return rating
