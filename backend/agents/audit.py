"""The audit log: what agents and admins did, written in the transaction of the action itself.

An entry is added to the action's own session, so it is committed exactly when the action is,
and rolled back with it. The command line acts with no agent: its entries name it instead.
"""

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.agents.models import Agent, AuditEntry

COMMAND_LINE = "command line"


class AuditAction(enum.StrEnum):
    """What is recorded (the `action` of an entry)."""

    TAKE_OVER = "conversation.take_over"
    ASSIGN = "conversation.assign"
    EXPORT = "transcripts.export"
    ERASE = "conversations.erase"
    TOKEN_CREATED = "token.create"  # noqa: S105 (an action's name, not a secret)
    TOKEN_REVOKED = "token.revoke"  # noqa: S105 (an action's name, not a secret)
    AGENT_CREATED = "agent.create"
    ORIGIN_ADDED = "widget_origin.add"
    ORIGIN_REMOVED = "widget_origin.remove"
    PROMPTS_RELOADED = "prompts.reload"
    WEBHOOK_CREATED = "webhook.create"
    WEBHOOK_DELETED = "webhook.delete"


TAKE_OVER = AuditAction.TAKE_OVER
ASSIGN = AuditAction.ASSIGN
EXPORT = AuditAction.EXPORT
ERASE = AuditAction.ERASE
TOKEN_CREATED = AuditAction.TOKEN_CREATED
TOKEN_REVOKED = AuditAction.TOKEN_REVOKED
AGENT_CREATED = AuditAction.AGENT_CREATED
ORIGIN_ADDED = AuditAction.ORIGIN_ADDED
ORIGIN_REMOVED = AuditAction.ORIGIN_REMOVED
PROMPTS_RELOADED = AuditAction.PROMPTS_RELOADED
WEBHOOK_CREATED = AuditAction.WEBHOOK_CREATED
WEBHOOK_DELETED = AuditAction.WEBHOOK_DELETED
ACTIONS = tuple(AuditAction)

# How the admin page names each action.
LABELS: dict[str, str] = {
    TAKE_OVER: "Took over a conversation",
    ASSIGN: "Assigned a conversation",
    EXPORT: "Exported transcripts",
    ERASE: "Erased a conversation",
    TOKEN_CREATED: "Created an API token",
    TOKEN_REVOKED: "Revoked an API token",
    AGENT_CREATED: "Created an agent",
    ORIGIN_ADDED: "Allowed a widget origin",
    ORIGIN_REMOVED: "Removed a widget origin",
    PROMPTS_RELOADED: "Reloaded the prompts",
    WEBHOOK_CREATED: "Created a webhook",
    WEBHOOK_DELETED: "Deleted a webhook",
}


def label(action: str) -> str:
    """The action's human name; an action recorded by an older version keeps its own."""
    return LABELS.get(action, action)


def record(
    db: AsyncSession,
    actor: Agent | None,
    action: AuditAction,
    target_type: str,
    target_id: object = None,
    **details: Any,
) -> AuditEntry:
    """Adds the entry to `db`'s transaction; `actor` None is the command line."""
    assert action in ACTIONS, action
    entry = AuditEntry(
        actor_id=actor.id if actor else None,
        actor_name=actor.name if actor else COMMAND_LINE,
        action=str(action),
        target_type=target_type,
        target_id=None if target_id is None else str(target_id),
        details=details,
    )
    db.add(entry)
    return entry


@dataclass(frozen=True)
class AuditFilter:
    """Entries by one actor, of one action, written in [start, end); None: any."""

    actor_id: int | None = None
    action: AuditAction | None = None
    start: datetime | None = None
    end: datetime | None = None

    def conditions(self) -> list[ColumnElement[bool]]:
        wanted: list[ColumnElement[bool]] = []
        if self.actor_id is not None:
            wanted.append(AuditEntry.actor_id == self.actor_id)
        if self.action is not None:
            wanted.append(AuditEntry.action == str(self.action))
        if self.start is not None:
            wanted.append(AuditEntry.created_at >= self.start)
        if self.end is not None:
            wanted.append(AuditEntry.created_at < self.end)
        return wanted


async def page(
    db: AsyncSession, *, limit: int, offset: int, only: AuditFilter = AuditFilter()
) -> tuple[list[AuditEntry], int]:
    """Newest first."""
    wanted = only.conditions()
    total = await db.scalar(select(func.count()).select_from(AuditEntry).where(*wanted)) or 0
    newest_first = (AuditEntry.created_at.desc(), AuditEntry.id.desc())
    rows = await db.scalars(
        select(AuditEntry).where(*wanted).order_by(*newest_first).limit(limit).offset(offset)
    )
    return list(rows), total
