"""A worker's next study, built and prepared while its current study's last candidates and
finalists are measured.

Measuring the last candidates and re-measuring the finalists keeps the device busy for seconds
and the CPU nearly idle; preparing a study is the opposite: the next shape's space is
enumerated and ranked by the cost model, its warm starts read from the database and its first
candidates handed to the compile pool (NVRTC compiles are CPU work). Done one after the other,
the device waits for the preparation of every shape and for its first compiles. Done side by
side, from the moment the search has nothing more to propose (``tuner.run.multi_gpu``), the
next study's first candidates are usually compiled by the time the finalists are stored.

The preparation runs in a thread of the worker's process and shares its evaluator with the
finalists: it may only use what is safe beside a measurement in flight (the compile pools are;
:meth:`tuner.gpu.worker.GpuEvaluator.probe` asks its worker once per command, and the first
study of a worker is always prepared before anything is measured, so a prepared-ahead study
reads the probe's answer without touching the worker).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Lookahead(Generic[T]):
    """``build()`` started in a background thread now; :meth:`take` waits for what it built
    (or raises what it raised)."""

    def __init__(self, build: Callable[[], T], name: str = "lookahead") -> None:
        self._built: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(build,), name=name, daemon=True)
        self._thread.start()

    def _run(self, build: Callable[[], T]) -> None:
        try:
            self._built = build()
        except BaseException as exc:  # handed to whoever takes the result
            self._error = exc

    def take(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._built  # type: ignore[return-value]  # set when no error was raised


class StartOnce(Generic[T]):
    """A :class:`Lookahead` of ``build`` not started yet: :meth:`start` starts it the first time
    and does nothing after (a worker starts its next study when its search ends, or else when it
    leaves the study); ``started`` is it, or None while nobody has started it."""

    def __init__(self, build: Callable[[], T], name: str = "lookahead") -> None:
        self._build, self._name = build, name
        self.started: Lookahead[T] | None = None

    def start(self) -> None:
        if self.started is None:
            self.started = Lookahead(self._build, self._name)
