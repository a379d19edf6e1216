"""A bot's help center: the articles of each prompt version and whether they are in its fixed
prefix; the articles a customer's turn brought into a conversation, and those a reply cites.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("prompt_versions") as batch_op:
        batch_op.add_column(sa.Column("knowledge", sa.JSON(), nullable=True))
        batch_op.add_column(
            sa.Column("knowledge_in_prefix", sa.Boolean(), nullable=False, server_default=sa.true())
        )
    with op.batch_alter_table("messages") as batch_op:
        batch_op.add_column(sa.Column("articles", sa.JSON(), nullable=True))
        batch_op.add_column(sa.Column("sources", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("messages") as batch_op:
        batch_op.drop_column("sources")
        batch_op.drop_column("articles")
    with op.batch_alter_table("prompt_versions") as batch_op:
        batch_op.drop_column("knowledge_in_prefix")
        batch_op.drop_column("knowledge")
