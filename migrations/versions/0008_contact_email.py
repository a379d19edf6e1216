"""The e-mail address a customer leaves when the team is away: given by them, unverified, and
kept apart from the identity the shop's server passes.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("conversations") as batch_op:
        batch_op.add_column(sa.Column("contact_email", sa.String(320), nullable=True))
        batch_op.add_column(sa.Column("contact_email_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("conversations") as batch_op:
        batch_op.drop_column("contact_email_at")
        batch_op.drop_column("contact_email")
