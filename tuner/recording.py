"""Where a study's results go: the SQL database (``storage``), or memory for sampler research.

The study talks to a :class:`Recorder` only, so the same loop runs against SQLite, PostgreSQL
(shared by several workers) or nothing at all.
"""

from __future__ import annotations

from typing import Protocol

from tuner.evaluate import Result
from tuner.resources import DeviceLimits
from tuner.shape import Shape


class Recorder(Protocol):
    """Stores evaluated candidates and tells a study what is already done."""

    def record(
        self,
        result: Result,
        device: DeviceLimits,
        shape: Shape,
        study: str,
        trial_number: int | None,
    ) -> None:
        """Store one evaluated candidate (any status), durably, before the study moves on."""
        ...

    def evaluated(self, study: str) -> dict[str, Result]:
        """Config name -> result, for every candidate this study has already evaluated."""
        ...

    def claim(self, study: str, config_name: str) -> bool:
        """Reserve a candidate for this worker; False if another worker has it already."""
        ...

    def neighbours(self, device: DeviceLimits, shape: Shape, limit: int) -> list[str]:
        """Best config names of the tuned shapes nearest to ``shape`` on ``device``."""
        ...


class MemoryRecorder:
    """Keeps results in a dict: for tests and sampler benchmarks (one process)."""

    def __init__(self) -> None:
        self.results: dict[str, dict[str, Result]] = {}
        self.claims: set[tuple[str, str]] = set()

    def record(
        self,
        result: Result,
        device: DeviceLimits,
        shape: Shape,
        study: str,
        trial_number: int | None,
    ) -> None:
        self.results.setdefault(study, {})[result.config_name] = result

    def evaluated(self, study: str) -> dict[str, Result]:
        return dict(self.results.get(study, {}))

    def claim(self, study: str, config_name: str) -> bool:
        if (study, config_name) in self.claims:
            return False
        self.claims.add((study, config_name))
        return True

    def neighbours(self, device: DeviceLimits, shape: Shape, limit: int) -> list[str]:
        return []
