"""Every table, imported in one place so the metadata (and Alembic) sees them all."""

from backend.agents.models import Agent, ApiToken, AuditEntry, CannedResponse
from backend.bots.models import Bot, PromptVersion
from backend.conversations.models import Conversation, ConversationRating, Message, Note
from backend.db import Base
from backend.embedding.models import WidgetOrigin
from backend.outbox.models import Webhook, WebhookDelivery

__all__ = [
    "Agent",
    "ApiToken",
    "AuditEntry",
    "Base",
    "Bot",
    "CannedResponse",
    "Conversation",
    "ConversationRating",
    "Message",
    "Note",
    "PromptVersion",
    "Webhook",
    "WebhookDelivery",
    "WidgetOrigin",
]
