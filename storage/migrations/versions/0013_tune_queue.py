"""The tuning queue: problems waiting for a worker, each taken under a lease (``queue_entry``).

A new table only; nothing stored before changes.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    when = sa.DateTime(timezone=True)
    op.create_table(
        "queue_entry",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("problem", sa.String(length=255), nullable=False),
        sa.Column("m", sa.Integer(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("k", sa.Integer(), nullable=False),
        sa.Column("dtype", sa.String(length=32), nullable=False),
        sa.Column("layout", sa.String(length=32), nullable=False),
        sa.Column("out_dtype", sa.String(length=32), nullable=False),
        sa.Column("accuracy", sa.String(length=32), nullable=False),
        sa.Column("device", sa.String(length=200), nullable=False),
        sa.Column("families", sa.String(length=255), nullable=False),
        sa.Column("trials", sa.Integer(), nullable=True),
        sa.Column("batch", sa.String(length=255), nullable=True),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("state", sa.String(length=32), nullable=False),
        sa.Column("worker", sa.String(length=255), nullable=True),
        sa.Column("expires_at", when, nullable=True),
        sa.Column("attempt", sa.Integer(), server_default="0", nullable=False),
        sa.Column("searching", sa.Integer(), server_default="0", nullable=False),
        sa.Column("joinable", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("study", sa.String(length=255), nullable=True),
        sa.Column("evaluated", sa.Integer(), nullable=True),
        sa.Column("enqueued_at", when, server_default=sa.func.now(), nullable=False),
        sa.Column("started_at", when, nullable=True),
        sa.Column("finished_at", when, nullable=True),
        sa.CheckConstraint(
            "state IN ('queued', 'running', 'done', 'failed')", name="ck_queue_entry_state"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_queue_entry"),
        sa.UniqueConstraint("problem", name="uq_queue_entry_problem"),
    )
    op.create_index("ix_queue_entry_state_id", "queue_entry", ["state", "id"])
    op.create_index("ix_queue_entry_batch", "queue_entry", ["batch"])


def downgrade() -> None:
    op.drop_index("ix_queue_entry_batch", table_name="queue_entry")
    op.drop_index("ix_queue_entry_state_id", table_name="queue_entry")
    op.drop_table("queue_entry")
