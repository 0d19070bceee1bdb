"""Claim leases: a claim expires unless its worker renews it, so a killed worker's candidate
is measured by another one.

Claims made before leases existed expire at once (``expires_at`` = ``claimed_at``): the
candidates among them that were measured are skipped by their results, the others are taken
again.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("claim") as batch:
        batch.add_column(sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE claim SET expires_at = claimed_at")


def downgrade() -> None:
    with op.batch_alter_table("claim") as batch:
        batch.drop_column("expires_at")
