"""Initial schema: device, shape, measurement, best_config.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_STATUSES = (
    "ok",
    "invalid",
    "pruned",
    "compile_failed",
    "launch_failed",
    "wrong_result",
    "timeout",
)


def upgrade() -> None:
    op.create_table(
        "device",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("arch", sa.String(length=32), nullable=False),
        sa.Column("sm_count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_device"),
        sa.UniqueConstraint("name", "arch", "sm_count", name="uq_device_name_arch_sm_count"),
    )
    op.create_table(
        "shape",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("m", sa.Integer(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("k", sa.Integer(), nullable=False),
        sa.Column("dtype", sa.String(length=32), server_default="float32", nullable=False),
        sa.Column("layout", sa.String(length=32), server_default="row-major", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_shape"),
        sa.UniqueConstraint("m", "n", "k", "dtype", "layout", name="uq_shape_m_n_k_dtype_layout"),
    )
    op.create_table(
        "measurement",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("device_id", sa.Integer(), nullable=False),
        sa.Column("shape_id", sa.Integer(), nullable=False),
        sa.Column("family", sa.String(length=64), nullable=False),
        sa.Column("config_name", sa.String(length=255), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("ms", sa.Float(), nullable=True),
        sa.Column("tflops", sa.Float(), nullable=True),
        sa.Column("cublas_ms", sa.Float(), nullable=True),
        sa.Column("cublas_tflops", sa.Float(), nullable=True),
        sa.Column("ratio", sa.Float(), nullable=True),
        sa.Column("rel_error", sa.Float(), nullable=True),
        sa.Column("registers", sa.Integer(), nullable=True),
        sa.Column("smem_bytes", sa.Integer(), nullable=True),
        sa.Column("occupancy", sa.Float(), nullable=True),
        sa.Column("study", sa.String(length=255), nullable=True),
        sa.Column("trial_number", sa.Integer(), nullable=True),
        sa.Column("provenance", sa.JSON(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.CheckConstraint(
            "status IN (" + ", ".join(f"'{s}'" for s in _STATUSES) + ")",
            name="ck_measurement_status",
        ),
        sa.ForeignKeyConstraint(
            ["device_id"], ["device.id"], name="fk_measurement_device_id_device"
        ),
        sa.ForeignKeyConstraint(["shape_id"], ["shape.id"], name="fk_measurement_shape_id_shape"),
        sa.PrimaryKeyConstraint("id", name="pk_measurement"),
    )
    op.create_index(
        "ix_measurement_device_id_shape_id_status",
        "measurement",
        ["device_id", "shape_id", "status"],
    )
    op.create_table(
        "best_config",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("device_id", sa.Integer(), nullable=False),
        sa.Column("shape_id", sa.Integer(), nullable=False),
        sa.Column("measurement_id", sa.Integer(), nullable=False),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["device_id"], ["device.id"], name="fk_best_config_device_id_device"
        ),
        sa.ForeignKeyConstraint(["shape_id"], ["shape.id"], name="fk_best_config_shape_id_shape"),
        sa.ForeignKeyConstraint(
            ["measurement_id"],
            ["measurement.id"],
            name="fk_best_config_measurement_id_measurement",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_best_config"),
        sa.UniqueConstraint("device_id", "shape_id", name="uq_best_config_device_id_shape_id"),
    )


def downgrade() -> None:
    op.drop_table("best_config")
    op.drop_index("ix_measurement_device_id_shape_id_status", table_name="measurement")
    op.drop_table("measurement")
    op.drop_table("shape")
    op.drop_table("device")
