"""Request and response bodies of the HTTP API (pydantic); OpenAPI is generated from these."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from storage import STATUSES
from tuner.shape import MAX_DIM, SUPPORTED_DTYPES, SUPPORTED_LAYOUTS

Dim = Annotated[int, Field(ge=1, le=MAX_DIM, description=f"matrix dimension, 1..{MAX_DIM}")]
Dtype = Literal[SUPPORTED_DTYPES]  # type: ignore[valid-type]
Layout = Literal[SUPPORTED_LAYOUTS]  # type: ignore[valid-type]
Status = Literal[STATUSES]  # type: ignore[valid-type]
# Finite, bounded numbers only: a time of 1e-300 ms would make TFLOP/s infinite, and JSON has
# no infinity to answer with.
Millis = Annotated[float, Field(ge=1e-6, le=1e9, allow_inf_nan=False, description="milliseconds")]
Number = Annotated[float, Field(ge=-1e12, le=1e12, allow_inf_nan=False)]


class Strict(BaseModel):
    """Unknown fields are an error: a typo (``"devcie"``) should not be silently ignored.

    NUL characters are refused in every text field: PostgreSQL cannot store them.
    """

    model_config = ConfigDict(extra="forbid")

    @field_validator("*")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        if isinstance(value, str) and "\x00" in value:
            raise ValueError("must not contain NUL characters")
        return value


class BestRequest(Strict):
    m: Dim
    n: Dim
    k: Dim
    dtype: Dtype = "float32"
    layout: Layout = "row-major"
    device: str | None = Field(
        default=None, max_length=200, description="device name, e.g. 'NVIDIA H100 80GB HBM3'"
    )
    include_source: bool = Field(default=False, description="add CUDA source and launch geometry")


class DeviceOut(BaseModel):
    name: str
    arch: str
    sm_count: int


class ShapeOut(BaseModel):
    m: int
    n: int
    k: int


class KernelOut(BaseModel):
    """Everything needed to compile and launch the config for the requested shape."""

    entry: str = Field(description='extern "C" kernel symbol')
    code: str = Field(description="CUDA C++ source")
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    dynamic_smem_bytes: int
    module_per_stream: bool = Field(
        description="the kernel keeps split-K ticket counters in its loaded module: launches "
        "that may overlap (on different streams) each need a module of their own; launches "
        "on one stream may share one"
    )
    arguments: str = (
        "(int M, int N, int K, float alpha, const float* A, const float* B, "
        "float beta, float* C), row-major"
    )


class BestResponse(BaseModel):
    m: int
    n: int
    k: int
    dtype: str
    layout: str
    family: str
    params: dict[str, int]
    name: str = Field(description="procedural config name, its identity everywhere")
    source: Literal["exact", "nearest", "default"]
    distance: float | None = Field(
        description="log-space Euclidean distance sqrt(sum (ln a - ln b)^2) over (m, n, k) "
        "from the requested shape to measured_on; 0 for exact, null for default"
    )
    measured_on: ShapeOut | None = Field(
        description="the shape ms/tflops/cublas_tflops/ratio were measured on (for nearest: "
        "not the requested one)"
    )
    ms: float | None
    tflops: float | None
    cublas_tflops: float | None
    ratio: float | None = Field(description="cuBLAS time / this config's time; > 1 is faster")
    device: DeviceOut | None
    provenance: dict[str, Any]
    note: str
    kernel: KernelOut | None = None


class DeviceIn(Strict):
    name: str = Field(min_length=1, max_length=200)
    arch: str = Field(min_length=1, max_length=32)
    sm_count: int = Field(ge=1, le=100_000)


class ShapeIn(Strict):
    m: Dim
    n: Dim
    k: Dim
    dtype: Dtype = "float32"
    layout: Layout = "row-major"


class MeasurementIn(Strict):
    family: str = Field(min_length=1, max_length=64)
    config_name: str = Field(min_length=1, max_length=255)
    params: dict[str, Annotated[int, Field(ge=1, le=2**31 - 1)]]
    status: Status = "ok"
    reason: str | None = None
    ms: Millis | None = None
    tflops: Number | None = None
    cublas_ms: Millis | None = None
    cublas_tflops: Number | None = None
    ratio: Number | None = None
    rel_error: Number | None = None
    registers: int | None = Field(default=None, ge=0, le=2**31 - 1)
    smem_bytes: int | None = Field(default=None, ge=0, le=2**31 - 1)
    occupancy: Number | None = None
    study: str | None = Field(default=None, max_length=255)
    trial_number: int | None = Field(default=None, ge=0, le=2**31 - 1)
    provenance: dict[str, Any] = Field(default_factory=dict)


class ResultsUpload(Strict):
    """Measurements of one device and shape, as a tuning worker uploads them."""

    device: DeviceIn
    shape: ShapeIn
    measurements: list[MeasurementIn] = Field(min_length=1, max_length=1000)


class UploadResponse(BaseModel):
    stored: int
    ids: list[int]


class MeasurementOut(BaseModel):
    id: int
    device: DeviceOut
    shape: ShapeOut
    dtype: str
    layout: str
    family: str
    config_name: str
    params: dict[str, int]
    status: str
    reason: str | None
    ms: float | None
    tflops: float | None
    cublas_tflops: float | None
    ratio: float | None
    registers: int | None
    smem_bytes: int | None
    occupancy: float | None
    study: str | None
    trial_number: int | None
    created_at: str


class ResultsPage(BaseModel):
    total: int
    limit: int
    offset: int
    items: list[MeasurementOut]


class Trial(BaseModel):
    trial_number: int | None
    config_name: str
    family: str
    status: str
    reason: str | None
    ms: float | None
    tflops: float | None
    registers: int | None
    occupancy: float | None
    best_so_far_ms: float | None = Field(description="fastest ok time up to this trial")
    best_so_far_tflops: float | None


class StudyOut(BaseModel):
    study: str
    trials: list[Trial]
    best: Trial | None


class Health(BaseModel):
    status: Literal["ok"]
    database: str
    best_configs: int
