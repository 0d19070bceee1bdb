"""Accuracy classes: every measurement names its class, and best_config keeps the fastest of
each class per device and shape.

Kernel families that compute an FP32 GEMM less exactly than strict FP32 (FP32 emulated on tensor
cores, ...) are often faster; with one best per (device, shape) such a config would displace the
strict one, and a caller asking for strict results would get it. The class is a short label the
tuner chooses; every row stored before this revision is strict FP32, so both new columns start
as ``exact`` (their server default). The unique key of best_config becomes
(device_id, shape_id, accuracy). Both tables are altered in batch mode: SQLite cannot change a
constraint in place, so best_config (a few hundred rows) is rebuilt there; measurement only gains
a column, which SQLite and PostgreSQL add in place.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

EXACT = "exact"
OLD_KEY = "uq_best_config_device_id_shape_id"  # named by 0001
NEW_KEY = "uq_best_config_device_id_shape_id_accuracy"


def _accuracy_column() -> sa.Column[str]:
    return sa.Column("accuracy", sa.String(length=32), server_default=EXACT, nullable=False)


def upgrade() -> None:
    with op.batch_alter_table("measurement", recreate="never") as batch:
        batch.add_column(_accuracy_column())
    with op.batch_alter_table("best_config") as batch:
        batch.add_column(_accuracy_column())
        batch.drop_constraint(OLD_KEY, type_="unique")
        batch.create_unique_constraint(NEW_KEY, ["device_id", "shape_id", "accuracy"])


def downgrade() -> None:
    """Back to one best per device and shape: only possible while every row is ``exact``;
    other classes have no place there and are refused rather than silently mixed in."""
    classes = sa.union(
        *(
            sa.select(table.c.accuracy).where(table.c.accuracy != EXACT)
            for table in (
                sa.table(name, sa.column("accuracy", sa.String(32)))
                for name in ("measurement", "best_config")
            )
        )
    )
    others = sorted(op.get_bind().execute(classes).scalars())
    if others:
        raise RuntimeError(
            f"cannot downgrade below 0008: the database holds measurements of accuracy classes "
            f"other than {EXACT!r} ({', '.join(others)}), which revision 0007 cannot tell from "
            "strict results; delete them first"
        )
    with op.batch_alter_table("best_config") as batch:
        batch.drop_constraint(NEW_KEY, type_="unique")
        batch.create_unique_constraint(OLD_KEY, ["device_id", "shape_id"])
        batch.drop_column("accuracy")
    # Never rebuilt (as in the upgrade): on SQLite, with foreign keys on, dropping the old
    # measurement table fails on the best configs that point at it. SQLite 3.35 and later drop
    # a column in place.
    with op.batch_alter_table("measurement", recreate="never") as batch:
        batch.drop_column("accuracy")
