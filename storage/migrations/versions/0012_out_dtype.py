"""The type of C becomes part of a shape: ``shape.out_dtype``, in the shape's unique key.

Until this revision every kernel wrote float32 C, whatever its inputs, so every stored shape (and
with it every measurement and best config) was measured writing float32: the column is added
with that value for the rows already there. The unique key grows from (m, n, k, dtype, layout)
to (m, n, k, dtype, layout, out_dtype), so a bfloat16 shape writing bfloat16 C is a row beside
the same shape writing float32 C, with its own measurements and best configs.

The downgrade refuses a database that holds shapes writing another type of C (revision 0011
cannot tell them from the float32 ones, and merging them would mix measurements of two
products) rather than silently dropping or merging them.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# What every kernel wrote before this revision.
STORED_OUT_DTYPE = "float32"
OLD_KEY = "uq_shape_m_n_k_dtype_layout"
NEW_KEY = "uq_shape_m_n_k_dtype_layout_out_dtype"


def upgrade() -> None:
    # SQLite cannot alter a constraint in place: batch mode rebuilds the table there (the
    # shape table is small: one row per problem), and alters it in place on PostgreSQL.
    with op.batch_alter_table("shape") as batch:
        batch.add_column(
            sa.Column(
                "out_dtype",
                sa.String(length=32),
                server_default=STORED_OUT_DTYPE,
                nullable=False,
            )
        )
        batch.drop_constraint(OLD_KEY, type_="unique")
        batch.create_unique_constraint(NEW_KEY, ["m", "n", "k", "dtype", "layout", "out_dtype"])


def downgrade() -> None:
    shape = sa.table("shape", sa.column("out_dtype", sa.String(32)))
    others = op.get_bind().execute(
        sa.select(sa.func.count()).select_from(shape).where(shape.c.out_dtype != STORED_OUT_DTYPE)
    )
    if others.scalar():
        raise RuntimeError(
            "cannot downgrade below 0012: the database holds shapes writing float16 or bfloat16 "
            "C, which revision 0011 cannot tell from float32 ones; delete them first"
        )
    with op.batch_alter_table("shape") as batch:
        batch.drop_constraint(NEW_KEY, type_="unique")
        batch.create_unique_constraint(OLD_KEY, ["m", "n", "k", "dtype", "layout"])
        batch.drop_column("out_dtype")
