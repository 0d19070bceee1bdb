"""Plain-value inputs to the write path, validated once at the boundary.

Storage stays independent of ``tuner``: callers translate their own objects into these small
frozen dataclasses (ints, strings, dicts), and every check here names the offending field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

STATUSES: tuple[str, ...] = (
    "ok",
    "invalid",
    "pruned",
    "compile_failed",
    "launch_failed",
    "wrong_result",
    "timeout",
)


def _check_text(name: str, value: object, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"`{name}` must be a non-empty string, got {value!r}")


def _check_int(name: str, value: object, *, minimum: int, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r}")


def _check_number(name: str, value: object, *, positive: bool = False) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"`{name}` must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise ValueError(f"`{name}` must be > 0, got {value!r}")


@dataclass(frozen=True)
class DeviceIn:
    """A GPU as the tuner saw it; ``(name, arch, sm_count)`` identifies it (MIG slices differ)."""

    name: str
    arch: str
    sm_count: int

    def __post_init__(self) -> None:
        _check_text("name", self.name)
        _check_text("arch", self.arch)
        _check_int("sm_count", self.sm_count, minimum=1)


@dataclass(frozen=True)
class ShapeIn:
    """A GEMM problem; dtype and layout are part of the key because they change the answer."""

    m: int
    n: int
    k: int
    dtype: str = "float32"
    layout: str = "row-major"

    def __post_init__(self) -> None:
        for dim in ("m", "n", "k"):
            _check_int(dim, getattr(self, dim), minimum=1)
        _check_text("dtype", self.dtype)
        _check_text("layout", self.layout)


@dataclass(frozen=True)
class MeasurementIn:
    """One evaluated candidate, failed or not.

    ``ratio`` is cuBLAS time / our time (> 1 means faster than cuBLAS); left as ``None`` it is
    derived from ``cublas_ms / ms`` when both are known. ``created_at`` is normally left to the
    database; imports pass the original timestamp so that re-importing is idempotent.
    """

    family: str
    config_name: str
    params: Mapping[str, int]
    status: str = "ok"
    reason: str | None = None
    ms: float | None = None
    tflops: float | None = None
    cublas_ms: float | None = None
    cublas_tflops: float | None = None
    ratio: float | None = None
    rel_error: float | None = None
    registers: int | None = None
    smem_bytes: int | None = None
    occupancy: float | None = None
    study: str | None = None
    trial_number: int | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None

    def __post_init__(self) -> None:
        _check_text("family", self.family)
        _check_text("config_name", self.config_name)
        if self.status not in STATUSES:
            raise ValueError(f"`status` must be one of {', '.join(STATUSES)}, got {self.status!r}")
        if not isinstance(self.params, Mapping):
            raise ValueError(f"`params` must be a mapping of str to int, got {self.params!r}")
        for key, value in self.params.items():
            if not isinstance(key, str):
                raise ValueError(f"`params` keys must be strings, got {key!r}")
            _check_int(f"params[{key!r}]", value, minimum=-(2**63))
        if not isinstance(self.provenance, Mapping) or not all(
            isinstance(key, str) for key in self.provenance
        ):
            raise ValueError(
                f"`provenance` must be a mapping with string keys, got {self.provenance!r}"
            )
        _check_text("reason", self.reason, optional=True)
        for name in ("ms", "cublas_ms"):
            _check_number(name, getattr(self, name), positive=True)
        for name in ("tflops", "cublas_tflops", "ratio", "rel_error", "occupancy"):
            _check_number(name, getattr(self, name))
        _check_int("registers", self.registers, minimum=0, optional=True)
        _check_int("smem_bytes", self.smem_bytes, minimum=0, optional=True)
        _check_text("study", self.study, optional=True)
        _check_int("trial_number", self.trial_number, minimum=0, optional=True)
        if self.created_at is not None and not isinstance(self.created_at, datetime):
            raise ValueError(f"`created_at` must be a datetime, got {self.created_at!r}")

    def effective_ratio(self) -> float | None:
        """The stored ratio: the given one, else ``cublas_ms / ms`` when both are known."""
        if self.ratio is not None:
            return self.ratio
        if self.ms is not None and self.cublas_ms is not None:
            return self.cublas_ms / self.ms
        return None
