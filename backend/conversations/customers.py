"""What a customer does besides sending a message: start a conversation, open it with their
token, read it back."""

import secrets
import uuid
from dataclasses import dataclass
from typing import Any

from backend.bots.registry import BotRegistry
from backend.bots.repository import get_prompt_version
from backend.conversations import repository as repo
from backend.conversations.identity import verify
from backend.conversations.messages import MIN_REPLY_TOKENS
from backend.conversations.models import Conversation, ConversationStatus, Message
from backend.conversations.schemas import IdentityIn
from backend.errors import Forbidden, InvalidInput, NotFound, PayloadTooLarge
from backend.events.bus import CONVERSATION_CREATED, Event
from backend.prompting.assembler import PromptAssembler
from backend.prompting.definitions import BotDefinitionError
from backend.tokens import digest, matches
from backend.unit_of_work import UnitOfWork


@dataclass(frozen=True)
class NewConversation:
    conversation: Conversation
    customer_token: str  # shown once; only its digest is stored
    greeting: str


class CustomerConversations:
    def __init__(
        self,
        *,
        bots: BotRegistry,
        assembler: PromptAssembler,
        max_model_len: int,
        identity_secret: str | None = None,
    ):
        self.bots = bots
        self.assembler = assembler
        self.max_model_len = max_model_len
        self._identity_secret = identity_secret  # the shops' servers sign identities with it

    async def start(
        self,
        work: UnitOfWork,
        bot_slug: str,
        context: dict[str, Any] | None,
        identity: IdentityIn | None = None,
    ) -> NewConversation:
        """A new conversation; an identity is stored verified if its signature matches, unverified
        without one, and refused (403) with a signature that does not match."""
        live = self.bots.get(bot_slug)
        if live is None:
            raise NotFound(f"unknown bot {bot_slug!r}; known bots: {', '.join(sorted(self.bots))}")
        try:
            context_ids = self.assembler.customer_context(live.definition, context)
        except BotDefinitionError as error:
            raise InvalidInput(str(error)) from error
        if len(live.prefix.token_ids) + len(context_ids) + MIN_REPLY_TOKENS > self.max_model_len:
            raise PayloadTooLarge("the customer context does not fit in the model's context window")
        token = secrets.token_urlsafe(32)
        conversation = Conversation(
            id=str(uuid.uuid4()),
            bot_id=live.bot_id,
            prompt_version_id=live.prompt_version_id,
            customer_token_hash=digest(token),
            context=context or None,
            context_token_ids=context_ids,
            status=ConversationStatus.BOT,
            message_count=0,
        )
        if identity is not None:
            customer = verify(**identity.model_dump(), secret=self._identity_secret)
            conversation.customer_user_id = customer.user_id
            conversation.customer_email = customer.email
            conversation.customer_name = customer.name
            conversation.identity_verified = customer.verified
        work.db.add(conversation)
        work.emit(Event(CONVERSATION_CREATED, conversation.id, {"bot": bot_slug, "status": "bot"}))
        return NewConversation(conversation, token, live.definition.greeting)

    async def authorize(self, work: UnitOfWork, conversation_id: str, customer_token: str) -> Conversation:
        """The conversation, if this customer token opens it."""
        conversation = await repo.require_conversation(work.db, conversation_id)
        if not customer_token or not matches(customer_token, conversation.customer_token_hash):
            raise Forbidden("this customer token does not open this conversation")
        return conversation

    async def history(self, work: UnitOfWork, conversation: Conversation) -> tuple[str, list[Message]]:
        """The greeting the customer saw first, then every message."""
        version = await get_prompt_version(work.db, conversation.prompt_version_id)
        return (version.greeting if version else ""), await repo.list_messages(work.db, conversation.id)
