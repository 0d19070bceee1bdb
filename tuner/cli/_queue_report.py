"""What a run of queue workers prints: their lines, the batch's progress, and how it ended
(``gemmtune worker --gpus``, and ``tune`` / ``tune-batch`` with several GPUs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from tuner.cli._common import err, out

if TYPE_CHECKING:
    from storage.tune_queue import BatchProgress
    from tuner.run.worker_processes import QueueRun


def relay_line(label: str, line: str, is_err: bool) -> None:
    """A worker process's line, prefixed with its GPU."""
    (err if is_err else out).print(f"{label}: {line}", soft_wrap=True, markup=False)


def print_database_note(database_url: str | None, workers: int) -> None:
    """Before ``workers`` worker processes start: the note on their database, if it has one
    (``tuner.run.worker_processes.database_note``)."""
    from tuner.run.worker_processes import database_note

    note = database_note(database_url, workers)
    if note is not None:
        err.print(note, soft_wrap=True)


def print_batch_progress(progress: BatchProgress, seconds: float) -> None:
    minutes = max(seconds, 1e-9) / 60
    failed = f", {progress.failed} failed" if progress.failed else ""
    out.print(
        f"shapes {progress.done}/{progress.total} done{failed} in {seconds:.0f} s: "
        f"{progress.done / minutes:.1f} shapes/min, {progress.evaluated / minutes:.0f} "
        "candidates/min"
    )


def report_queue_run(run: QueueRun) -> None:
    """What ``tune --gpus`` and ``tune-batch --gpus`` say at the end of a queue run."""
    for failed in run.failed_workers:
        err.print(f"worker {failed}; its share went to the others", soft_wrap=True)
    for error in run.errors:
        err.print(f"failed: {error}", soft_wrap=True)
    if run.progress.failed or not run.progress.finished:
        raise typer.Exit(1)
