"""``gemmtune tune`` and ``tune-batch``: one study per shape (logic in ``tuner.run.tune``)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tuner.cli._common import (
    AccuracyOpt,
    DbOpt,
    DtypeOpt,
    FamiliesOpt,
    GpusOpt,
    LayoutOpt,
    OutDtypeOpt,
    ReplayTablesOpt,
    SamplerOpt,
    SeedOpt,
    WarmStartOpt,
    out,
)
from tuner.cli._progress import StudyBar
from tuner.core.accuracy import DEFAULT_ACCURACY
from tuner.core.shape import Shape, parse_shape
from tuner.data.shape_lists import read_shapes
from tuner.run.request import DEFAULT_TRIALS, WARM_START, TuneRequest
from tuner.search.sampler_names import DEFAULT_SAMPLER

if TYPE_CHECKING:
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
    out_dtype: OutDtypeOpt = None,
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
    shapes = (parse_shape(shape, dtype, layout, out_dtype),)
    options = (family, accuracy, sampler, seed, trials, timeout, warm_start, evaluator)
    _run(_request(shapes, *options, replay_table, db, gpus), pace=False)


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
    out_dtype: OutDtypeOpt = None,
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
    ``tune``); at the end, the shapes and candidates a minute."""
    shapes = tuple(read_shapes(file, dtype, layout, out_dtype))
    options = (family, accuracy, sampler, seed, trials, timeout, warm_start, evaluator)
    _run(_request(shapes, *options, replay_table, db, gpus), pace=True)


def _request(
    shapes: tuple[Shape, ...],
    family: list[str] | None,
    accuracy: str,
    sampler: str,
    seed: int | None,
    trials: int | None,
    timeout: float | None,
    warm_start: int,
    evaluator: str,
    replay_table: list[Path] | None,
    db: str | None,
    gpus: str | None,
) -> TuneRequest:
    """The request both commands make of their options (one place, so they cannot differ)."""
    return TuneRequest(
        shapes=shapes,
        families=tuple(family or ()),
        accuracy=accuracy,
        sampler=sampler,
        seed=seed,
        trials=trials,
        timeout=timeout,
        warm_start=warm_start,
        evaluator=evaluator,
        replay_tables=tuple(replay_table or ()),
        database_url=db,
        gpus=gpus,
    )


def _run(request: TuneRequest, pace: bool) -> None:
    """Run the request with progress lines; with ``pace``, print the command's shapes and
    candidates a minute at the end (over its wall time, workers' start included). On several GPUs,
    a worker process per GPU takes the shapes from the queue and reports its own pace."""
    from tuner.gpu.selection import choose_gpus

    devices = choose_gpus(request.gpus, request.evaluator)
    if len(devices) > 1:  # a worker process per GPU, taking the shapes from the queue
        from tuner.cli._queue_report import (
            print_batch_progress,
            print_database_note,
            relay_line,
            report_queue_run,
        )
        from tuner.run.worker_processes import tune_on_processes

        print_database_note(request.database_url, len(devices))
        report_queue_run(tune_on_processes(request, devices, relay_line, print_batch_progress))
        return
    from tuner.run.pace import Pace
    from tuner.run.tune import tune as tune_all  # the study loop: Optuna, SQLAlchemy, CuPy

    with StudyBar(pace) as bar:

        def done(p: Progress) -> None:
            bar.shape_finished()
            print_outcome(p)

        outcomes = tune_all(request, new_report=bar.line, on_done=done)
    if pace:
        out.print(Pace.of(outcomes, time.perf_counter() - bar.started).summary(), soft_wrap=True)


SEARCH_PARTS = ("propose", "compile_wait", "measure", "record", "others")
# The parts of a study's steps, as its clock names them (``tuner.search.study``).
STEP_PARTS = {
    "prepare": ("space", "sampler", "storage"),
    "search": SEARCH_PARTS,
    "finalists": ("final_compiles",),
}
NESTED_PARTS = frozenset(part for parts in STEP_PARTS.values() for part in parts)


def seconds_line(seconds: dict[str, float]) -> str:
    """Where a study's seconds went, one line: its steps, and each step's parts in brackets
    (``Progress.seconds``)."""
    inner = {
        step: ", ".join(f"{k} {seconds[k]:.1f}" for k in parts if k in seconds)
        for step, parts in STEP_PARTS.items()
    }
    steps = [
        f"{k} {v:.1f}" + (f" ({inner[k]})" if inner.get(k) else "")
        for k, v in seconds.items()
        if k not in NESTED_PARTS
    ]
    return "seconds: " + ", ".join(steps)


def print_outcome(p: Progress) -> None:
    statuses: dict[str, int] = {}
    for r in p.history:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    out.print(
        f"{p.study}: {p.evaluated} evaluated "
        f"({', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))})",
        soft_wrap=True,  # one line, as the lines below: a reader of the output parses it
    )
    for note in p.notes:
        out.print(f"  {note}", soft_wrap=True)
    if p.seconds:
        out.print(f"  {seconds_line(p.seconds)}", soft_wrap=True)
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
