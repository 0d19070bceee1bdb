"""``gemmtune report``: a bench result plus what tuning each shape cost, written as the suite
bests file the server preloads (logic in ``tuner.report.tuning_summary``). Needs no GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

import storage  # lazy (storage/__init__.py): SQLAlchemy only when a command opens the database
from tuner.cli._common import DbOpt, out
from tuner.data import read_suite_file, write_suite_file
from tuner.report.tuning_summary import DEFAULT_GAP_S, summary_document, tuning_cost


def report(
    bench: Annotated[Path, typer.Argument(help="a result of gemmtune bench (<device>-suite.json)")],
    out_file: Annotated[Path, typer.Option("--out", help="the suite bests file to write")],
    db: DbOpt = None,
    gap_s: Annotated[
        float,
        typer.Option(min=0.0, help="a pause between stored results longer than this is not tuning"),
    ] = DEFAULT_GAP_S,
    seeded: Annotated[
        Path | None,
        typer.Option(help="the earlier suite bests the database was seeded with (its preload)"),
    ] = None,
) -> None:
    """Add to each shape of a bench result the studies, candidates and wall time its tuning
    took, from the tuning database, and write the suite bests file."""
    measured = read_suite_file(bench)
    earlier = read_suite_file(seeded) if seeded is not None else None
    with storage.open_existing_database(db)() as session:
        cost = tuning_cost(session, measured.document["device"], gap_s)
    document = summary_document(measured, cost, gap_s, earlier)
    write_suite_file(out_file, document)
    out.print(f"wrote {out_file}: {len(document['shapes'])} shapes", markup=False, soft_wrap=True)
