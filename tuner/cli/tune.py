"""``gemmtune tune`` and ``tune-batch``: one study per shape (logic in ``tuner.run.runner``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from storage import make_session_factory, open_engine
from tuner.cli._common import (
    AccuracyOpt,
    DbOpt,
    DtypeOpt,
    FamiliesOpt,
    GpusOpt,
    LayoutOpt,
    ReplayTablesOpt,
    SamplerOpt,
    SeedOpt,
    WarmStartOpt,
    out,
)
from tuner.cli._progress import StudyBar
from tuner.core.accuracy import DEFAULT_ACCURACY, check_accuracy
from tuner.core.shape import Shape, parse_shape
from tuner.data.shape_lists import read_shapes
from tuner.gpu.selection import choose_gpus
from tuner.run.multi_gpu import TuneSettings, start_workers, tune_shapes
from tuner.run.runner import (
    DEFAULT_TRIALS,
    WARM_START,
    check_answerable,
    check_evaluator,
    check_families,
    check_sampler,
)
from tuner.search.samplers import DEFAULT_SAMPLER
from tuner.search.study import Progress

TrialsOpt = Annotated[int | None, typer.Option(min=1, help="evaluated candidates in the study")]
EvaluatorOpt = Annotated[
    str,
    typer.Option(help="gpu (compile, verify and time on the CUDA GPU) or replay (sweep tables)"),
]


def tune(
    shape: Annotated[str, typer.Option("--shape", "-s", help="MxNxK")],
    dtype: DtypeOpt = "float32",
    layout: LayoutOpt = "NN",
    accuracy: AccuracyOpt = DEFAULT_ACCURACY,
    family: FamiliesOpt = None,
    trials: TrialsOpt = DEFAULT_TRIALS,
    timeout: Annotated[float | None, typer.Option(help="stop after this many seconds")] = None,
    sampler: SamplerOpt = DEFAULT_SAMPLER,
    evaluator: EvaluatorOpt = "gpu",
    replay_table: ReplayTablesOpt = None,
    seed: SeedOpt = None,
    warm_start: WarmStartOpt = WARM_START,
    db: DbOpt = None,
    gpus: GpusOpt = None,
) -> None:
    """Tune one shape; re-running the same command resumes the study."""
    _tune_shapes(
        [parse_shape(shape, dtype, layout)],
        accuracy,
        family,
        trials,
        timeout,
        sampler,
        evaluator,
        replay_table,
        seed,
        warm_start,
        db,
        gpus,
    )


def tune_batch(
    file: Annotated[
        Path,
        typer.Argument(
            help="CSV of M,N,K or class,M,N,K rows ('#' comments, an optional header row), "
            "e.g. tuner/data/suites/shapes.csv"
        ),
    ],
    dtype: DtypeOpt = "float32",
    layout: LayoutOpt = "NN",
    accuracy: AccuracyOpt = DEFAULT_ACCURACY,
    family: FamiliesOpt = None,
    trials: TrialsOpt = DEFAULT_TRIALS,
    timeout: Annotated[float | None, typer.Option(help="seconds per shape")] = None,
    sampler: SamplerOpt = DEFAULT_SAMPLER,
    evaluator: EvaluatorOpt = "gpu",
    replay_table: ReplayTablesOpt = None,
    seed: SeedOpt = None,
    warm_start: WarmStartOpt = WARM_START,
    db: DbOpt = None,
    gpus: GpusOpt = None,
) -> None:
    """Tune every shape of a CSV file, one study each, spread over the GPUs (resumable like
    ``tune``)."""
    _tune_shapes(
        read_shapes(file, dtype, layout),
        accuracy,
        family,
        trials,
        timeout,
        sampler,
        evaluator,
        replay_table,
        seed,
        warm_start,
        db,
        gpus,
    )


def _tune_shapes(
    shapes: list[Shape],
    accuracy: str,
    family: list[str] | None,
    trials: int | None,
    timeout: float | None,
    sampler: str,
    evaluator: str,
    replay_table: list[Path] | None,
    seed: int | None,
    warm_start: int,
    db: str | None,
    gpus: str | None,
) -> None:
    families = check_families(family, check_accuracy(accuracy))
    check_sampler(sampler)
    devices = choose_gpus(gpus, check_evaluator(evaluator))
    workers = start_workers(evaluator, devices, replay_table)
    first = workers.workers[0].evaluator
    try:
        check_answerable(first, shapes, families, accuracy)  # before the database is touched
        engine = open_engine(db, optuna_tables=True)
        sessions = make_session_factory(engine)
        settings = TuneSettings(
            families, sessions, db, sampler, trials, timeout, seed, warm_start, accuracy
        )
        with StudyBar() as bar:
            tune_shapes(shapes, workers, settings, new_report=bar.line, on_done=print_outcome)
        engine.dispose()  # the database file as the command leaves it, now
    finally:
        workers.close()


def print_outcome(p: Progress) -> None:
    statuses: dict[str, int] = {}
    for r in p.history:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    out.print(
        f"{p.study}: {p.evaluated} evaluated "
        f"({', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))})"
    )
    for note in p.notes:
        out.print(f"  {note}", soft_wrap=True)
    if p.best and p.best.ms:
        ratio = f", {p.best.ratio:.2f}x cuBLAS" if p.best.ratio else ""
        how = (
            f" (re-measured beside cuBLAS with {len(p.finalists) - 1} other finalists)"
            if p.finalists
            else ""
        )
        out.print(
            f"best {p.best.config_name}: {p.best.ms:.4f} ms, {p.best.tflops:.1f} TFLOP/s"
            f"{ratio}{how}",
            soft_wrap=True,
        )
