"""Origins admins allow to embed the widget, read by every app process without a restart.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "widget_origins",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("origin", sa.String(length=300), nullable=False),
        sa.Column("added_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["added_by"], ["agents.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("origin"),
    )


def downgrade() -> None:
    op.drop_table("widget_origins")
