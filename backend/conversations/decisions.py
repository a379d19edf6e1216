"""The turn's decision stages: who answers a customer's message, and what a reply leads to.

A decision looks at the accepted message and either settles the turn (no bot reply) or
passes (None); the first that settles wins, and if none does, the bot replies. A reply
check looks at the finished reply and may change the conversation (hand it over).
To add a decision or a check, write one here and list it where the app builds the turn.
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from backend.conversations import lifecycle
from backend.conversations.messages import append_message, message_event
from backend.conversations.models import Conversation, ConversationStatus, HandoffReason, Message, MessageRole
from backend.conversations.turn_events import Done, Token, TurnEvent, Waiting
from backend.prompting.assembler import PromptAssembler
from backend.prompting.registry import LiveBot
from backend.unit_of_work import UnitOfWork


@dataclass(frozen=True)
class AcceptedMessage:
    """A customer message, stored, with what the later stages of its turn read."""

    conversation: Conversation
    bot: LiveBot
    user: Message
    context_ids: list[int]  # the model's whole context, this message included


@dataclass(frozen=True)
class Settled:
    """The turn ends without a generated reply."""

    events: list[TurnEvent]  # what the customer is told after `accepted`
    added_ids: list[int] = field(default_factory=list)  # what joins the model's context
    last_message: str = ""


Decision = Callable[[UnitOfWork, AcceptedMessage], Awaitable[Settled | None]]
ReplyCheck = Callable[[UnitOfWork, Conversation, LiveBot, str], None]


async def wait_for_agent(work: UnitOfWork, message: AcceptedMessage) -> Settled | None:
    """A human handles this conversation: the message waits for them; the bot stays silent."""
    if message.conversation.status != ConversationStatus.OPEN:
        return None
    return Settled([Waiting(message.conversation.status.value)], last_message=message.user.text)


class HandOverOnRequest:
    """The customer asked for a person: the bot says so (in the model's context too) and steps aside."""

    def __init__(self, assembler: PromptAssembler):
        self.assembler = assembler

    async def __call__(self, work: UnitOfWork, message: AcceptedMessage) -> Settled | None:
        rules = message.bot.definition.handoff
        if not rules.asks_for_human(message.user.text):
            return None
        conversation = message.conversation
        reply_ids = self.assembler.scripted_reply(rules.message)
        reply = append_message(conversation, MessageRole.ASSISTANT, rules.message, reply_ids)
        work.db.add(reply)
        await work.db.flush()
        work.emit(message_event(reply), *lifecycle.hand_off(conversation, HandoffReason.CUSTOMER_REQUEST))
        done = Done(reply.id, rules.message, conversation.status.value, handoff=True)
        return Settled([Token(rules.message), done], reply_ids, rules.message)


def count_unanswered(work: UnitOfWork, conversation: Conversation, bot: LiveBot, reply: str) -> None:
    """Replies that said they could not answer, in a row: too many and a human takes over."""
    if conversation.status == ConversationStatus.BOT:
        work.emit(*lifecycle.count_unanswered(conversation, bot.definition.handoff, reply))
