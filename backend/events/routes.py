"""Live events over SSE: every event for agents; one conversation's visible ones for its customer."""

from typing import Annotated

from fastapi import APIRouter, Query, Request
from sse_starlette import EventSourceResponse

from backend.agents.auth import CurrentAgent
from backend.conversations.models import MessageRole
from backend.conversations.routes import CustomerConversation
from backend.conversations.schemas import ErrorBody
from backend.events.bus import EVENT_TYPES, MESSAGE_CREATED, STATUS_CHANGED, Event

router = APIRouter(tags=["events"])
SSE = {200: {"content": {"text/event-stream": {}}}, **{c: {"model": ErrorBody} for c in (401, 403, 404, 422)}}


async def _stream(request: Request, keep) -> EventSourceResponse:
    # Subscribed before the response starts: a client that sees the stream open misses nothing.
    subscription = await request.app.state.events.subscribe()

    async def events():
        async for event in subscription:
            if keep(event):
                yield {"event": event.type, "id": event.id, "data": event.to_json()}

    return EventSourceResponse(events(), ping=15)


@router.get("/api/v1/events", responses=SSE)
async def agent_events(
    request: Request,
    _agent: CurrentAgent,
    types: Annotated[list[str] | None, Query(description=f"Only these: {', '.join(EVENT_TYPES)}")] = None,
):
    """Every conversation's events, from whichever app process they happen in."""
    wanted = set(types or EVENT_TYPES)
    return await _stream(request, lambda event: event.type in wanted)


def _customer_sees(conversation_id: str, event: Event) -> bool:
    if event.conversation_id != conversation_id:
        return False
    if event.type == MESSAGE_CREATED:
        # Replies by a human agent arrive here; the customer's own and the bot's stream with their turn.
        return event.data.get("role") == MessageRole.AGENT
    return event.type == STATUS_CHANGED


@router.get("/api/v1/widget/conversations/{conversation_id}/events", responses=SSE, tags=["widget"])
async def customer_events(request: Request, conversation: CustomerConversation):
    """This conversation's agent replies and status changes, live."""
    return await _stream(request, lambda event: _customer_sees(conversation.id, event))
