"""Doubtful bot replies: why a reply may be wrong, kept with the message.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("doubt", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("messages", "doubt")
