"""Plain-value inputs to the write path, validated once at the boundary.

Storage stays independent of the tuner's machinery (it shares only the vocabulary of
``tuner.core``): callers translate their own objects into these small frozen dataclasses (ints,
strings, dicts), and every check here names the offending field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

from tuner.core.accuracy import UNLABELLED
from tuner.core.evaluators import EVALUATORS, EvaluatorKind
from tuner.core.phases import Phase, check_phase
from tuner.core.provenance import check_provenance
from tuner.core.shape import LEGACY_LAYOUTS, STORED_OUT_DTYPE
from tuner.core.statuses import STATUSES

# Column lengths of the tables (storage.models); tuner.data.intake checks records against the same
# limits PostgreSQL enforces, so a file imports alike on SQLite and PostgreSQL.
DEVICE_NAME_LENGTH = 200
LABEL_LENGTH = 32  # arch, dtype, layout
FAMILY_LENGTH = 64
NAME_LENGTH = 255  # config names, study names, workers


def _check_text(name: str, value: object, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"`{name}` must be a non-empty string, got {value!r}")
    _check_unicode(name, value)


def _check_unicode(name: str, value: str) -> None:
    """Text both backends store and every response can encode: no lone UTF-16 surrogate
    (``"\\ud800"`` parses from JSON but is no text in UTF-8)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = value[exc.start : exc.end]
        raise ValueError(
            f"`{name}` must be valid Unicode text, got a lone surrogate {bad!a}"
        ) from None


def _check_label(name: str, value: object) -> None:
    """A short name stored in a ``String(LABEL_LENGTH)`` column, checked here so that a too long
    one is refused alike on SQLite (which does not enforce lengths) and PostgreSQL."""
    if not isinstance(value, str) or not value.strip() or len(value) > LABEL_LENGTH:
        raise ValueError(
            f"`{name}` must be a non-empty string of at most {LABEL_LENGTH} characters, "
            f"got {value!r}"
        )
    _check_unicode(name, value)


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


def _check_time(name: str, value: object) -> None:
    if value is not None and not isinstance(value, datetime):
        raise ValueError(f"`{name}` must be a datetime, got {value!r}")


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
    """A GEMM problem; dtype, layout and the type of C are part of the key because they change
    the answer. ``out_dtype`` defaults to float32, what every row before it was measured writing
    (``tuner.core.shape.STORED_OUT_DTYPE``)."""

    m: int
    n: int
    k: int
    dtype: str = "float32"
    layout: str = "NN"
    out_dtype: str = STORED_OUT_DTYPE

    def __post_init__(self) -> None:
        for dim in ("m", "n", "k"):
            _check_int(dim, getattr(self, dim), minimum=1)
        _check_text("dtype", self.dtype)
        _check_text("layout", self.layout)
        _check_text("out_dtype", self.out_dtype)
        object.__setattr__(self, "layout", LEGACY_LAYOUTS.get(self.layout, self.layout))


@dataclass(frozen=True)
class MeasurementIn:
    """One evaluated candidate, failed or not.

    ``ratio`` is cuBLAS time / our time (> 1 means faster than cuBLAS); left as ``None`` it is
    derived from ``cublas_ms / ms`` when both are known. ``accuracy`` is the measurement's
    accuracy class (``exact``, strict FP32, unless the tuner names another): the best config
    is kept per class. ``phase`` says when in its study it was measured (a finalist's
    side-by-side re-measurement is ``final`` and outranks screening times for the best config,
    :mod:`tuner.core.phases`); ``trusted`` is False for a result whoever stored it cannot vouch
    for (an upload without the trusted token): kept and listed, never the best. ``created_at``
    is normally left to the database; imports pass the original timestamp so that re-importing
    is idempotent. ``evaluator`` says what produced it (:mod:`tuner.core.evaluators`): ``replay``
    for a time replayed from a table, kept and listed, never the best.
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
    accuracy: str = UNLABELLED
    phase: str = Phase.SCREENING.value
    trusted: bool = True
    created_at: datetime | None = None
    evaluator: str = EvaluatorKind.GPU.value

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
        check_provenance(self.provenance)
        _check_text("reason", self.reason, optional=True)
        for name in ("ms", "cublas_ms"):
            _check_number(name, getattr(self, name), positive=True)
        for name in ("tflops", "cublas_tflops", "ratio", "rel_error", "occupancy"):
            _check_number(name, getattr(self, name))
        _check_int("registers", self.registers, minimum=0, optional=True)
        _check_int("smem_bytes", self.smem_bytes, minimum=0, optional=True)
        _check_text("study", self.study, optional=True)
        _check_int("trial_number", self.trial_number, minimum=0, optional=True)
        _check_label("accuracy", self.accuracy)
        object.__setattr__(self, "phase", check_phase(self.phase).value)
        if not isinstance(self.trusted, bool):
            raise ValueError(f"`trusted` must be true or false, got {self.trusted!r}")
        _check_time("created_at", self.created_at)
        if self.evaluator not in EVALUATORS:
            raise ValueError(
                f"`evaluator` must be one of {', '.join(EVALUATORS)}, got {self.evaluator!r}"
            )

    @property
    def competes(self) -> bool:
        """Whether it may become the best config of its device, shape and class: an ``ok``
        time, trusted, and measured on the device (a replayed time never is the device's)."""
        return (
            self.status == "ok"
            and self.ms is not None
            and self.trusted
            and self.evaluator == EvaluatorKind.GPU
        )

    def effective_ratio(self) -> float | None:
        """The stored ratio: the given one, else ``cublas_ms / ms`` when both are known."""
        if self.ratio is not None:
            return self.ratio
        if self.ms is not None and self.cublas_ms is not None:
            return self.cublas_ms / self.ms
        return None


# Every field of a measurement record, in order: what an export writes per measurement (beside
# its device and shape), what an import reads back, and what the API lists.
MEASUREMENT_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(MeasurementIn))

RATE_FIELDS = ("ffma_tflops", "fp64_tensor_tflops", "dram_tb_s", "launch_us")


@dataclass(frozen=True)
class RatesIn:
    """What the GPU probes measured on one device: the rates the cost model and answers need.

    ``ffma_tflops``: FP32 FMA throughput; ``fp64_tensor_tflops``: FP64 tensor-core (DMMA)
    throughput; ``dram_tb_s``: memory bandwidth; ``launch_us``: the cost of one empty kernel
    launch. A probe may measure some of them only, so each is optional, but one at least must
    be given. ``measured_at`` is normally left to the database (now).
    """

    ffma_tflops: float | None = None
    fp64_tensor_tflops: float | None = None
    dram_tb_s: float | None = None
    launch_us: float | None = None
    measured_at: datetime | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        values = [getattr(self, name) for name in RATE_FIELDS]
        for name, value in zip(RATE_FIELDS, values, strict=True):
            _check_number(name, value, positive=True)
        if all(value is None for value in values):
            raise ValueError(f"give at least one rate: {', '.join(RATE_FIELDS)}")
        _check_time("measured_at", self.measured_at)
        check_provenance(self.provenance)
