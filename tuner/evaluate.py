"""The evaluator interface: config + shape -> one measured (or failed) result.

Studies never know how a number was obtained. The GPU evaluator (``tuner.gpu_worker``) compiles,
verifies and times in an isolated worker process; the replay evaluator (``tuner.replay``) answers
from a committed table of real H100 measurements so whole studies run in CI without a GPU.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from storage import STATUSES  # why a candidate did not produce a time (storage owns the list)
from tuner.config import Config
from tuner.resources import DeviceLimits
from tuner.shape import Shape


@dataclass
class Result:
    """What one evaluation produced; numbers are None where the status does not give them."""

    config_name: str
    family: str
    params: dict[str, int]
    status: str
    reason: str | None = None
    ms: float | None = None
    tflops: float | None = None
    cublas_ms: float | None = None
    cublas_tflops: float | None = None
    ratio: float | None = None  # cuBLAS time / our time: > 1 means faster than cuBLAS
    rel_error: float | None = None
    registers: int | None = None
    smem_bytes: int | None = None
    occupancy: float | None = None
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {self.status!r}")

    @classmethod
    def failed(cls, config: Config, status: str, reason: str, **extra: Any) -> Result:
        return cls(config.name, config.family, config.as_dict(), status, reason, **extra)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Evaluator(Protocol):
    """Measures configs on one device. Implementations: GPU worker, replay table.

    Capabilities are declared, not discovered: ``families`` names the families the evaluator
    can answer for (empty: any), and ``measured_configs`` the configs it holds for a shape
    (``None``: any config; a replay returns the configs its tables hold, and a study of that
    shape searches only those).
    """

    device: DeviceLimits
    families: tuple[str, ...]

    def measured_configs(self, shape: Shape) -> set[str] | None:
        """The config names this evaluator can answer for ``shape``; None when unrestricted."""
        ...

    def evaluate(self, config: Config, shape: Shape) -> Result:
        """Evaluate one rule-valid config; never raises for a bad kernel (returns a status)."""
        ...

    def close(self) -> None: ...
