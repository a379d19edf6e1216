"""One customer message, top to bottom. Its stages, in order:

    accept    check the text, claim the conversation (a reply slot, the turn lock), store
              the message if the context window has room for it and a reply
    decide    who answers: the decision stages (`decisions.py`) may settle the turn (a human
              has it); if none does, the bot replies
    assemble  the prompt: everything the model saw, the new message, the generation prompt
    reply     in a task of its own (`reply.py`): the gates, the opening, the stream, and the
              finish (`finish.py`): checks, sources, stored, the session kept hot; then the
              claim is let go

`take` runs accept, decide and assemble inside the request's unit of work, which commits
before the response starts; the reply is generated and settled after the request, so a
customer who disconnects still gets it stored. `answer_waiting` starts the same reply (assemble,
generate, check, settle) for a message that waited for a person when the bot takes it back.
"""

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from backend.bots.registry import LiveBot, VersionKnowledge
from backend.conversations import lifecycle
from backend.conversations import repository as repo
from backend.conversations.messages import MIN_REPLY_TOKENS, append_message, message_event, message_text
from backend.conversations.models import Conversation, ConversationStatus, Message, MessageRole, MessageStatus
from backend.engine.interface import Engine
from backend.errors import AppError, ContextWindowFull, ServiceUnavailable
from backend.events.bus import STATUS_CHANGED, Event
from backend.knowledge.articles import Article
from backend.turns.claims import TurnClaim, TurnClaims
from backend.turns.decisions import AcceptedMessage, Decision, Settled
from backend.turns.events import Accepted, TurnStream
from backend.turns.parts import ConversationParts
from backend.turns.reply import Replies
from backend.turns.session_cache import Session
from backend.turns.writing import PendingReply
from backend.unit_of_work import UnitOfWork

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WaitingAnswer:
    """What became of the customer's messages that waited for a person, when the bot took back over."""

    waiting: int  # customer messages since the last reply
    answering_message_id: int | None = None  # the last of them, which the bot is now answering
    unanswered_reason: str | None = None  # why the bot cannot answer them: a person should


