"""The widget API: start a conversation, send a message (reply over SSE), read the history,
rate the bot's replies and the resolved conversation, follow an agent's replies live."""

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Request, Response, status
from sse_starlette import EventSourceResponse

from backend.api.deps import Work, provided
from backend.api.errors import error_responses
from backend.api.inputs import ConversationId, JsonRoute, RowIdPath
from backend.api.rate_limits import RateLimits
from backend.config import Settings
from backend.conversations.customers import CustomerConversations
from backend.conversations.feedback import rate_reply
from backend.conversations.models import Conversation, MessageRole
from backend.conversations.ratings import rate_conversation, rating_of
from backend.conversations.repository import author_names
from backend.conversations.schemas import MessageOut
from backend.conversations.team import TeamDesk, TeamState
from backend.embedding.origins import AllowedOrigins
from backend.errors import AppError, Unauthorized
from backend.events.bus import MESSAGE_CREATED, STATUS_CHANGED, Event, EventBus
from backend.turns.turn import ChatTurns
from backend.widget.schemas import (
    ContactEmailIn,
    ConversationStarted,
    FeedbackIn,
    FeedbackOut,
    History,
    RatingIn,
    RatingOut,
    RatingState,
    SendMessage,
    StartConversation,
    TeamOut,
    WidgetConfig,
)

ERRORS = error_responses(401, 403, 404, 409, 410, 413, 422, 429, 503)
SSE = {200: {"content": {"text/event-stream": {}}}, **error_responses(401, 403, 404, 410, 422)}

Limits = Annotated[RateLimits, Depends(provided(RateLimits))]
Customers = Annotated[CustomerConversations, Depends(provided(CustomerConversations))]
Turns = Annotated[ChatTurns, Depends(provided(ChatTurns))]
Bus = Annotated[EventBus, Depends(provided(EventBus))]
Team = Annotated[TeamDesk, Depends(provided(TeamDesk))]


async def limit_by_address(request: Request, limits: Limits) -> None:
    """Every widget request counts against its client address."""
    await limits.request_from(request.client.host if request.client else "unknown")


router = APIRouter(
    prefix="/api/v1/widget", tags=["widget"], dependencies=[Depends(limit_by_address)], route_class=JsonRoute
)


class ConversationDeleted(AppError):
    """The conversation was erased on request: the widget tells its customer so."""

    status_code, code = 410, "conversation_deleted"


async def customer_conversation(
    conversation_id: ConversationId,
    customers: Customers,
    work: Work,
    authorization: Annotated[str | None, Header(description="Bearer <customer_token>")] = None,
) -> Conversation:
    if not authorization or not authorization.lower().startswith("bearer "):
        raise Unauthorized("send the conversation's customer token as 'Authorization: Bearer <token>'")
    conversation = await customers.authorize(work, conversation_id, authorization[7:].strip())
    if conversation.erased_at is not None:
        raise ConversationDeleted(
            "this conversation was deleted: its messages and the customer's details were erased on "
            "request; start a new conversation"
        )
    return conversation


CustomerConversation = Annotated[Conversation, Depends(customer_conversation)]


@router.get("/config", responses=error_responses(429))
async def widget_config(
    request: Request,
    response: Response,
    settings: Annotated[Settings, Depends(provided(Settings))],
    origins: Annotated[AllowedOrigins, Depends(provided(AllowedOrigins))],
) -> WidgetConfig:
    """The widget's limits, and whether the calling page's origin may use the widget API. Any
    origin may read this, so that a widget on a page that is not allowed can say so."""
    response.headers["Access-Control-Allow-Origin"] = "*"
    origin = request.headers.get("origin")
    allowed = origin is None or origin == f"{request.url.scheme}://{request.url.netloc}"
    return WidgetConfig(
        max_message_chars=settings.max_message_chars,
        origin=origin,
        origin_allowed=allowed or await origins.allows(origin),
    )


