"""A run's files' digests, recorded with the run: its files are served only while they are its own.

Another run's whole, consistent files copied into a run's folder were served as that run's everywhere (sweep 32v);
another run's report.html alone was served as the run's report (sweep 32w). Runs recorded before this revision get
their digests from their files as they are when a server first starts at it (`lbee.service.paths`).

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
        batch.add_column(sa.Column("files_sha256", sa.Text, nullable=True))


def downgrade():
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("files_sha256")
