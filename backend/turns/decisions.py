"""The turn's decision stages: who answers a customer's message, the bot or a person.

A decision looks at the accepted message in the request and either settles the turn (no
bot reply) or passes (None); the first that settles wins, and if none does, the bot
replies. A gate asks the model about the message while the reply starts: if one says hand
over, the reply is dropped before the customer sees any of it. Checks of the finished reply
are in `reply_checks.py`. To add one, write it here and list it where the app builds the turn.
"""

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from backend.bots.registry import NO_KNOWLEDGE, LiveBot, VersionKnowledge
from backend.conversations.models import Conversation, ConversationStatus, HandoffReason, Message
from backend.engine.interface import Engine
from backend.prompting.judge_prompts import format_item
from backend.turns.events import TurnEvent, Waiting
from backend.unit_of_work import UnitOfWork


@dataclass(frozen=True)
class AcceptedMessage:
    """A customer message, stored, with what the later stages of its turn read."""

    conversation: Conversation
    bot: LiveBot
    user: Message
    context_ids: list[int]  # the model's whole context, this message included
    previous_reply: str  # what the bot or an agent said just before ("" at the start)
    knowledge: VersionKnowledge = NO_KNOWLEDGE  # the help center of its version, which replies cite


@dataclass(frozen=True)
class Settled:
    """The turn ends without a generated reply."""

    events: list[TurnEvent]  # what the customer is told after `accepted`
    added_ids: list[int] = field(default_factory=list)  # what joins the model's context
    last_message: str = ""


@dataclass(frozen=True)
class HandOver:
    """The bot steps aside instead of replying: it says `text` and a human takes the conversation."""

    text: str
    reason: HandoffReason


Decision = Callable[[UnitOfWork, AcceptedMessage], Awaitable[Settled | None]]
Gate = Callable[[Engine, AcceptedMessage], Awaitable[HandOver | None]]


async def wait_for_agent(work: UnitOfWork, message: AcceptedMessage) -> Settled | None:
    """A human handles this conversation: the message waits for them; the bot stays silent."""
    if message.conversation.status != ConversationStatus.OPEN:
        return None
    return Settled([Waiting(message.conversation.status.value)], last_message=message.user.text)


async def asks_for_person(engine: Engine, message: AcceptedMessage) -> HandOver | None:
    """A gate: the bot's handoff judge reads the customer's message; if they ask for a person,
    the bot hands over instead of replying. A message that answers the bot is also read by the
    `offer_made` judge (does the end of the bot's message offer a person?) and the
    `offer_accepted` judge (does the customer agree to it?), all side by side: a short "ok" to
    the bot's offer of a colleague is a request the handoff judge cannot see in the message
    alone, and a "yes" to any other question is not one."""
    bot = message.bot
    language = bot.definition.language
    asked = {"handoff": format_item({"text": message.user.text}, language)}
    if message.previous_reply and "offer_accepted" in bot.judges:
        asked["offer_made"] = format_item({"previous_reply": message.previous_reply}, language)
        asked["offer_accepted"] = format_item(
            {"previous_reply": message.previous_reply, "text": message.user.text}, language
        )
    asked = {name: item for name, item in asked.items() if name in bot.judges}
    if not asked:
        return None
    judgements = await asyncio.gather(
        *(
            bot.judges[name].ask(
                engine,
                item,
                request_id=f"{name}-{message.user.id}",
                cache_salt=bot.cache_salt,
                affinity_key=message.conversation.id,
            )
            for name, item in asked.items()
        )
    )
    said = {name: judgement.answer for name, judgement in zip(asked, judgements, strict=True)}
    if not (said.get("handoff") or (said.get("offer_made") and said.get("offer_accepted"))):
        return None
    return HandOver(bot.definition.handoff.message, HandoffReason.CUSTOMER_REQUEST)
