"""Indexes for keyset paging of measurements (by id, under each filter) and for the answer
index's fingerprint (the newest best-config update).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEXES = (
    ("ix_measurement_family_id", "measurement", ["family", "id"]),
    ("ix_measurement_status_id", "measurement", ["status", "id"]),
    ("ix_measurement_device_id_id", "measurement", ["device_id", "id"]),
    ("ix_measurement_shape_id_id", "measurement", ["shape_id", "id"]),
    ("ix_best_config_updated_at", "best_config", ["updated_at"]),
)


def upgrade() -> None:
    for name, table, columns in INDEXES:
        op.create_index(name, table, columns)


def downgrade() -> None:
    for name, table, _ in reversed(INDEXES):
        op.drop_index(name, table_name=table)