class ChatTurns:
    def __init__(
        self, parts: ConversationParts, *, claims: TurnClaims, decisions: Sequence[Decision], replies: Replies
    ):
        self.parts = parts
        self.claims = claims
        self.decisions = decisions
        self.replies = replies
        self._replies: set[asyncio.Task[None]] = set()

    async def take(self, work: UnitOfWork, conversation_id: str, text: str) -> TurnStream:
        """Accept the message, decide who answers and, if it is the bot, start its reply."""
        text = message_text(text, self.parts.limits.max_message_chars)
        engine = self.parts.engine.require()
        claim = await self.claims.take(work, conversation_id)
        message = await self._accept(work, conversation_id, text)
        for decide in self.decisions:
            if (settled := await decide(work, message)) is not None:
                return self._settle_now(work, message, settled)
        stream = TurnStream()
        await self._start_reply(work, engine, message, stream, claim, active=True)
        return stream

    async def answer_waiting(self, work: UnitOfWork, conversation_id: str) -> WaitingAnswer:
        """The bot has the conversation back: one reply to the last customer message nobody
        answered, through the turn's own stages (its context append-only, its prefix cached).
        If the bot cannot (no engine, a turn running, no room), the answer says why instead."""
        messages = await repo.list_messages(work.db, conversation_id)
        waiting = _waiting(messages)
        if not waiting:
            return WaitingAnswer(0)
        try:
            engine = self.parts.engine.require()
            claim = await self.claims.take(work, conversation_id)
            message = await self._waiting_message(work, conversation_id, messages, waiting[-1])
        except AppError as error:
            reason = f"the bot could not answer: {error.message}; the customer's messages are unanswered"
            return WaitingAnswer(len(waiting), unanswered_reason=reason)
        # Nobody reads its stream: the customer's live stream gets the stored reply.
        await self._start_reply(work, engine, message, TurnStream(), claim, active=False)
        return WaitingAnswer(len(waiting), answering_message_id=waiting[-1].id)

    async def _waiting_message(
        self, work: UnitOfWork, conversation_id: str, messages: list[Message], last: Message
    ) -> AcceptedMessage:
        """The customer's last waiting message as a turn's accepted message: it is in the context already."""
        conversation = await repo.require_conversation(work.db, conversation_id, fresh=True)
        bot = self._bot_of(conversation)
        context_ids = await self.parts.context.ids(work.db, conversation)
        if self.parts.room_after(context_ids) < MIN_REPLY_TOKENS:
            raise ContextWindowFull("this conversation has reached the model's context window")
        replies = [m.text for m in messages if m.seq < last.seq and m.role != MessageRole.USER]
        knowledge = await self.parts.bots.knowledge_of_version(work.db, conversation.prompt_version_id)
        previous = replies[-1] if replies else ""
        return AcceptedMessage(conversation, bot, last, context_ids, previous, knowledge)

    # -- accept, decide, assemble: in the request ------------------------------------

    async def _accept(self, work: UnitOfWork, conversation_id: str, text: str) -> AcceptedMessage:
        conversation = await repo.require_conversation(work.db, conversation_id, fresh=True)
        await repo.fail_abandoned_replies(work.db, conversation_id)
        bot = self._bot_of(conversation)
        work.emit(*lifecycle.reopen_by_customer(conversation))
        previous_reply = await repo.last_reply_text(work.db, conversation_id)
        # The model sees the help-center articles (when they are not in the prefix) and the
        # policy's lines that match the message just before it; the text is stored as the
        # customer wrote it, the ids as the model saw them.
        knowledge = await self.parts.bots.knowledge_of_version(work.db, conversation.prompt_version_id)
        given = await repo.given_articles(work.db, conversation.id) if knowledge.beside_questions else set()
        articles = self._new_articles(knowledge, given, bot, text)
        # Off the event loop: a bot that ranks its lines by meaning too encodes the message
        # (about 10 ms).
        note = await asyncio.to_thread(
            self.parts.assembler.note, bot.definition, text, articles, self.parts.limits.relevant_lines
        )
        user_ids = self.parts.assembler.user_message(text, note)
        context_ids = [*await self.parts.context.ids(work.db, conversation), *user_ids]
        if self.parts.room_after(context_ids) < MIN_REPLY_TOKENS:
            raise ContextWindowFull(
                f"this conversation has reached the model's context window "
                f"({self.parts.limits.max_model_len} tokens); please start a new conversation"
            )
        user = append_message(conversation, MessageRole.USER, text, user_ids)
        user.articles = [a.id for a in articles] or None
        work.db.add(user)
        await work.db.flush()
        work.emit(message_event(user))
        return AcceptedMessage(conversation, bot, user, context_ids, previous_reply, knowledge)

    @staticmethod
    def _new_articles(known: VersionKnowledge, given: set[str], bot: LiveBot, text: str) -> list[Article]:
        """The articles of the conversation's help center that match the message and that it was
        not given before: appended once, in canonical order, so every later turn still starts
        with the exact ids of the earlier ones."""
        search = known.beside_questions
        if search is None:
            return []
        return search.new_matches(text, bot.definition.knowledge_settings.articles_per_question, given)

    def _settle_now(self, work: UnitOfWork, message: AcceptedMessage, settled: Settled) -> TurnStream:
        """A turn a decision settled: no reply to wait for; the session is kept hot once stored."""
        conversation = message.conversation
        session = Session(
            [*message.context_ids, *settled.added_ids], conversation.message_count, settled.last_message
        )

        async def remember() -> None:
            await self.parts.context.remember(conversation.id, session)

        work.after_commit(remember)
        return TurnStream.of(Accepted(message.user.id), *settled.events)

    async def _assemble(self, work: UnitOfWork, message: AcceptedMessage) -> PendingReply:
        prompt = self.parts.assembler.prompt_for_reply(message.context_ids)
        reply = append_message(
            message.conversation, MessageRole.ASSISTANT, "", [], status=MessageStatus.GENERATING
        )
        reply.prompt_tokens = len(prompt)
        work.db.add(reply)
        await work.db.flush()
        max_tokens = min(self.parts.limits.max_reply_tokens, self.parts.limits.max_model_len - len(prompt))
        return PendingReply(reply.id, reply.seq, prompt, max_tokens)

    async def _start_reply(
        self,
        work: UnitOfWork,
        engine: Engine,
        message: AcceptedMessage,
        stream: TurnStream,
        claim: TurnClaim,
        *,
        active: bool,
    ) -> None:
        """The reply stored as "generating", its task started once the request's work commits."""
        reply = await self._assemble(work, message)

        async def start_reply() -> None:
            if active:  # a customer's own turn: the conversation counts as active
                await self.parts.metrics.conversation_active(message.conversation.id)
            task = asyncio.create_task(self.replies.write(engine, message, reply, stream, claim.pass_on()))
            self._replies.add(task)
            task.add_done_callback(self._replies.discard)

        work.after_commit(start_reply)

    # -- around the turns ---------------------------------------------------------------

    async def stop_reply_on_handoff(self, event: Event) -> None:
        """Any process's status change away from the bot stops this process's reply to it."""
        if event.type == STATUS_CHANGED and event.data.get("status") != ConversationStatus.BOT:
            self.claims.stops.stop(event.conversation_id)

    async def drain(self) -> None:
        """Let replies being written finish and be stored (before shutdown)."""
        if self._replies:
            await asyncio.wait(self._replies, timeout=30)

    def _bot_of(self, conversation: Conversation) -> LiveBot:
        live = self.parts.bots.get(conversation.bot.slug)
        if live is None:
            raise ServiceUnavailable(f"bot {conversation.bot.slug!r} is not loaded in this app")
        return live


def _waiting(messages: list[Message]) -> list[Message]:
    """The customer's messages after the last reply (a failed bot reply said nothing)."""
    waiting: list[Message] = []
    for message in reversed(messages):
        if message.role == MessageRole.USER:
            waiting.insert(0, message)
        elif not (message.role == MessageRole.ASSISTANT and message.status == MessageStatus.FAILED):
            break
    return waiting
