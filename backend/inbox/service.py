"""What agents do to conversations. Agent replies join the model's context append-only."""

import logging
from collections.abc import Callable

from backend.agents import audit
from backend.agents import service as agents
from backend.agents.models import Agent
from backend.bots.repository import get_prompt_version
from backend.conversations import lifecycle
from backend.conversations import repository as repo
from backend.conversations.messages import append_message, message_event, message_text
from backend.conversations.models import (
    Conversation,
    ConversationRating,
    ConversationStatus,
    Message,
    MessageRole,
    Note,
)
from backend.engine.interface import warm
from backend.errors import ContextWindowFull
from backend.events.bus import NOTE_CREATED, Event
from backend.inbox import repository as inbox_repo
from backend.inbox.repository import ConversationFilter
from backend.turns.parts import ConversationParts
from backend.turns.session_cache import Session
from backend.unit_of_work import UnitOfWork

logger = logging.getLogger(__name__)

# How long an agent action waits for a bot reply that is being stopped or finished.
LOCK_WAIT_S = 30


def customer_name(conversation: Conversation) -> str | None:
    """The name to greet the customer by: the shop's identity (verified or not: it is only a
    greeting), else a `name` in the customer context."""
    named = (conversation.context or {}).get("name")
    return conversation.customer_name or (str(named) if named not in (None, "") else None)


class InboxService:
    def __init__(self, parts: ConversationParts):
        self.parts = parts

    async def page(
        self, work: UnitOfWork, f: ConversationFilter, *, page: int, page_size: int
    ) -> tuple[list[Conversation], int, dict[str, Message]]:
        rows, total = await inbox_repo.list_conversations(
            work.db, f, limit=page_size, offset=(page - 1) * page_size
        )
        return rows, total, await inbox_repo.last_messages(work.db, [c.id for c in rows])

    async def ratings(self, work: UnitOfWork, conversation_ids: list[str]) -> dict[str, ConversationRating]:
        """The customers' ratings of these conversations, for those rated."""
        return await inbox_repo.ratings_of(work.db, conversation_ids)

    async def transcript(
        self, work: UnitOfWork, conversation_id: str
    ) -> tuple[Conversation, list[Message], list[Note], str]:
        conversation = await repo.require_conversation(work.db, conversation_id)
        messages = await repo.list_messages(work.db, conversation_id)
        notes = await inbox_repo.list_notes(work.db, conversation_id)
        version = await get_prompt_version(work.db, conversation.prompt_version_id)
        return conversation, messages, notes, version.greeting if version else ""

    async def reply(self, work: UnitOfWork, conversation_id: str, agent: Agent, text: str) -> Message:
        """An agent's reply: shown to the customer, and given to the model as an assistant turn."""
        text = message_text(text, self.parts.limits.max_message_chars)
        await self.parts.locks.hold_for(
            work, conversation_id, wait_s=LOCK_WAIT_S, busy_message="the conversation is busy; try again"
        )
        conversation = await repo.require_conversation(work.db, conversation_id, fresh=True)
        expanded = await agents.expand_shortcode(
            work.db, text, customer_name=customer_name(conversation), agent_name=agent.name
        )
        text = message_text(expanded, self.parts.limits.max_message_chars)
        if conversation.status != ConversationStatus.OPEN:
            work.emit(*lifecycle.take_over(conversation, agent.id))
            audit.record(work.db, agent, audit.TAKE_OVER, "conversation", conversation_id, by_reply=True)
        history = await self.parts.context.ids(work.db, conversation)
        reply_ids = self.parts.assembler.scripted_reply(text)
        if len(history) + len(reply_ids) > self.parts.limits.max_model_len:
            raise ContextWindowFull("this reply does not fit in the model's context window")
        message = append_message(conversation, MessageRole.AGENT, text, reply_ids, author_agent_id=agent.id)
        work.db.add(message)
        lifecycle.record_human_reply(conversation)
        await work.db.flush()
        work.emit(message_event(message, author_name=agent.name))
        session = Session([*history, *reply_ids], message.seq, text)

        async def remember() -> None:
            await self.parts.context.remember(conversation_id, session)
            await self.parts.metrics.conversation_active(conversation_id)

        work.after_commit(remember)
        return message

    async def add_note(self, work: UnitOfWork, conversation_id: str, agent: Agent, text: str) -> Note:
        await repo.require_conversation(work.db, conversation_id)
        note = Note(conversation_id=conversation_id, agent_id=agent.id, text=text)
        work.db.add(note)
        await work.db.flush()
        work.emit(Event(NOTE_CREATED, conversation_id, {"note_id": note.id, "agent_id": agent.id}))
        return note

    async def take_over(self, work: UnitOfWork, conversation_id: str, agent: Agent) -> Conversation:
        conversation = await self._change(work, conversation_id, lambda c: lifecycle.take_over(c, agent.id))
        audit.record(work.db, agent, audit.TAKE_OVER, "conversation", conversation_id)
        return conversation

    async def assign(
        self, work: UnitOfWork, conversation_id: str, agent_id: int | None, *, by: Agent
    ) -> Conversation:
        if agent_id is not None:
            await agents.get_agent(work.db, agent_id)
        conversation = await self._change(work, conversation_id, lambda c: lifecycle.assign(c, agent_id))
        audit.record(work.db, by, audit.ASSIGN, "conversation", conversation_id, assignee_id=agent_id)
        return conversation

    async def hand_back(self, work: UnitOfWork, conversation_id: str, *, warm: bool = True) -> Conversation:
        """Back to the bot; with `warm`, its context is run through the engine once stored (not
        needed when the bot answers at once: its reply's prompt is the same context)."""
        conversation = await self._change(work, conversation_id, lifecycle.hand_back)
        if warm:
            self.warm_once_stored(work, conversation)
        return conversation

    def warm_once_stored(self, work: UnitOfWork, conversation: Conversation) -> None:
        async def warm_context() -> None:
            await self._warm_context(work, conversation)

        work.after_commit(warm_context)

    async def resolve(self, work: UnitOfWork, conversation_id: str) -> Conversation:
        return await self._change(work, conversation_id, lifecycle.resolve)

    async def reopen(self, work: UnitOfWork, conversation_id: str) -> Conversation:
        return await self._change(work, conversation_id, lifecycle.reopen)

    async def _change(
        self, work: UnitOfWork, conversation_id: str, change: Callable[[Conversation], list[Event]]
    ) -> Conversation:
        conversation = await repo.require_conversation(work.db, conversation_id, fresh=True)
        work.emit(*change(conversation))
        await work.db.flush()
        return conversation

    async def _warm_context(self, work: UnitOfWork, conversation: Conversation) -> None:
        """Run what was said while humans talked through the engine, so the bot's next reply hits.

        Runs once the hand-back is stored, before it is answered: the customer's next message
        then finds it cached.
        """
        engine = self.parts.engine.current
        live = self.parts.bots.get(conversation.bot.slug)
        if engine is None or live is None:
            return
        try:
            ids = await self.parts.context.ids(work.db, conversation)
            await warm(
                engine,
                ids,
                f"handback-{conversation.id}",
                cache_salt=live.cache_salt,
                affinity_key=conversation.id,
            )
        except Exception as error:  # a cold cache costs time, not correctness
            logger.warning("warming %s after hand-back failed: %s", conversation.id, error)
