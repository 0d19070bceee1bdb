"""What the command modules share: the consoles, the option types, and a progress bar."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from tuner.families import FAMILIES
from tuner.runner import DEFAULT_FAMILIES
from tuner.samplers import SAMPLERS
from tuner.study import Progress as StudyProgress

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db", help="SQLAlchemy URL; default $GEMMTUNE_DATABASE_URL or sqlite:///gemmtune.db"
    ),
]
FamiliesOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--family",
        "-f",
        help=f"repeatable; default {', '.join(DEFAULT_FAMILIES)} (a replay table: its own) "
        f"({', '.join(FAMILIES)})",
    ),
]
ReplayTablesOpt = Annotated[
    list[Path] | None,
    typer.Option(
        help="JSON lines from benchmarks/sweep.py; repeatable: tables of one device merge, "
        "a later table's row winning (default h100-sweep.jsonl in the results folder: "
        "$GEMMTUNE_RESULTS_DIR, the checkout's benchmarks/results or the installed copy)"
    ),
]
WarmStartOpt = Annotated[
    int,
    typer.Option(
        "--warm-start",
        min=0,
        help="a new study first evaluates up to this many configs: the committed suite's best "
        "for the shape on this GPU, then the bests of the nearest shapes (0: none)",
    ),
]
SamplerOpt = Annotated[str, typer.Option(help=", ".join(SAMPLERS))]
SeedOpt = Annotated[int | None, typer.Option(help="sampler seed")]


class ProgressBar:
    """A live line per study: candidates evaluated, best so far, TFLOP/s, % of cuBLAS."""

    def __init__(self) -> None:
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[best]}"),
            TimeElapsedColumn(),
        )
        self.bar = Progress(*columns, console=err, transient=False)
        self.task: TaskID | None = None

    def __enter__(self) -> ProgressBar:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(None, None, None)

    def start(self, label: str, total: int) -> None:
        self.task = self.bar.add_task(label, total=total, best="")

    def update(self, p: StudyProgress) -> None:
        if self.task is None:
            return
        best = ""
        if p.best and p.best.tflops:
            pct = f", {100 * p.best.ratio:.0f}% of cuBLAS" if p.best.ratio else ""
            best = f"best {p.best.tflops:.1f} TFLOP/s{pct}"
        self.bar.update(self.task, completed=p.evaluated, best=best)