@router.post("/conversations", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def start_conversation(
    body: StartConversation, customers: Customers, work: Work
) -> ConversationStarted:
    """Start a conversation with a bot; returns its greeting and the customer's secret token.

    An `identity` signed by the shop's server is stored as verified; unsigned, as unverified;
    a signature that does not match is refused with a 403."""
    started = await customers.start(work, body.bot, body.context, body.identity)
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
async def send_message(
    body: SendMessage, conversation: CustomerConversation, turns: Turns, limits: Limits, work: Work
) -> EventSourceResponse:
    """Send the customer's message; the reply streams back token by token over SSE.

    The message is stored before the reply starts, and the reply is stored even if the
    client disconnects.
    """
    await limits.message_to(conversation.id)
    turn = await turns.take(work, conversation.id, body.text)
    return EventSourceResponse((event.sse() async for event in turn.events()), ping=15)


@router.get("/conversations/{conversation_id}/messages", responses=ERRORS)
async def history(conversation: CustomerConversation, customers: Customers, work: Work) -> History:
    """The conversation so far: the greeting, then every message with its status and timings."""
    greeting, messages = await customers.history(work, conversation)
    names = await author_names(work.db, messages)
    return History(
        conversation_id=conversation.id,
        bot=conversation.bot.slug,
        status=conversation.status.value,
        greeting=greeting,
        messages=[MessageOut.of(m, names) for m in messages],
    )


@router.put("/conversations/{conversation_id}/messages/{message_id}/feedback", responses=ERRORS)
async def give_feedback(
    message_id: RowIdPath, body: FeedbackIn, conversation: CustomerConversation, work: Work
) -> FeedbackOut:
    """Thumbs up or down on one of the bot's complete replies in this conversation; null takes it
    back. Agents' streams and webhooks get a `message.feedback` event when it changes."""
    message = await rate_reply(work, conversation, message_id, body.feedback)
    return FeedbackOut(message_id=message.id, feedback=message.feedback, feedback_at=message.feedback_at)


@router.get("/conversations/{conversation_id}/rating", responses=ERRORS)
async def rating(conversation: CustomerConversation, work: Work) -> RatingState:
    """Whether the conversation can be rated (it is resolved) and the rating given, if any."""
    given = await rating_of(work, conversation)
    return RatingState(
        conversation_id=conversation.id,
        status=conversation.status.value,
        language=conversation.bot.language,
        rating=RatingOut.model_validate(given) if given else None,
    )


@router.post("/conversations/{conversation_id}/rating", status_code=status.HTTP_201_CREATED, responses=ERRORS)
async def rate(
    body: RatingIn,
    conversation: CustomerConversation,
    work: Work,
    settings: Annotated[Settings, Depends(provided(Settings))],
) -> RatingOut:
    """Rate the resolved conversation, 1 to 5, with an optional comment: once (a second rating is
    409, as is one before the conversation is resolved). Agents' streams and webhooks get a
    `conversation.rated` event."""
    given = await rate_conversation(
        work, conversation, body.score, body.comment, public_url=settings.public_url
    )
    return RatingOut.model_validate(given)


def team_out(state: TeamState) -> TeamOut:
    return TeamOut(**{**vars(state), "status": state.status.value})


@router.get("/conversations/{conversation_id}/team", responses=ERRORS)
async def team(conversation: CustomerConversation, desk: Team, work: Work) -> TeamOut:
    """Who answers now that the bot has stepped aside (or would): the agent's name once one has
    the conversation, whether the team is there (the bot's office hours) and when it next is."""
    return team_out(await desk.state(work, conversation))


@router.put("/conversations/{conversation_id}/contact-email", responses=ERRORS)
async def leave_contact_email(
    body: ContactEmailIn, conversation: CustomerConversation, desk: Team, work: Work
) -> TeamOut:
    """An e-mail address for the team to answer at, while it is away: stored as given by the
    customer (unverified), beside the identity the shop's server passed, never over it.
    A malformed address is refused with a 422."""
    return team_out(await desk.leave_email(work, conversation, str(body.email)))


def customer_sees(conversation_id: str, event: Event) -> bool:
    if event.conversation_id != conversation_id:
        return False
    if event.type == MESSAGE_CREATED:
        # Replies arrive here: an agent's, and the bot's (those of the customer's own turn also
        # stream with it; the widget shows each once), e.g. its answer when it takes back over.
        return event.data.get("role") in (MessageRole.AGENT, MessageRole.ASSISTANT)
    return event.type == STATUS_CHANGED


@router.get("/conversations/{conversation_id}/events", responses=SSE)
async def customer_events(conversation: CustomerConversation, bus: Bus) -> EventSourceResponse:
    """This conversation's agent replies and status changes, live."""
    # Subscribed before the response starts: a client that sees the stream open misses nothing.
    subscription = await bus.subscribe()
    conversation_id = conversation.id
    live = (event.sse() async for event in subscription if customer_sees(conversation_id, event))
    return EventSourceResponse(live, ping=15)
