"""The evaluator interface: config + shape -> one measured (or failed) result.

Studies never know how a number was obtained. The GPU evaluator (``tuner.gpu.worker``) compiles
ahead on every core, verifies and times in an isolated worker process; the replay evaluator
(``tuner.search.replay``) answers from committed tables of real H100 measurements so whole studies
run in CI without a GPU. Both re-measure a study's finalists side by side with cuBLAS
(:meth:`Evaluator.compare`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tuner.core.config import Config
from tuner.core.result import Comparison, Result
from tuner.core.shape import Shape
from tuner.kernels.resources import DeviceLimits
from tuner.model.rates import DeviceRates


@dataclass
class Ticket:
    """A candidate whose evaluation :meth:`Evaluator.start` began; :meth:`Evaluator.finish`
    gives its result. ``result`` is set at once when no device work was needed (a config that
    does not fit or compile, a replayed answer)."""

    config: Config
    shape: Shape
    result: Result | None = None


class EvaluatesAtOnce:
    """``start`` and ``finish`` for an evaluator with no device to keep busy (a replay, a fake):
    the ticket carries the result of :meth:`evaluate` from the start."""

    def evaluate(self, config: Config, shape: Shape) -> Result:
        raise NotImplementedError

    def ready(self, config: Config) -> bool:
        return True  # nothing is prepared in the background

    def start(self, config: Config, shape: Shape) -> Ticket:
        return Ticket(config, shape, self.evaluate(config, shape))

    def finish(self, ticket: Ticket) -> Result:
        assert ticket.result is not None
        return ticket.result


class Evaluator(Protocol):
    """Measures configs on one device. Implementations: the GPU worker, a replay of tables.

    Capabilities are declared, not discovered: ``families`` names the families the evaluator
    can answer for (empty: any), and ``measured_configs`` the configs it holds for a shape
    (``None``: any config; a replay returns the configs its tables hold, and a study of that
    shape searches only those). ``parallelism`` says how many candidates are worth preparing
    ahead of the one being measured (1: none). ``kind`` says what its results are
    (``tuner.core.evaluators``): ``gpu`` measurements, or ``replay`` answers from tables, which
    never become a device's best config.

    :meth:`start` and :meth:`finish` split :meth:`evaluate` so that a study keeps the device
    busy with the next candidate while it records the last one: finish tickets in the order
    they were started.
    """

    device: DeviceLimits
    families: tuple[str, ...]
    provenance: dict[str, Any]
    parallelism: int
    kind: str

    def measured_configs(self, shape: Shape) -> set[str] | None:
        """The config names this evaluator can answer for ``shape``; None when unrestricted."""
        ...

    def prepare(self, config: Config) -> None:
        """Start what precedes measuring ``config`` (compiling) in the background, so that
        :meth:`evaluate` finds it done; an evaluator with nothing to prepare does nothing."""
        ...

    def ready(self, config: Config) -> bool:
        """True when :meth:`start` on ``config`` would not wait for what :meth:`prepare` began
        (its compile), so a study can measure whichever of its proposals is ready first."""
        ...

    def evaluate(self, config: Config, shape: Shape) -> Result:
        """Evaluate one rule-valid config; never raises for a bad kernel (returns a status)."""
        ...

    def start(self, config: Config, shape: Shape) -> Ticket:
        """Begin evaluating ``config`` (the device may still be busy with an earlier one)."""
        ...

    def finish(self, ticket: Ticket) -> Result:
        """The result of the oldest started ticket, ``ticket``."""
        ...

    def compare(
        self,
        configs: Sequence[Config],
        shape: Shape,
        rounds: int,
        budget_ms: float | None = None,
    ) -> list[Comparison]:
        """Re-measure ``configs`` side by side with cuBLAS in ``rounds`` alternating rounds of
        ``budget_ms`` of launches per timed block (None: the evaluator's own); one
        :class:`Comparison` per config, in order."""
        ...

    def probe(self) -> DeviceRates | None:
        """The device's rates, measured now (``tuner.gpu.probes``); None when it cannot probe."""
        ...

    def close(self) -> None:
        """Release what the evaluator holds (worker processes, pools); idempotent."""
        ...
