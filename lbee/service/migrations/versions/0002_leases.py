"""Job leases (owner + expiry, renewed by a heartbeat) and cancellation.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("lease_owner", sa.String(200), nullable=True))
        batch.add_column(sa.Column("lease_expires", sa.DateTime, nullable=True))
        batch.add_column(sa.Column("cancel_requested", sa.Boolean, nullable=False, server_default=sa.false()))


def downgrade():
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("cancel_requested")
        batch.drop_column("lease_expires")
        batch.drop_column("lease_owner")
