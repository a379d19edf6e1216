"""The widget API: start a conversation, send a message (reply over SSE), read the history."""

import json
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Request, status
from sse_starlette import EventSourceResponse

from backend.api.inputs import ConversationId, JsonRoute
from backend.api.rate_limits import enforce
from backend.conversations.models import Conversation
from backend.conversations.schemas import (
    ConversationStarted,
    ErrorBody,
    History,
    MessageOut,
    SendMessage,
    StartConversation,
)
from backend.conversations.service import ChatService
from backend.errors import Unauthorized

ERRORS = {code: {"model": ErrorBody} for code in (401, 403, 404, 409, 413, 422, 429, 503)}


async def limit_by_address(request: Request) -> None:
    """Every widget request counts against its client address."""
    address = request.client.host if request.client else "unknown"
    await enforce(
        request.app.state.rate_limiter,
        f"address:{address}",
        what="requests from this address",
        limit=request.app.state.settings.rate_limit_requests_per_address,
        window_s=60,
    )


router = APIRouter(
    prefix="/api/v1/widget", tags=["widget"], dependencies=[Depends(limit_by_address)], route_class=JsonRoute
)


def chat_service(request: Request) -> ChatService:
    return request.app.state.chat


Chat = Annotated[ChatService, Depends(chat_service)]


async def customer_conversation(
    conversation_id: ConversationId,
    chat: Chat,
    authorization: Annotated[str | None, Header(description="Bearer <customer_token>")] = None,
) -> Conversation:
    if not authorization or not authorization.lower().startswith("bearer "):
        raise Unauthorized("send the conversation's customer token as 'Authorization: Bearer <token>'")
    return await chat.authorize(conversation_id, authorization[7:].strip())


CustomerConversation = Annotated[Conversation, Depends(customer_conversation)]


@router.post("/conversations", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def start_conversation(body: StartConversation, chat: Chat) -> ConversationStarted:
    """Start a conversation with a bot; returns its greeting and the customer's secret token."""
    started = await chat.start_conversation(body.bot, body.context)
    return ConversationStarted(
        conversation_id=started.conversation.id,
        customer_token=started.customer_token,
        bot=body.bot,
        greeting=started.greeting,
    )


@router.post(
    "/conversations/{conversation_id}/messages",
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "Server-sent events: `accepted`, `token`..., then `done` or `error`.",
        },
        **ERRORS,
    },
)
async def send_message(body: SendMessage, conversation: CustomerConversation, chat: Chat, request: Request):
    """Send the customer's message; the reply streams back token by token over SSE.

    The message is stored before the reply starts, and the reply is stored even if the
    client disconnects.
    """
    await enforce(
        request.app.state.rate_limiter,
        f"conversation:{conversation.id}",
        what="messages in this conversation",
        limit=chat.settings.rate_limit_messages_per_conversation,
        window_s=60,
    )
    turn = await chat.send_message(conversation.id, body.text)

    async def events():
        async for kind, data in turn.events():
            yield {"event": kind, "data": json.dumps(data, ensure_ascii=False)}

    return EventSourceResponse(events(), ping=15)


@router.get("/conversations/{conversation_id}/messages", responses=ERRORS)
async def history(conversation: CustomerConversation, chat: Chat) -> History:
    """The conversation so far: the greeting, then every message with its status and timings."""
    messages = await chat.messages(conversation.id)
    return History(
        conversation_id=conversation.id,
        bot=conversation.bot.slug,
        status=conversation.status.value,
        greeting=await chat.greeting_of(conversation),
        messages=[MessageOut.model_validate(m) for m in messages],
    )
