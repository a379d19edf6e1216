"""Customer identity: the user id, e-mail and name a shop passes, and whether it signed them.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("conversations") as batch_op:
        batch_op.add_column(sa.Column("customer_user_id", sa.String(255), nullable=True))
        batch_op.add_column(sa.Column("customer_email", sa.String(320), nullable=True))
        batch_op.add_column(sa.Column("customer_name", sa.String(200), nullable=True))
        batch_op.add_column(
            sa.Column("identity_verified", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.create_index(batch_op.f("ix_conversations_customer_email"), ["customer_email"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("conversations") as batch_op:
        batch_op.drop_index(batch_op.f("ix_conversations_customer_email"))
        batch_op.drop_column("identity_verified")
        batch_op.drop_column("customer_name")
        batch_op.drop_column("customer_email")
        batch_op.drop_column("customer_user_id")
