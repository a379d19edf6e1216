"""The agents' REST API over conversations, and their live event stream."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query, status
from sse_starlette import EventSourceResponse

from backend.agents.auth import CurrentAgent
from backend.api.deps import Work, provided
from backend.api.errors import error_responses
from backend.api.inputs import ConversationId, JsonRoute, Page, RowIdQuery, StorableText
from backend.conversations.models import Conversation, ConversationRating, ConversationStatus, Message
from backend.conversations.ratings import MAX_SCORE, MIN_SCORE
from backend.conversations.repository import author_names
from backend.conversations.schemas import CustomerOut, MessageOut
from backend.events.bus import EVENT_TYPES, EventBus
from backend.inbox.repository import ConversationFilter
from backend.inbox.schemas import (
    AgentReply,
    Assignment,
    ConversationPage,
    ConversationRatingOut,
    ConversationSummary,
    HandedBack,
    NoteIn,
    NoteOut,
    StaffMessageOut,
    Transcript,
)
from backend.inbox.service import InboxService
from backend.turns.turn import ChatTurns
from backend.unit_of_work import UnitOfWork

router = APIRouter(prefix="/api/v1/conversations", tags=["agents: conversations"], route_class=JsonRoute)
events_router = APIRouter(tags=["events"])
ERRORS = error_responses(401, 403, 404, 409, 413, 422)

Inbox = Annotated[InboxService, Depends(provided(InboxService))]
Turns = Annotated[ChatTurns, Depends(provided(ChatTurns))]


def _identity(conversation: Conversation, rating: ConversationRating | None) -> dict[str, object]:
    """The fields every view of a conversation starts with."""
    return {
        "id": conversation.id,
        "bot": conversation.bot.slug,
        "status": conversation.status.value,
        "assignee_id": conversation.assignee_id,
        "handoff_reason": conversation.handoff_reason.value if conversation.handoff_reason else None,
        "customer": customer(conversation),
        "contact_email": conversation.contact_email,
        "rating": ConversationRatingOut.model_validate(rating) if rating else None,
    }


def customer(conversation: Conversation) -> CustomerOut | None:
    if not (conversation.customer_user_id or conversation.customer_email or conversation.customer_name):
        return None
    return CustomerOut(
        user_id=conversation.customer_user_id,
        email=conversation.customer_email,
        name=conversation.customer_name,
        verified=conversation.identity_verified,
    )


def summary(
    conversation: Conversation, last: Message | None, rating: ConversationRating | None
) -> ConversationSummary:
    return ConversationSummary(
        **_identity(conversation, rating),
        message_count=conversation.message_count,
        last_message=last.text if last else None,
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
    )


@router.get("", responses=ERRORS)
async def list_conversations(
    _agent: CurrentAgent,
    inbox: Inbox,
    work: Work,
    status_: Annotated[ConversationStatus | None, Query(alias="status")] = None,
    bot: Annotated[StorableText | None, Query(max_length=64)] = None,
    assignee_id: RowIdQuery = None,
    unassigned: bool = False,
    q: Annotated[
        StorableText | None,
        Query(
            max_length=200, description="Text searched in the messages and the customer's name and e-mail."
        ),
    ] = None,
    email: Annotated[
        StorableText | None, Query(max_length=320, description="The customer's e-mail, exactly (any case).")
    ] = None,
    rating_at_most: Annotated[
        int | None,
        Query(
            ge=MIN_SCORE,
            le=MAX_SCORE,
            description=f"Only conversations the customer rated, with this score or lower "
            f"({MIN_SCORE} to {MAX_SCORE}; 2 finds the poor ones).",
        ),
    ] = None,
    page: Page = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 25,
) -> ConversationPage:
    """Conversations, newest activity first, filtered by status, bot, assignee, the customer's
    e-mail, their rating and text (in the messages, the customer's name and e-mail)."""
    f = ConversationFilter(
        status=status_,
        bot=bot,
        assignee_id=assignee_id,
        unassigned=unassigned,
        text=q,
        email=email,
        rating_at_most=rating_at_most,
    )
    rows, total, last = await inbox.page(work, f, page=page, page_size=page_size)
    ratings = await inbox.ratings(work, [c.id for c in rows])
    items = [summary(c, last.get(c.id), ratings.get(c.id)) for c in rows]
    return ConversationPage(items=items, total=total, page=page, page_size=page_size)


async def summary_now(
    inbox: InboxService, work: UnitOfWork, conversation: Conversation
) -> ConversationSummary:
    """A conversation as an action left it (no last message: the transcript has them)."""
    ratings = await inbox.ratings(work, [conversation.id])
    return summary(conversation, None, ratings.get(conversation.id))


@router.get("/{conversation_id}", responses=ERRORS)
async def transcript(
    conversation_id: ConversationId, _agent: CurrentAgent, inbox: Inbox, work: Work
) -> Transcript:
    """The whole conversation: each message with its timings and cached tokens, and the private notes."""
    conversation, messages, notes, greeting = await inbox.transcript(work, conversation_id)
    names = await author_names(work.db, messages)
    ratings = await inbox.ratings(work, [conversation.id])
    return Transcript(
        **_identity(conversation, ratings.get(conversation.id)),
        context=conversation.context,
        greeting=greeting,
        created_at=conversation.created_at,
        handed_off_at=conversation.handed_off_at,
        first_human_reply_at=conversation.first_human_reply_at,
        resolved_at=conversation.resolved_at,
        messages=[StaffMessageOut.of(m, names) for m in messages],
        notes=[NoteOut.model_validate(n) for n in notes],
    )


@router.post("/{conversation_id}/messages", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def reply(
    conversation_id: ConversationId, body: AgentReply, agent: CurrentAgent, inbox: Inbox, work: Work
) -> MessageOut:
    """Reply to the customer (takes the conversation over if the bot had it). `/shortcode` sends a
    canned response."""
    return MessageOut.of(await inbox.reply(work, conversation_id, agent, body.text), {agent.id: agent.name})


@router.post("/{conversation_id}/notes", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def add_note(
    conversation_id: ConversationId, body: NoteIn, agent: CurrentAgent, inbox: Inbox, work: Work
) -> NoteOut:
    """A private note: never shown to the customer, never given to the model. Other agents'
    consoles get a `note.created` event."""
    return NoteOut.model_validate(await inbox.add_note(work, conversation_id, agent, body.text))


@router.post("/{conversation_id}/take-over", responses=ERRORS)
async def take_over(
    conversation_id: ConversationId, agent: CurrentAgent, inbox: Inbox, work: Work
) -> ConversationSummary:
    """Take the conversation from the bot: it stops replying (mid-reply too) and it is assigned to you."""
    return await summary_now(inbox, work, await inbox.take_over(work, conversation_id, agent))


@router.post("/{conversation_id}/assign", responses=ERRORS)
async def assign(
    conversation_id: ConversationId, body: Assignment, agent: CurrentAgent, inbox: Inbox, work: Work
) -> ConversationSummary:
    """Assign to an agent (the bot stops replying), or unassign with `agent_id: null`."""
    changed = await inbox.assign(work, conversation_id, body.agent_id, by=agent)
    return await summary_now(inbox, work, changed)


@router.post("/{conversation_id}/hand-back", responses=ERRORS)
async def hand_back(
    conversation_id: ConversationId, _agent: CurrentAgent, inbox: Inbox, turns: Turns, work: Work
) -> HandedBack:
    """Give the conversation back to the bot, with everything said meanwhile in its context.

    If the customer wrote after the last reply, the bot answers the last of those messages
    (`answering_message_id`); if it cannot (no engine, say), `unanswered_reason` says why and
    the messages are still yours to answer."""
    conversation = await inbox.hand_back(work, conversation_id, warm=False)
    answer = await turns.answer_waiting(work, conversation_id)
    if answer.answering_message_id is None:  # else the answer's own prompt warms the context
        inbox.warm_once_stored(work, conversation)
    return HandedBack(
        **(await summary_now(inbox, work, conversation)).model_dump(),
        waiting_messages=answer.waiting,
        answering_message_id=answer.answering_message_id,
        unanswered_reason=answer.unanswered_reason,
    )


@router.post("/{conversation_id}/resolve", responses=ERRORS)
async def resolve(
    conversation_id: ConversationId, _agent: CurrentAgent, inbox: Inbox, work: Work
) -> ConversationSummary:
    return await summary_now(inbox, work, await inbox.resolve(work, conversation_id))


@router.post("/{conversation_id}/reopen", responses=ERRORS)
async def reopen(
    conversation_id: ConversationId, _agent: CurrentAgent, inbox: Inbox, work: Work
) -> ConversationSummary:
    return await summary_now(inbox, work, await inbox.reopen(work, conversation_id))


@events_router.get(
    "/api/v1/events",
    responses={200: {"content": {"text/event-stream": {}}}, **error_responses(401, 403, 422)},
)
async def agent_events(
    _agent: CurrentAgent,
    bus: Annotated[EventBus, Depends(provided(EventBus))],
    types: Annotated[list[str] | None, Query(description=f"Only these: {', '.join(EVENT_TYPES)}")] = None,
) -> EventSourceResponse:
    """Every conversation's events, from whichever app process they happen in."""
    wanted = set(types or EVENT_TYPES)
    # Subscribed before the response starts: a client that sees the stream open misses nothing.
    subscription = await bus.subscribe()
    return EventSourceResponse((event.sse() async for event in subscription if event.type in wanted), ping=15)
