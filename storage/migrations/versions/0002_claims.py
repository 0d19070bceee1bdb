"""Claims: which worker took which candidate of a study.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "claim",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study", sa.String(length=255), nullable=False),
        sa.Column("config_name", sa.String(length=255), nullable=False),
        sa.Column("worker", sa.String(length=255), nullable=False),
        sa.Column(
            "claimed_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.PrimaryKeyConstraint("id", name="pk_claim"),
        sa.UniqueConstraint("study", "config_name", name="uq_claim_study_config_name"),
    )


def downgrade() -> None:
    op.drop_table("claim")
