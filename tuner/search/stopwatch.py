"""Where a study's seconds went: a stopwatch that adds up the time spent in named parts.

A study reports it with its outcome (``Progress.seconds``), so that a user, or a benchmark,
can tell a study that waited for its compiles from one that waited for the device, the
database, other workers or its finalists, without a profiler.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


class Stopwatch:
    """Seconds spent in each named part, summed over every time it was entered."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - began)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def rounded(self) -> dict[str, float]:
        """The parts, in the order first entered, to the millisecond."""
        return {name: round(value, 3) for name, value in self.seconds.items()}
