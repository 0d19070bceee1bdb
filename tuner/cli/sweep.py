"""``gemmtune sweep``: measure every candidate of some families on some shapes into a sweep table
(logic in ``tuner.run.sweep``).

It needs a CUDA GPU: without one it ends with exit code 2 and one line, after the arguments
are checked and before anything is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tuner.cli._common import out
from tuner.core.shape import parse_shape


def sweep(
    family: Annotated[
        list[str], typer.Option("--family", "-f", help="repeatable: the families to sweep")
    ],
    shape: Annotated[list[str], typer.Option("--shape", help="repeatable: MxNxK (float32 NN)")],
    out_table: Annotated[Path, typer.Option("--out", help="the sweep table to write (JSON lines)")],
    resume: Annotated[
        list[Path] | None,
        typer.Option(help="repeatable: tables of earlier pieces; their rows are not measured"),
    ] = None,
    budget_ms: Annotated[
        float, typer.Option(min=0.001, help="timed kernel milliseconds per config")
    ] = 25.0,
    max_minutes: Annotated[
        float, typer.Option(min=0.001, help="stop measuring after this long")
    ] = 9.0,
    where: Annotated[
        list[str] | None,
        typer.Option(help="repeatable: NAME=V1,V2 keeps the configs whose NAME is listed"),
    ] = None,
) -> None:
    """Measure every candidate of the families on the shapes on the GPU and write a sweep table,
    the data replay, priors and the server's preload read."""
    # The sweep loop and the GPU worker only when a sweep runs, not for `gemmtune --help`.
    from tuner.run.runner import start_gpu
    from tuner.run.sweep import SweepRequest, parse_where, run_sweep

    request = SweepRequest(
        tuple(family),
        tuple(parse_shape(text) for text in shape),
        out_table,
        tuple(resume or ()),
        budget_ms,
        max_minutes,
        parse_where(where or ()),
    ).checked()
    evaluator = start_gpu("gemmtune sweep", budget_ms)
    try:
        outcome = run_sweep(
            request, evaluator, lambda line: out.print(line, markup=False, soft_wrap=True)
        )
    finally:
        evaluator.close()
    ending = ", cut short by --max-minutes" if outcome.cut_short else ""
    out.print(f"wrote {outcome.rows} rows to {out_table}{ending}", markup=False, soft_wrap=True)
