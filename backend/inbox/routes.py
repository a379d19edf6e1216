"""The agents' REST API over conversations."""

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, status

from backend.agents.auth import CurrentAgent
from backend.api.inputs import ConversationId, JsonRoute, Page, RowIdQuery, StorableText
from backend.conversations.models import ConversationStatus
from backend.conversations.schemas import ErrorBody, MessageOut
from backend.inbox.repository import ConversationFilter
from backend.inbox.schemas import (
    AgentReply,
    Assignment,
    ConversationPage,
    ConversationSummary,
    NoteIn,
    NoteOut,
    Transcript,
)
from backend.inbox.service import InboxService

router = APIRouter(prefix="/api/v1/conversations", tags=["agents: conversations"], route_class=JsonRoute)
ERRORS = {code: {"model": ErrorBody} for code in (401, 403, 404, 409, 413, 422)}


def inbox_service(request: Request) -> InboxService:
    return request.app.state.inbox


Inbox = Annotated[InboxService, Depends(inbox_service)]


def _identity(conversation) -> dict:
    """The fields every view of a conversation starts with."""
    return {
        "id": conversation.id,
        "bot": conversation.bot.slug,
        "status": conversation.status.value,
        "assignee_id": conversation.assignee_id,
        "handoff_reason": conversation.handoff_reason.value if conversation.handoff_reason else None,
    }


def summary(conversation, last) -> ConversationSummary:
    return ConversationSummary(
        **_identity(conversation),
        message_count=conversation.message_count,
        last_message=last.text if last else None,
        created_at=conversation.created_at,
        updated_at=conversation.updated_at,
    )


@router.get("", responses=ERRORS)
async def list_conversations(
    _agent: CurrentAgent,
    inbox: Inbox,
    status_: Annotated[ConversationStatus | None, Query(alias="status")] = None,
    bot: Annotated[StorableText | None, Query(max_length=64)] = None,
    assignee_id: RowIdQuery = None,
    unassigned: bool = False,
    q: Annotated[
        StorableText | None, Query(max_length=200, description="Text searched in the messages.")
    ] = None,
    page: Page = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 25,
) -> ConversationPage:
    """Conversations, newest activity first, filtered by status, bot, assignee and message text."""
    f = ConversationFilter(status=status_, bot=bot, assignee_id=assignee_id, unassigned=unassigned, text=q)
    rows, total, last = await inbox.page(f, page=page, page_size=page_size)
    return ConversationPage(
        items=[summary(c, last.get(c.id)) for c in rows], total=total, page=page, page_size=page_size
    )


@router.get("/{conversation_id}", responses=ERRORS)
async def transcript(conversation_id: ConversationId, _agent: CurrentAgent, inbox: Inbox) -> Transcript:
    """The whole conversation: each message with its timings and cached tokens, and the private notes."""
    conversation, messages, notes, greeting = await inbox.transcript(conversation_id)
    return Transcript(
        **_identity(conversation),
        context=conversation.context,
        greeting=greeting,
        created_at=conversation.created_at,
        handed_off_at=conversation.handed_off_at,
        first_human_reply_at=conversation.first_human_reply_at,
        resolved_at=conversation.resolved_at,
        messages=[MessageOut.model_validate(m) for m in messages],
        notes=[NoteOut.model_validate(n) for n in notes],
    )


@router.post("/{conversation_id}/messages", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def reply(
    conversation_id: ConversationId, body: AgentReply, agent: CurrentAgent, inbox: Inbox
) -> MessageOut:
    """Reply to the customer (takes the conversation over if the bot had it). `/shortcode` sends a
    canned response."""
    return MessageOut.model_validate(await inbox.reply(conversation_id, agent, body.text))


@router.post("/{conversation_id}/notes", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def add_note(
    conversation_id: ConversationId, body: NoteIn, agent: CurrentAgent, inbox: Inbox
) -> NoteOut:
    """A private note: never shown to the customer, never given to the model."""
    return NoteOut.model_validate(await inbox.add_note(conversation_id, agent, body.text))


@router.post("/{conversation_id}/take-over", responses=ERRORS)
async def take_over(
    conversation_id: ConversationId, agent: CurrentAgent, inbox: Inbox
) -> ConversationSummary:
    """Take the conversation from the bot: it stops replying (mid-reply too) and it is assigned to you."""
    return summary(await inbox.take_over(conversation_id, agent), None)


@router.post("/{conversation_id}/assign", responses=ERRORS)
async def assign(
    conversation_id: ConversationId, body: Assignment, _agent: CurrentAgent, inbox: Inbox
) -> ConversationSummary:
    """Assign to an agent (the bot stops replying), or unassign with `agent_id: null`."""
    return summary(await inbox.assign(conversation_id, body.agent_id), None)


@router.post("/{conversation_id}/hand-back", responses=ERRORS)
async def hand_back(
    conversation_id: ConversationId, _agent: CurrentAgent, inbox: Inbox
) -> ConversationSummary:
    """Give the conversation back to the bot, with everything said meanwhile in its context."""
    return summary(await inbox.hand_back(conversation_id), None)


@router.post("/{conversation_id}/resolve", responses=ERRORS)
async def resolve(conversation_id: ConversationId, _agent: CurrentAgent, inbox: Inbox) -> ConversationSummary:
    return summary(await inbox.resolve(conversation_id), None)


@router.post("/{conversation_id}/reopen", responses=ERRORS)
async def reopen(conversation_id: ConversationId, _agent: CurrentAgent, inbox: Inbox) -> ConversationSummary:
    return summary(await inbox.reopen(conversation_id), None)
