"""Layouts by the names of the four: stored ``row-major`` shapes become ``NN``.

Before this revision a shape's layout was always ``row-major`` (A and B as used, both stored
row by row); with four layouts (NN, NT, TN, TT in row-major terms) that one is ``NN``. Rows are
renamed in place, so their measurements and best configs keep pointing at them, and the
column's default follows. No ``NN`` row can exist beside a ``row-major`` one before the upgrade
(the name was not accepted), so the rename cannot break the (m, n, k, dtype, layout) key.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _rename(old: str, new: str) -> None:
    shape = sa.table("shape", sa.column("layout", sa.String(32)))
    op.execute(shape.update().where(shape.c.layout == old).values(layout=new))
    with op.batch_alter_table("shape") as batch:
        batch.alter_column(
            "layout", existing_type=sa.String(length=32), server_default=new, nullable=False
        )


def upgrade() -> None:
    _rename("row-major", "NN")


def downgrade() -> None:
    """Back to one layout: only NN shapes can be named ``row-major``; the others (NT, TN, TT)
    have no name there and are refused rather than silently merged."""
    shape = sa.table("shape", sa.column("layout", sa.String(32)))
    others = op.get_bind().execute(
        sa.select(sa.func.count()).select_from(shape).where(shape.c.layout != "NN")
    )
    if others.scalar():
        raise RuntimeError(
            "cannot downgrade below 0006: the database holds shapes of layouts NT, TN or TT, "
            "which revision 0005 cannot name; delete them first"
        )
    _rename("NN", "row-major")
