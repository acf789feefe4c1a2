"""The first schema (lbee serve before leases): tokens, jobs, runs.

Revision ID: 0001
Revises:
Create Date: 2026-11-24
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(200), unique=True, nullable=False),
        sa.Column("digest", sa.String(64), unique=True, nullable=False, index=True),
        sa.Column("prefix", sa.String(16), nullable=False),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("created", sa.DateTime, nullable=False),
        sa.Column("revoked", sa.DateTime, nullable=True),
    )
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(500), nullable=False),
        sa.Column("key", sa.String(64), nullable=False, index=True),
        sa.Column("entry", sa.Text, nullable=False),
        sa.Column("root", sa.Text, nullable=False),
        sa.Column("folder", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False, index=True),
        sa.Column("progress", sa.Text, nullable=False),
        sa.Column("log", sa.Text, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("failures", sa.Text, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("worker", sa.String(64), nullable=True),
        sa.Column("token", sa.String(200), nullable=True),
        sa.Column("created", sa.DateTime, nullable=False),
        sa.Column("started", sa.DateTime, nullable=True),
        sa.Column("finished", sa.DateTime, nullable=True),
        sa.Column("heartbeat", sa.DateTime, nullable=True),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("job_id", sa.String(32), sa.ForeignKey("jobs.id"), nullable=False, index=True),
        sa.Column("dataset", sa.String(500), nullable=False, index=True),
        sa.Column("model", sa.String(500), nullable=False, index=True),
        sa.Column("folder", sa.Text, nullable=False),
        sa.Column("metrics", sa.Text, nullable=False),
        sa.Column("n_images", sa.Integer, nullable=False),
        sa.Column("n_hard", sa.Integer, nullable=False),
        sa.Column("seconds", sa.Float, nullable=True),
        sa.Column("created", sa.DateTime, nullable=False),
    )


def downgrade():
    op.drop_table("runs")
    op.drop_table("jobs")
    op.drop_table("tokens")
