"""``gemmtune enqueue``: put shapes in the tuning queue for workers elsewhere, and return."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tuner.cli._common import (
    AccuracyOpt,
    DbOpt,
    DtypeOpt,
    FamiliesOpt,
    LayoutOpt,
    OutDtypeOpt,
    out,
)
from tuner.core.accuracy import DEFAULT_ACCURACY
from tuner.core.errors import InputError
from tuner.core.shape import parse_shape
from tuner.data.shape_lists import read_shapes
from tuner.run.request import TuneRequest


def enqueue(
    file: Annotated[
        Path | None,
        typer.Argument(help="CSV of shapes, as tune-batch reads (rows may name dtype and layout)"),
    ] = None,
    shape: Annotated[
        list[str] | None, typer.Option("--shape", "-s", help="MxNxK; repeatable")
    ] = None,
    dtype: DtypeOpt = "float32",
    layout: LayoutOpt = "NN",
    out_dtype: OutDtypeOpt = None,
    accuracy: AccuracyOpt = DEFAULT_ACCURACY,
    family: FamiliesOpt = None,
    trials: Annotated[
        int | None,
        typer.Option(min=1, help="each study's budget (default: the worker's --trials)"),
    ] = None,
    db: DbOpt = None,
) -> None:
    """Queue shapes for ``gemmtune worker`` processes on any machine that reaches the database,
    and return at once (``tune-batch --gpus`` queues and also runs its own workers)."""
    if (file is None) == (not shape):
        raise InputError("give a CSV file of shapes or --shape (one of the two)")
    if file is not None:
        shapes = tuple(read_shapes(file, dtype, layout, out_dtype))
    else:
        shapes = tuple(parse_shape(s, dtype, layout, out_dtype) for s in shape or ())
    request = TuneRequest(
        shapes=shapes,
        families=tuple(family or ()),
        accuracy=accuracy,
        trials=trials,
        database_url=db,
    )
    import storage
    from storage import tune_queue
    from tuner.run.worker_processes import problems_of

    problems = problems_of(request)  # refused here when no family computes a shape
    engine = storage.open_engine(request.database_url)
    try:
        with storage.make_session_factory(engine).begin() as session:
            added = tune_queue.enqueue(session, problems)
    finally:
        engine.dispose()
    already = len({p.key for p in problems}) - added
    note = f" ({already} already queued or tuned there)" if already else ""
    out.print(f"queued {added} shape{'' if added == 1 else 's'}{note}", markup=False)
