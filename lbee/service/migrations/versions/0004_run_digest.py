"""A run's ``explanation.json`` digest, recorded with the run: its files are served only while they are its own.

Another run's whole, consistent files copied into a run's folder were served as that run's everywhere (sweep 32v).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("explanation_sha256", sa.String(64), nullable=True))


def downgrade():
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("explanation_sha256")
