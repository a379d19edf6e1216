"""What agents do to conversations. Agent replies join the model's context append-only."""

import logging

from backend.agents import service as agents
from backend.agents.models import Agent
from backend.conversations import lifecycle
from backend.conversations import repository as repo
from backend.conversations.messages import append_message, message_event
from backend.conversations.models import Conversation, ConversationStatus, Message, MessageRole, Note
from backend.conversations.service import ChatService
from backend.conversations.session_store import Session
from backend.engine.vllm_engine import warm
from backend.errors import InvalidInput, NotFound
from backend.events.bus import Event, publish_all
from backend.inbox import repository as inbox_repo
from backend.inbox.repository import ConversationFilter
from backend.webhooks.service import commit_with_deliveries

logger = logging.getLogger(__name__)

# How long an agent action waits for a bot reply that is being stopped or finished.
LOCK_WAIT_S = 30


class InboxService:
    def __init__(self, chat: ChatService):
        self.chat = chat
        self.sessions = chat.sessions

    async def conversation(self, conversation_id: str) -> Conversation:
        async with self.sessions() as db:
            conversation = await repo.get_conversation(db, conversation_id)
        if conversation is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        return conversation

    async def page(self, f: ConversationFilter, *, page: int, page_size: int):
        async with self.sessions() as db:
            rows, total = await inbox_repo.list_conversations(
                db, f, limit=page_size, offset=(page - 1) * page_size
            )
            last = await inbox_repo.last_messages(db, [c.id for c in rows])
        return rows, total, last

    async def transcript(self, conversation_id: str) -> tuple[Conversation, list[Message], list[Note], str]:
        conversation = await self.conversation(conversation_id)
        async with self.sessions() as db:
            messages = await repo.list_messages(db, conversation_id)
            notes = await inbox_repo.list_notes(db, conversation_id)
            version = await repo.get_prompt_version(db, conversation.prompt_version_id)
        return conversation, messages, notes, version.greeting

    async def reply(self, conversation_id: str, agent: Agent, text: str) -> Message:
        """An agent's reply: shown to the customer, and given to the model as an assistant turn."""
        text = self.chat.validate_text(text)
        context = self.chat.context
        await context.lock(
            conversation_id, wait_s=LOCK_WAIT_S, busy_message="the conversation is busy; try again"
        )
        try:
            async with self.sessions() as db:
                text = self.chat.validate_text(await agents.expand_shortcode(db, text))
                conversation = await self._get(db, conversation_id)
                events = (
                    []
                    if conversation.status == ConversationStatus.OPEN
                    else lifecycle.take_over(conversation, agent.id)
                )
                history = await context.ids(db, conversation)
                reply_ids = self.chat.assembler.scripted_reply(text)
                if len(history) + len(reply_ids) > self.chat.settings.max_model_len:
                    raise InvalidInput("this reply does not fit in the model's context window")
                message = append_message(
                    conversation, MessageRole.AGENT, text, reply_ids, author_agent_id=agent.id
                )
                db.add(message)
                lifecycle.record_human_reply(conversation)
                await db.flush()
                events.append(message_event(message))
                await commit_with_deliveries(db, events)
            await context.remember(conversation_id, Session([*history, *reply_ids], message.seq, text))
        finally:
            await context.unlock(conversation_id)
        await publish_all(self.chat.events, events)
        await self.chat.metrics.conversation_active(conversation_id)
        return message

    async def add_note(self, conversation_id: str, agent: Agent, text: str) -> Note:
        async with self.sessions() as db:
            await self._get(db, conversation_id)
            note = Note(conversation_id=conversation_id, agent_id=agent.id, text=text)
            db.add(note)
            await db.commit()
        return note

    async def take_over(self, conversation_id: str, agent: Agent) -> Conversation:
        return await self._change(conversation_id, lambda c: lifecycle.take_over(c, agent.id))

    async def assign(self, conversation_id: str, agent_id: int | None) -> Conversation:
        if agent_id is not None:
            async with self.sessions() as db:
                await agents.get_agent(db, agent_id)
        return await self._change(conversation_id, lambda c: lifecycle.assign(c, agent_id))

    async def hand_back(self, conversation_id: str) -> Conversation:
        conversation = await self._change(conversation_id, lifecycle.hand_back)
        await self._warm_context(conversation)
        return conversation

    async def resolve(self, conversation_id: str) -> Conversation:
        return await self._change(conversation_id, lifecycle.resolve)

    async def reopen(self, conversation_id: str) -> Conversation:
        return await self._change(conversation_id, lifecycle.reopen)

    async def _get(self, db, conversation_id: str) -> Conversation:
        conversation = await repo.get_conversation(db, conversation_id)
        if conversation is None:
            raise NotFound(f"no conversation {conversation_id!r}")
        return conversation

    async def _change(self, conversation_id: str, change) -> Conversation:
        async with self.sessions() as db:
            conversation = await self._get(db, conversation_id)
            events: list[Event] = change(conversation)
            await commit_with_deliveries(db, events)
        await publish_all(self.chat.events, events)
        return conversation

    async def _warm_context(self, conversation: Conversation) -> None:
        """Run what was said while humans talked through the engine, so the bot's next reply hits.

        Awaited before the hand-back returns: the customer's next message then finds it cached.
        """
        if self.chat.engine is None:
            return
        try:
            async with self.sessions() as db:
                ids = await self.chat.context.ids(db, conversation)
            salt = self.chat.bots[conversation.bot.slug].cache_salt
            await warm(
                self.chat.engine,
                ids,
                f"handback-{conversation.id}",
                cache_salt=salt,
                affinity_key=conversation.id,
            )
        except Exception as error:  # a cold cache costs time, not correctness
            logger.warning("warming %s after hand-back failed: %s", conversation.id, error)
