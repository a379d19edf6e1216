"""Customers' thumbs up or down on bot replies.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "feedback",
                sa.Enum("up", "down", name="reply_feedback", native_enum=False, length=16),
                nullable=True,
            )
        )
        batch_op.add_column(sa.Column("feedback_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("messages", schema=None) as batch_op:
        batch_op.drop_column("feedback_at")
        batch_op.drop_column("feedback")
