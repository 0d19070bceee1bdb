"""Where a study's results go: the SQL database (``storage``), or memory for sampler research.

The study talks to a :class:`Recorder` only, so the same loop runs against SQLite, PostgreSQL
(shared by several workers) or nothing at all.
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from typing import Protocol

from tuner.core.claims import Claimed
from tuner.core.phases import Phase
from tuner.core.result import Result
from tuner.core.shape import Shape
from tuner.kernels.resources import DeviceLimits
from tuner.model.rates import DeviceRates
from tuner.search.samplers import Observation


class Recorder(Protocol):
    """Stores evaluated candidates and tells a study what is already done."""

    def record(
        self,
        result: Result,
        device: DeviceLimits,
        shape: Shape,
        study: str,
        trial_number: int | None,
        phase: Phase = Phase.SCREENING,
    ) -> None:
        """Store one evaluated candidate (any status), durably, before the study moves on: a
        screening trial of ``study``, or one of its finalists' re-measurements (``phase`` final,
        never read back by :meth:`evaluated` or :meth:`recent`)."""
        ...

    def number(self, study: str, config_name: str, trial_number: int) -> None:
        """Give a recorded candidate the number of its trial in the persistent Optuna study
        (written after the measurement, so a crash between the two leaves no extra trial)."""
        ...

    def trial_lock(self, study: str) -> AbstractContextManager[object]:
        """Held by whoever checks that a candidate has no trial in the persistent Optuna study
        and then adds it (``tuner.search.trial_mirror``), across every worker of the study."""
        ...

    def evaluated(self, study: str) -> dict[str, Result]:
        """Config name -> result, for every candidate this study has already screened."""
        ...

    def recent(self, study: str) -> dict[str, Result]:
        """Config name -> result of the candidates stored (by any worker) since this recorder
        last read the study (:meth:`evaluated` or :meth:`recent`)."""
        ...

    def claim(self, study: str, config_name: str, budget: int | None = None) -> Claimed:
        """Reserve a candidate for this worker: HELD if another worker has it already (a claim
        whose worker died expires, and is then taken again), FULL if the study already holds
        ``budget`` claimed candidates (all workers together)."""
        ...

    def held_elsewhere(self, study: str) -> set[str]:
        """Candidates other workers are measuring now (their claims are alive): their results
        will come, so a study that has nothing else to do waits for them."""
        ...

    def claimed(self, study: str) -> int:
        """Candidates of ``study`` that count against its budget now (every worker's): what
        :meth:`claim` compares with ``budget``."""
        ...

    def release(self, study: str, config_name: str) -> None:
        """Give back a claimed candidate this worker will not measure."""
        ...

    def neighbours(self, device: DeviceLimits, shape: Shape, limit: int) -> list[str]:
        """Best config names of the tuned shapes nearest to ``shape`` on ``device``."""
        ...

    def history(
        self, device: DeviceLimits, dtype: str, layout: str, out_dtype: str
    ) -> list[Observation]:
        """The fastest ok time of every (shape, config) measured on ``device`` for ``dtype``
        inputs in ``layout`` writing ``out_dtype`` C."""
        ...

    def rates(self, device: DeviceLimits) -> DeviceRates | None:
        """The rates probed on ``device``, if any were stored."""
        ...

    def record_rates(self, device: DeviceLimits, rates: DeviceRates) -> None:
        """Store rates probed on ``device``."""
        ...


class MemoryRecorder:
    """Keeps results in memory: for tests and sampler research (one process). ``history``
    seeds what the device "measured before" (a replay of other shapes, for transfer).
    ``results`` holds each study's screening trials, ``finals`` its finalists'
    re-measurements."""

    def __init__(self, history: list[Observation] | None = None) -> None:
        self.results: dict[str, dict[str, Result]] = {}
        self.finals: dict[str, dict[str, Result]] = {}
        self.claims: set[tuple[str, str]] = set()
        self.observations: list[Observation] = list(history or [])
        self.probed: dict[str, DeviceRates] = {}
        self._trial_lock = threading.Lock()  # one process: its workers are threads

    def record(
        self,
        result: Result,
        device: DeviceLimits,
        shape: Shape,
        study: str,
        trial_number: int | None,
        phase: Phase = Phase.SCREENING,
    ) -> None:
        kept = self.finals if phase == Phase.FINAL else self.results
        kept.setdefault(study, {})[result.config_name] = result
        if result.status == "ok" and result.ms is not None:
            self.observations.append(Observation(shape, result.config_name, result.ms))

    def number(self, study: str, config_name: str, trial_number: int) -> None:
        pass  # results in memory carry no trial numbers

    def trial_lock(self, study: str) -> AbstractContextManager[object]:
        return self._trial_lock

    def evaluated(self, study: str) -> dict[str, Result]:
        return dict(self.results.get(study, {}))

    def recent(self, study: str) -> dict[str, Result]:
        return {}  # one process: nothing is stored behind the study's back

    def claim(self, study: str, config_name: str, budget: int | None = None) -> Claimed:
        if (study, config_name) in self.claims:
            return Claimed.HELD
        if budget is not None and sum(name == study for name, _ in self.claims) >= budget:
            return Claimed.FULL
        self.claims.add((study, config_name))
        return Claimed.TAKEN

    def held_elsewhere(self, study: str) -> set[str]:
        return set()  # one process: a claim without a result is an orphan, never measured

    def claimed(self, study: str) -> int:
        return sum(name == study for name, _ in self.claims)

    def release(self, study: str, config_name: str) -> None:
        self.claims.discard((study, config_name))

    def neighbours(self, device: DeviceLimits, shape: Shape, limit: int) -> list[str]:
        return []

    def history(
        self, device: DeviceLimits, dtype: str, layout: str, out_dtype: str
    ) -> list[Observation]:
        return list(self.observations)

    def rates(self, device: DeviceLimits) -> DeviceRates | None:
        return self.probed.get(device.name)

    def record_rates(self, device: DeviceLimits, rates: DeviceRates) -> None:
        self.probed[device.name] = rates
