"""Agents and tokens, handoff lifecycle, notes, canned responses, webhooks.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column(
            "role", sa.Enum("agent", "admin", name="agent_role", native_enum=False, length=16), nullable=False
        ),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("email"),
    )
    op.create_table(
        "webhooks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("url", sa.String(length=2000), nullable=False),
        sa.Column("secret", sa.String(length=128), nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "api_tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("display_prefix", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_tokens_agent_id"), ["agent_id"], unique=False)

    op.create_table(
        "canned_responses",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("shortcode", sa.String(length=64), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["created_by"], ["agents.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("shortcode"),
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("webhook_id", sa.Integer(), nullable=False),
        sa.Column("event_id", sa.String(length=36), nullable=False),
        sa.Column("event_type", sa.String(length=64), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column(
            "status",
            sa.Enum("pending", "delivered", "failed", name="delivery_status", native_enum=False, length=16),
            nullable=False,
        ),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["webhook_id"], ["webhooks.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_webhook_deliveries_next_attempt_at"), ["next_attempt_at"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_webhook_deliveries_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_webhook_deliveries_webhook_id"), ["webhook_id"], unique=False)

    op.create_table(
        "notes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("conversation_id", sa.String(length=36), nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"],
            ["agents.id"],
        ),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("notes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_notes_conversation_id"), ["conversation_id"], unique=False)

    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("assignee_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("unanswered_replies", sa.Integer(), nullable=False, server_default="0"))
        batch_op.add_column(
            sa.Column(
                "handoff_reason",
                sa.Enum(
                    "customer_request",
                    "unanswered",
                    "agent",
                    name="handoff_reason",
                    native_enum=False,
                    length=16,
                ),
                nullable=True,
            )
        )
        batch_op.add_column(sa.Column("handed_off_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("first_human_reply_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index(batch_op.f("ix_conversations_assignee_id"), ["assignee_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_conversations_created_at"), ["created_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_conversations_status"), ["status"], unique=False)
        batch_op.create_foreign_key("fk_conversations_assignee_id_agents", "agents", ["assignee_id"], ["id"])

    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.add_column(sa.Column("author_agent_id", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_messages_created_at"), ["created_at"], unique=False)
        batch_op.create_foreign_key(
            "fk_messages_author_agent_id_agents", "agents", ["author_agent_id"], ["id"]
        )


def downgrade() -> None:
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.drop_constraint("fk_messages_author_agent_id_agents", type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_messages_created_at"))
        batch_op.drop_column("author_agent_id")

    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.drop_constraint("fk_conversations_assignee_id_agents", type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_conversations_status"))
        batch_op.drop_index(batch_op.f("ix_conversations_created_at"))
        batch_op.drop_index(batch_op.f("ix_conversations_assignee_id"))
        batch_op.drop_column("resolved_at")
        batch_op.drop_column("first_human_reply_at")
        batch_op.drop_column("handed_off_at")
        batch_op.drop_column("handoff_reason")
        batch_op.drop_column("unanswered_replies")
        batch_op.drop_column("assignee_id")

    with op.batch_alter_table("notes", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_notes_conversation_id"))

    op.drop_table("notes")
    with op.batch_alter_table("webhook_deliveries", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_webhook_deliveries_webhook_id"))
        batch_op.drop_index(batch_op.f("ix_webhook_deliveries_status"))
        batch_op.drop_index(batch_op.f("ix_webhook_deliveries_next_attempt_at"))

    op.drop_table("webhook_deliveries")
    op.drop_table("canned_responses")
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_tokens_agent_id"))

    op.drop_table("api_tokens")
    op.drop_table("webhooks")
    op.drop_table("agents")
