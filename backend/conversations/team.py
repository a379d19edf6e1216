"""The team behind a bot once the bot steps aside: who has the conversation, whether anyone is
there (the bot's office hours) and when they will be, and the e-mail address a customer leaves
while nobody is. The customer's side reads it; nothing of it reaches the model."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from backend.agents.models import Agent
from backend.bots.registry import BotRegistry
from backend.conversations.models import Conversation, ConversationStatus
from backend.db import utcnow
from backend.errors import ServiceUnavailable
from backend.events.bus import CONTACT_GIVEN, Event
from backend.prompting.office_hours import opening_text
from backend.unit_of_work import UnitOfWork


@dataclass(frozen=True)
class TeamState:
    status: ConversationStatus
    language: str  # the bot's: the customer is told in it
    assignee_name: str | None  # the agent who has the conversation, if one does
    open_now: bool  # within the bot's office hours (always, without them)
    next_opening: datetime | None  # when the team is next there, in its time zone; None while open
    next_opening_text: str | None  # the same, for the customer, in the bot's language
    contact_email: str | None  # the address the customer left (unverified)


class TeamDesk:
    def __init__(self, *, bots: BotRegistry, clock: Callable[[], datetime] = utcnow):
        self.bots = bots
        self.clock = clock

    async def state(self, work: UnitOfWork, conversation: Conversation) -> TeamState:
        live = self.bots.get(conversation.bot.slug)
        if live is None:
            raise ServiceUnavailable(f"bot {conversation.bot.slug!r} is not loaded in this app")
        bot = live.definition
        hours, now = bot.office_hours, self.clock()
        opening = None if hours is None or hours.is_open(now) else hours.next_opening(now)
        assignee = await work.db.get(Agent, conversation.assignee_id) if conversation.assignee_id else None
        return TeamState(
            status=conversation.status,
            language=bot.language,
            assignee_name=assignee.name if assignee else None,
            open_now=opening is None,
            next_opening=opening,
            next_opening_text=opening_text(opening, bot.language) if opening else None,
            contact_email=conversation.contact_email,
        )

    async def leave_email(self, work: UnitOfWork, conversation: Conversation, email: str) -> TeamState:
        """The customer's address for the team, stored as given (unverified) beside the shop's
        identity, which it never replaces; given again, the newer one counts."""
        conversation.contact_email = email
        conversation.contact_email_at = utcnow()
        await work.db.flush()
        work.emit(Event(CONTACT_GIVEN, conversation.id, {"contact_email": email}))
        return await self.state(work, conversation)
