"""An index on a measurement's study (then id): a study page's progress query and its read of
the rows stored after an id stop scanning every measurement.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_measurement_study_id", "measurement", ["study", "id"])


def downgrade() -> None:
    op.drop_index("ix_measurement_study_id", table_name="measurement")
