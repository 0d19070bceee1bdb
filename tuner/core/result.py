"""What one evaluation of a config produced, and a side-by-side re-measurement beside cuBLAS.

Plain values every wing passes around: the evaluators make them, the study records them, the
results files (sweep tables) are rows of them.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from tuner.core.config import Config
from tuner.core.evaluators import EVALUATORS, EvaluatorKind
from tuner.core.statuses import STATUSES


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
    # What produced it (``tuner.core.evaluators``): a replayed result never becomes a best config.
    evaluator: str = EvaluatorKind.GPU.value

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, got {self.status!r}")
        if self.evaluator not in EVALUATORS:
            raise ValueError(
                f"evaluator must be one of {', '.join(EVALUATORS)}, got {self.evaluator!r}"
            )

    @classmethod
    def failed(cls, config: Config, status: str, reason: str, **extra: Any) -> Result:
        return cls(config.name, config.family, config.as_dict(), status, reason, **extra)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Comparison:
    """One config re-measured side by side with cuBLAS: one median per alternating round
    (ours, cuBLAS, ours, ...), on the same operands, after a correctness check."""

    config_name: str
    status: str
    reason: str | None = None
    ms_rounds: tuple[float, ...] = ()
    cublas_ms_rounds: tuple[float, ...] = ()
    rel_error: float | None = None
    # What the re-measurement adds to a result's provenance: a vendor library's algorithm
    # (``tuner.gpu.vendor_launch``), empty for a kernel of ours.
    provenance: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ms(self) -> float | None:
        return statistics.median(self.ms_rounds) if self.ms_rounds else None

    @property
    def cublas_ms(self) -> float | None:
        return statistics.median(self.cublas_ms_rounds) if self.cublas_ms_rounds else None

    @property
    def ratio(self) -> float | None:
        ours, theirs = self.ms, self.cublas_ms
        return theirs / ours if ours and theirs else None
