"""A device row says whether a trusted writer vouched for it (``device.trusted``).

Until this revision any upload, trusted or not, could add a device row, and the answers used
every row to resolve a device by name: an untrusted upload under a known GPU's name with
another architecture made that name ambiguous and changed its answers. From now on a device is
trusted once a trusted writer stores anything for it, and only trusted devices resolve names.

The upgrade marks a stored device trusted when it has a trusted measurement, or probed rates,
or no measurement at all (registered by an import's device list, as only trusted tools do);
a device whose every measurement is untrusted stays untrusted. The downgrade drops the column.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DEVICE = sa.table("device", sa.column("id", sa.Integer), sa.column("trusted", sa.Boolean))
MEASUREMENT = sa.table(
    "measurement",
    sa.column("device_id", sa.Integer),
    sa.column("trusted", sa.Boolean),
)
RATES = sa.table("device_rates", sa.column("device_id", sa.Integer))


def upgrade() -> None:
    with op.batch_alter_table("device", recreate="never") as batch:
        batch.add_column(
            sa.Column("trusted", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    own = MEASUREMENT.c.device_id == DEVICE.c.id
    vouched = sa.or_(
        sa.exists().where(own, MEASUREMENT.c.trusted.is_(True)),
        sa.exists().where(RATES.c.device_id == DEVICE.c.id),
        ~sa.exists().where(own),
    )
    op.execute(sa.update(DEVICE).where(vouched).values(trusted=True))


def downgrade() -> None:
    with op.batch_alter_table("device", recreate="never") as batch:
        batch.drop_column("trusted")
