"""Progress bars on stderr for the long commands (tune, space --compile, import, export, bench:
its shapes and, under them, the candidates of the shape being tuned).

A bar is drawn only when stderr is a terminal: piped or redirected output (logs, CI, tests)
stays free of bar frames. Library calls report through plain callbacks; these classes are the
callbacks, so the library never imports rich.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

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

if TYPE_CHECKING:
    from tuner.search.study import Progress as StudyProgress


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
    """Live lines, one per study: candidates evaluated, best so far, TFLOP/s, % of cuBLAS
    (several at once when studies run on several GPUs); with ``pace``, also the command's
    candidates and shapes a minute so far (``gemmtune tune-batch``)."""

    def __init__(self, pace: bool = False) -> None:
        self.bar = _bar(TextColumn("{task.fields[best]}"))
        self.pace = pace
        self.started = time.perf_counter()
        self.new: dict[int, int] = {}  # candidates evaluated by this command, per line
        self.shapes_done = 0

    def __enter__(self) -> StudyBar:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(None, None, None)

    def line(self) -> StudyLine:
        return StudyLine(self.bar, self)

    def shape_finished(self) -> None:
        self.shapes_done += 1

    def pace_text(self) -> str:
        """The command's rates so far, or nothing when not asked for."""
        if not self.pace:
            return ""
        minutes = max(time.perf_counter() - self.started, 1e-9) / 60.0
        text = f"{sum(self.new.values()) / minutes:.0f} candidates/min"
        if self.shapes_done:
            text += f", {self.shapes_done / minutes:.2f} shapes/min"
        return text


class StudyLine:
    """One study's line of a :class:`StudyBar`, shown once the study starts (the runner's
    ``ProgressReport``)."""

    def __init__(self, bar: Progress, owner: StudyBar | None = None) -> None:
        self.bar = bar
        self.owner = owner
        self.task: TaskID | None = None

    def start(self, label: str, total: int) -> None:
        self.task = self.bar.add_task(label, total=total, best="")

    def update(self, p: StudyProgress) -> None:
        if self.task is None:
            return
        best = ""
        if p.best and p.best.tflops:
            pct = f", {100 * p.best.ratio:.0f}% of cuBLAS" if p.best.ratio else ""
            best = f"best {p.best.tflops:.1f} TFLOP/s{pct}"
        if self.owner is not None:
            self.owner.new[id(self)] = p.evaluated - p.earlier
            pace = self.owner.pace_text()
            best = f"{best} · {pace}" if best and pace else best or pace
        self.bar.update(self.task, completed=p.evaluated, best=best)


class SuiteBar(StudyBar):
    """``gemmtune bench``: the suite's shapes done, and under it the candidates of the shape
    being tuned now (a shape whose best config is stored is re-measured without a study); the
    runner's ``ProgressReport`` of each study in turn."""

    def __init__(self, shapes: int) -> None:
        super().__init__()
        self.shapes = self.bar.add_task("suite shapes", total=shapes, best="")
        self.study: StudyLine | None = None

    def __enter__(self) -> SuiteBar:
        super().__enter__()
        return self

    def start(self, label: str, total: int) -> None:
        if self.study is not None and self.study.task is not None:
            self.bar.remove_task(self.study.task)
        self.study = self.line()
        self.study.start(f"  tuning {label}", total)

    def update(self, p: StudyProgress) -> None:
        if self.study is not None:
            self.study.update(p)

    def shape_done(self) -> None:
        self.bar.advance(self.shapes)
