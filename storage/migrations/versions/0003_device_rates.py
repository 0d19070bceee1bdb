"""Device rates: what the GPU probes measured per device (FFMA, FP64 tensor cores, DRAM, launch).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "device_rates",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("device_id", sa.Integer(), nullable=False),
        sa.Column("ffma_tflops", sa.Float(), nullable=True),
        sa.Column("fp64_tensor_tflops", sa.Float(), nullable=True),
        sa.Column("dram_tb_s", sa.Float(), nullable=True),
        sa.Column("launch_us", sa.Float(), nullable=True),
        sa.Column(
            "measured_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column("provenance", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["device_id"], ["device.id"], name="fk_device_rates_device_id_device"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_device_rates"),
    )
    op.create_index(
        "ix_device_rates_device_id_measured_at", "device_rates", ["device_id", "measured_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_device_rates_device_id_measured_at", table_name="device_rates")
    op.drop_table("device_rates")
