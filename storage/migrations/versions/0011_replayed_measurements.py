"""A measurement says what produced it (``measurement.evaluator``: ``gpu`` or ``replay``), and a
replayed time is no longer a device's best config.

Until this revision a study run on the replay evaluator (``gemmtune tune --evaluator replay``)
stored the table's times as if measured on the table's device, and they competed for its best
config: a replay of 4096^3 replaced the served, measured answer by a slower replayed one. Every
replayed result carried the tables it came from in its provenance (``replayed_from``); the
upgrade marks those rows ``replay``, then gives each best config that pointed at one the best of
the measured rows of its device, shape and class by the write path's rule (trusted ``ok`` rows;
final re-measurements before screening times; faster first; the first stored of equals), or
drops it where there is none. The downgrade drops the column (the provenance still names the
tables; the best configs stay as they are).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The convention of revision 0009's code, and the values of tuner.core.evaluators as written.
REPLAYED_FROM = "replayed_from"
GPU, REPLAY = "gpu", "replay"
FINAL = "final"

MEASUREMENT = sa.table(
    "measurement",
    sa.column("id", sa.Integer),
    sa.column("device_id", sa.Integer),
    sa.column("shape_id", sa.Integer),
    sa.column("accuracy", sa.String(32)),
    sa.column("status", sa.String(20)),
    sa.column("ms", sa.Float),
    sa.column("phase", sa.String(32)),
    sa.column("trusted", sa.Boolean),
    sa.column("provenance", sa.JSON),
    sa.column("evaluator", sa.String(32)),
)
BEST = sa.table(
    "best_config",
    sa.column("id", sa.Integer),
    sa.column("device_id", sa.Integer),
    sa.column("shape_id", sa.Integer),
    sa.column("accuracy", sa.String(32)),
    sa.column("measurement_id", sa.Integer),
    sa.column("updated_at", sa.DateTime),
)


def upgrade() -> None:
    with op.batch_alter_table("measurement", recreate="never") as batch:
        batch.add_column(
            sa.Column("evaluator", sa.String(length=32), server_default=GPU, nullable=False)
        )
    connection = op.get_bind()
    connection.execute(
        sa.update(MEASUREMENT).where(_has_key(connection, REPLAYED_FROM)).values(evaluator=REPLAY)
    )
    replayed_bests = connection.execute(
        sa.select(BEST.c.id, BEST.c.device_id, BEST.c.shape_id, BEST.c.accuracy)
        .join(MEASUREMENT, MEASUREMENT.c.id == BEST.c.measurement_id)
        .where(MEASUREMENT.c.evaluator == REPLAY)
    ).all()
    for best_id, device_id, shape_id, accuracy in replayed_bests:
        measured = connection.execute(
            sa.select(MEASUREMENT.c.id)
            .where(
                MEASUREMENT.c.device_id == device_id,
                MEASUREMENT.c.shape_id == shape_id,
                MEASUREMENT.c.accuracy == accuracy,
                MEASUREMENT.c.evaluator == GPU,
                MEASUREMENT.c.status == "ok",
                MEASUREMENT.c.ms.is_not(None),
                MEASUREMENT.c.trusted.is_(True),
            )
            .order_by(
                sa.case((MEASUREMENT.c.phase == FINAL, 0), else_=1),
                MEASUREMENT.c.ms,
                MEASUREMENT.c.id,
            )
            .limit(1)
        ).scalar()
        if measured is None:
            connection.execute(sa.delete(BEST).where(BEST.c.id == best_id))
        else:
            connection.execute(
                sa.update(BEST)
                .where(BEST.c.id == best_id)
                .values(measurement_id=measured, updated_at=sa.func.now())
            )


def downgrade() -> None:
    with op.batch_alter_table("measurement", recreate="never") as batch:
        batch.drop_column("evaluator")


def _has_key(connection: sa.Connection, key: str) -> sa.TextClause:
    """Whether a measurement's provenance (a JSON object) has ``key``."""
    if connection.dialect.name == "postgresql":
        return sa.text(f"(provenance -> '{key}') IS NOT NULL")
    return sa.text(f"json_type(provenance, '$.{key}') IS NOT NULL")
