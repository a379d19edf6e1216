"""The audit log: what agents and admins did, written in the transaction of the action itself.

An entry is added to the action's own session, so it is committed exactly when the action is,
and rolled back with it. The command line acts with no agent: its entries name it instead.
"""

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from backend.agents.models import Agent, AuditEntry

COMMAND_LINE = "command line"

# What is recorded (the `action` of an entry).
TAKE_OVER = "conversation.take_over"
ASSIGN = "conversation.assign"
EXPORT = "transcripts.export"
ERASE = "conversations.erase"
TOKEN_CREATED = "token.create"  # noqa: S105 (an action's name, not a secret)
TOKEN_REVOKED = "token.revoke"  # noqa: S105 (an action's name, not a secret)
AGENT_CREATED = "agent.create"
ACTIONS = (TAKE_OVER, ASSIGN, EXPORT, ERASE, TOKEN_CREATED, TOKEN_REVOKED, AGENT_CREATED)


def record(
    db: AsyncSession,
    actor: Agent | None,
    action: str,
    target_type: str,
    target_id: object = None,
    **details: Any,
) -> AuditEntry:
    """Adds the entry to `db`'s transaction; `actor` None is the command line."""
    assert action in ACTIONS, action
    entry = AuditEntry(
        actor_id=actor.id if actor else None,
        actor_name=actor.name if actor else COMMAND_LINE,
        action=action,
        target_type=target_type,
        target_id=None if target_id is None else str(target_id),
        details=details,
    )
    db.add(entry)
    return entry


async def page(db: AsyncSession, *, limit: int, offset: int) -> tuple[list[AuditEntry], int]:
    """Newest first."""
    total = await db.scalar(select(func.count()).select_from(AuditEntry)) or 0
    newest_first = (AuditEntry.created_at.desc(), AuditEntry.id.desc())
    rows = await db.scalars(select(AuditEntry).order_by(*newest_first).limit(limit).offset(offset))
    return list(rows), total
