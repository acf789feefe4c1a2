"""A running job's phase and how far into it (lbee.progress): preparing, embedding, describing, writing.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("phase", sa.String(40), nullable=True))
        batch.add_column(sa.Column("fraction", sa.Float, nullable=True))


def downgrade():
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("fraction")
        batch.drop_column("phase")
