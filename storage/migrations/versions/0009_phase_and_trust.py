"""A measurement's phase (``screening`` or ``final``) and whether it is trusted become columns.

Until this revision both were conventions: a finalist's side-by-side re-measurement was stored
under its study's name with ``|finalists`` appended and ``"phase": "final"`` in its provenance,
and a result nobody could vouch for (an upload without the trusted token) had
``"trusted": false`` in its provenance. The upgrade reads those conventions once: a measurement
is ``final`` when either says so, and then belongs to its study (the suffix is dropped); it is
untrusted when its provenance says ``"trusted": false``. The keys it read leave the provenance,
so the columns are the only record of either. The downgrade writes the conventions back.

Only the rows that carry a convention are read and rewritten (finalists and uploads: a few per
study); the columns are added in place on both backends, every other row taking the defaults.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The conventions of revision 0008's code, as it wrote them.
FINALISTS_SUFFIX = "|finalists"
PHASE_KEY, FINAL = "phase", "final"
TRUSTED_KEY = "trusted"

MEASUREMENT = sa.table(
    "measurement",
    sa.column("id", sa.Integer),
    sa.column("study", sa.String(255)),
    sa.column("provenance", sa.JSON),
    sa.column("phase", sa.String(32)),
    sa.column("trusted", sa.Boolean),
)


def upgrade() -> None:
    with op.batch_alter_table("measurement", recreate="never") as batch:
        batch.add_column(
            sa.Column("phase", sa.String(length=32), server_default="screening", nullable=False)
        )
        batch.add_column(
            sa.Column("trusted", sa.Boolean(), server_default=sa.true(), nullable=False)
        )
    connection = op.get_bind()
    marked = sa.or_(
        MEASUREMENT.c.study.like("%" + FINALISTS_SUFFIX),
        _has_key(connection, PHASE_KEY),
        _has_key(connection, TRUSTED_KEY),
    )
    rows = connection.execute(
        sa.select(MEASUREMENT.c.id, MEASUREMENT.c.study, MEASUREMENT.c.provenance).where(marked)
    ).all()
    for row_id, study, provenance in rows:
        kept = dict(provenance or {})
        final = kept.get(PHASE_KEY) == FINAL
        if final:
            del kept[PHASE_KEY]
        if study is not None and study.endswith(FINALISTS_SUFFIX):
            final, study = True, study.removesuffix(FINALISTS_SUFFIX)
        trusted = kept.get(TRUSTED_KEY)
        if isinstance(trusted, bool):
            del kept[TRUSTED_KEY]
        _rewrite(connection, row_id, study, kept, phase=FINAL if final else "screening")
        if trusted is False:
            connection.execute(
                sa.update(MEASUREMENT).where(MEASUREMENT.c.id == row_id).values(trusted=False)
            )


def downgrade() -> None:
    connection = op.get_bind()
    rows = connection.execute(
        sa.select(
            MEASUREMENT.c.id,
            MEASUREMENT.c.study,
            MEASUREMENT.c.provenance,
            MEASUREMENT.c.phase,
            MEASUREMENT.c.trusted,
        ).where(sa.or_(MEASUREMENT.c.phase == FINAL, MEASUREMENT.c.trusted.is_(False)))
    ).all()
    for row_id, study, provenance, phase, trusted in rows:
        kept = dict(provenance or {})
        if phase == FINAL:
            kept[PHASE_KEY] = FINAL
            study = None if study is None else study + FINALISTS_SUFFIX
        if not trusted:
            kept[TRUSTED_KEY] = False
        _rewrite(connection, row_id, study, kept, phase=phase)
    with op.batch_alter_table("measurement", recreate="never") as batch:
        batch.drop_column("trusted")
        batch.drop_column("phase")


def _has_key(connection: sa.Connection, key: str) -> sa.TextClause:
    """Whether a measurement's provenance (a JSON object) has ``key``."""
    if connection.dialect.name == "postgresql":
        return sa.text(f"(provenance -> '{key}') IS NOT NULL")
    return sa.text(f"json_type(provenance, '$.{key}') IS NOT NULL")


def _rewrite(
    connection: sa.Connection,
    row_id: int,
    study: str | None,
    provenance: dict[str, Any],
    phase: str,
) -> None:
    connection.execute(
        sa.update(MEASUREMENT)
        .where(MEASUREMENT.c.id == row_id)
        .values(study=study, provenance=provenance, phase=phase)
    )
