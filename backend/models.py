"""Every table, imported in one place so the metadata (and Alembic) sees them all."""

from backend.agents.models import Agent, ApiToken, CannedResponse
from backend.conversations.models import Bot, Conversation, Message, Note, PromptVersion
from backend.db import Base
from backend.webhooks.models import Webhook, WebhookDelivery

__all__ = [
    "Agent",
    "ApiToken",
    "Base",
    "Bot",
    "CannedResponse",
    "Conversation",
    "Message",
    "Note",
    "PromptVersion",
    "Webhook",
    "WebhookDelivery",
]
