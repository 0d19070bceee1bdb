"""Progress bars on stderr for the long commands (tune, space --compile, import, export, bench).

A bar is drawn only when stderr is a terminal: piped or redirected output (logs, CI, tests)
stays free of bar frames. Library calls report through plain callbacks; these classes are the
callbacks, so the library never imports rich.
"""

from __future__ import annotations

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from tuner.cli._common import err
from tuner.study import Progress as StudyProgress


def _bar(*extra: TextColumn) -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        *extra,
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )


class StepBar:
    """One long step counted in items: ``advance()`` per item done, or ``bar(done, total)``
    from a library's ``(done, total)`` callback. Without a total it counts and spins."""

    def __init__(self, label: str, total: int | None = None) -> None:
        self.bar = _bar()
        self.task = self.bar.add_task(label, total=total)

    def __enter__(self) -> StepBar:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(None, None, None)

    def advance(self, count: int = 1) -> None:
        self.bar.advance(self.task, count)

    def __call__(self, done: int, total: int | None = None) -> None:
        if total is not None:
            self.bar.update(self.task, total=total)
        self.bar.update(self.task, completed=done)


class StudyBar:
    """A live line per study: candidates evaluated, best so far, TFLOP/s, % of cuBLAS (the
    runner's ``ProgressReport``)."""

    def __init__(self) -> None:
        self.bar = _bar(TextColumn("{task.fields[best]}"))
        self.task: TaskID | None = None

    def __enter__(self) -> StudyBar:
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
