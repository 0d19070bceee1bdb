"""Request and response bodies of the HTTP API (pydantic); OpenAPI is generated from these."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields as dataclass_fields
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictBool,
    StrictInt,
    ValidationInfo,
    create_model,
    field_validator,
)

from tuner.answers.answer import Answer, DeviceInfo, answer_types, held_type
from tuner.answers.device_kind import ARCH_FORMAT, DeviceSpec
from tuner.core.accuracy import ACCURACY_CLASSES, ACCURACY_NAMES, DEFAULT_ACCURACY
from tuner.core.dims import Dims
from tuner.core.evaluators import EVALUATORS
from tuner.core.phases import PHASES
from tuner.core.shape import (
    ACCEPTED_LAYOUTS,
    MAX_DIM,
    OUT_DTYPES,
    STORED_OUT_DTYPE,
    SUPPORTED_DTYPES,
)
from tuner.core.statuses import STATUSES
from tuner.kernels.families import FAMILIES

# Strict: JSON's true is not m = 1, nor is the string "4096" a dimension.
Dim = Annotated[StrictInt, Field(ge=1, le=MAX_DIM, description=f"matrix dimension, 1..{MAX_DIM}")]
Count = Annotated[StrictInt, Field(ge=0, le=2**31 - 1)]
Dtype = Annotated[
    Literal[SUPPORTED_DTYPES],  # type: ignore[valid-type]
    Field(description="type of A and B; half inputs are multiplied exactly and summed in FP32"),
]
OutDtype = Annotated[
    Literal[SUPPORTED_DTYPES],  # type: ignore[valid-type]
    Field(
        description="type of C: float32 for float32 inputs; float32 or the input type for "
        "half inputs (beta * C and the sums in FP32, C rounded once)"
    ),
]


def _out_for_inputs(value: Any, info: ValidationInfo) -> Any:
    """``value`` (a type of C) if C may be written in it for the request's input type."""
    dtype = info.data.get("dtype")
    if value is not None and dtype is not None and value not in OUT_DTYPES[dtype]:
        raise ValueError(
            f"must be one of {', '.join(OUT_DTYPES[dtype])} for {dtype} inputs, got {value!r}"
        )
    return value


Layout = Annotated[
    Literal[ACCEPTED_LAYOUTS],  # type: ignore[valid-type]
    Field(
        description="how A and B are stored, row-major terms: A's letter then B's, N as used, "
        "T transposed (NT is x @ W.T, nn.Linear); 'row-major' is the older name of NN, "
        "answered as NN"
    ),
]
Accuracy = Annotated[
    Literal[ACCURACY_NAMES],  # type: ignore[valid-type]
    Field(
        description="the least exact accuracy class accepted: "
        + "; ".join(f"{c.name}: {c.doc}" for c in ACCURACY_CLASSES.values())
    ),
]
Status = Literal[STATUSES]  # type: ignore[valid-type]
Phase = Literal[PHASES]  # type: ignore[valid-type]
EvaluatorName = Literal[EVALUATORS]  # type: ignore[valid-type]
FamilyName = Literal[tuple(FAMILIES)]  # type: ignore[valid-type]
NON_BLANK = r"\S"  # somewhere a character that is not white space (patterns search)
CONFIG_NAME = r"^[a-z][a-z0-9_]*$"
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


# Requests the API docs offer to "Try it out": real questions and a real measurement (the
# H100 suite's 4096^3 float32 winner, tests/api/test_openapi_examples.py sends each of them).
H100 = "NVIDIA H100 80GB HBM3"
BEST_EXAMPLES: list[JsonValue] = [
    {"m": 4096, "n": 4096, "k": 4096, "device": H100},
    {
        "m": 4096,
        "n": 11008,
        "k": 4096,
        "dtype": "bfloat16",
        "layout": "NT",
        "out_dtype": "float32",
        "device": H100,
    },
    {"m": 3000, "n": 5000, "k": 1000, "dtype": "float16", "layout": "NN"},
]
UPLOAD_EXAMPLES: list[JsonValue] = [
    {
        "device": {"name": H100, "arch": "sm_90", "sm_count": 132},
        "shape": {"m": 4096, "n": 4096, "k": 4096, "dtype": "float32", "layout": "NN"},
        "measurements": [
            {
                "family": "dmma_pipelined",
                "config_name": "dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1",
                "params": {
                    "BM": 64,
                    "BN": 128,
                    "BK": 32,
                    "WM": 32,
                    "WN": 64,
                    "MK": 4,
                    "STAGES": 3,
                    "SPLITK": 1,
                    "MINBLOCKS": 1,
                },
                "status": "ok",
                "ms": 2.367,
                "cublas_ms": 2.715,
                "phase": "final",
            }
        ],
    }
]


class BestRequest(Strict):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": BEST_EXAMPLES})

    m: Dim
    n: Dim
    k: Dim
    dtype: Dtype = "float32"
    layout: Layout = "NN"
    out_dtype: OutDtype | None = Field(
        default=None,
        description="type of C the config writes; omitted: the input type (as torch.matmul "
        "gives: float16 C for float16 inputs)",
    )
    accuracy: Accuracy = DEFAULT_ACCURACY
    device: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="the GPU to answer for, by name (e.g. 'NVIDIA H100 80GB HBM3'); omitted: "
        "the fastest config of any device. A name with no stored results needs "
        "device_arch and device_sm_count (422 otherwise, listing the known devices)",
    )
    device_arch: str | None = Field(
        default=None,
        pattern=ARCH_FORMAT.pattern,
        description="the GPU's architecture, 'sm_' and its compute capability (e.g. 'sm_89'); "
        "with device_sm_count, finds devices of the same kind when the name has no results, "
        "and decides which families run slowly on it",
    )
    device_sm_count: StrictInt | None = Field(
        default=None, ge=1, le=100_000, description="the GPU's number of SMs"
    )
    include_source: StrictBool = Field(
        default=False, description="add CUDA source and launch geometry"
    )

    _out_dtype = field_validator("out_dtype")(_out_for_inputs)

    @field_validator("device_arch", "device_sm_count")
    @classmethod
    def _describe_a_named_device(cls, value: Any, info: ValidationInfo) -> Any:
        if value is not None and info.data.get("device") is None:
            raise ValueError("describes a device: give `device` (its name) too")
        return value


class DeviceOut(BaseModel):
    name: str
    arch: str
    sm_count: int


class ListedDevice(DeviceOut):
    """A stored device, as ``GET /v1/devices`` lists it."""

    trusted: bool = Field(
        description="a trusted writer stored something for it: only trusted devices resolve "
        "a device an answer is asked for; an untrusted one is only what an upload claimed"
    )


class AskedDevice(BaseModel):
    """The device an answer is for, as asked, with arch and SM count filled in from the
    database where the request left them out and the database knows them."""

    name: str
    arch: str | None
    sm_count: int | None


class ShapeOut(BaseModel):
    m: int
    n: int
    k: int


class KernelArgumentOut(BaseModel):
    """One kernel parameter, in the order the kernel takes them."""

    name: str = Field(description="as the source declares it: M, N, K, alpha, A, lda, ...")
    type: str = Field(description="its C type as declared (pointers are also __restrict__)")
    meaning: str
    value: int | None = Field(
        description="what to pass for the asked shape (dimensions and leading dimensions, for "
        "row-major packed arrays); null where the caller supplies it (alpha, beta, arrays)"
    )
    passes: str = Field(description="what the argument is: the caller's array or a buffer")


class OperandBufferOut(BaseModel):
    """An array the kernel runs on instead of the caller's (a padded copy, or the bf16x3 split):
    zeroed once and kept; the caller's array copied or split into its top left before each
    launch (C's top left copied back after)."""

    operand: Literal["A", "B", "C"]
    array: tuple[int, int] = Field(description="the caller's array as stored: rows, columns")
    buffer: tuple[int, int] = Field(description="the buffer: rows, columns (its row pitch)")
    element: str = Field(description="the buffer's element type")
    split_parts: list[str] = Field(
        description="bf16x3 split: the parts in order (hi = bf16(x), lo = bf16(x - hi)); "
        "empty for a plain copy"
    )
    part_offset: tuple[int, int] = Field(
        description="rows and columns from one split part's top left to the next"
    )
    copy_back: bool = Field(description="copied back into the caller's array after the launch")


class CompileOut(BaseModel):
    """What to compile the source with, by NVRTC or ``nvcc -cubin``."""

    arch: str = Field(description="target architecture (sm_90a for the wgmma families)")
    options: list[str] = Field(description="compiler options, the target included")
    defines: dict[str, str] = Field(
        description="preprocessor defines: none, every constant is rendered into the source"
    )
    note: str


class KernelOut(BaseModel):
    """Everything needed to compile and launch the config for the requested shape, computed
    by the function the tuner's own launches use (``tuner.kernels.launch_recipe``)."""

    entry: str = Field(description='extern "C" kernel symbol')
    code: str = Field(description="CUDA C++ source")
    signature: str = Field(description='the kernel\'s extern "C" declaration, as in the source')
    grid: tuple[int, int, int] | None = Field(
        description="grid for the requested shape; null for a persistent grid when the SM "
        "count is unknown (see grid_rule)"
    )
    grid_rule: str = Field(description="how the grid follows from another shape (or the GPU)")
    block: tuple[int, int, int]
    dynamic_smem_bytes: int
    module_per_stream: bool = Field(
        description="the kernel keeps split-K ticket counters in its loaded module: launches "
        "that may overlap (on different streams) each need a module of their own; launches "
        "on one stream may share one"
    )
    arguments: str = Field(
        description="the kernel's parameter list as declared, in parentheses (argument_list "
        "gives each with its value)"
    )
    argument_list: list[KernelArgumentOut]
    kernel_shape: ShapeOut = Field(
        description="the M, N, K the kernel is passed: the asked shape, or the padded or split "
        "product its buffers hold"
    )
    buffers: list[OperandBufferOut]
    before_launch: list[str] = Field(description="steps before each launch, in order")
    after_launch: list[str] = Field(description="steps after each launch, in order")
    compile: CompileOut
    types: dict[str, str] = Field(description="types of the signature that are not standard C")


# How an answer's field types are written in JSON, where the type is not its own schema.
_ANSWER_JSON_TYPES: dict[Any, Any] = {
    Dims: ShapeOut,
    DeviceSpec: AskedDevice,
    DeviceInfo: DeviceOut,
    Mapping[str, int]: dict[str, int],
    Mapping[str, Any]: dict[str, Any],
}


def _answer_field(hint: Any, metadata: Mapping[str, Any]) -> tuple[Any, Any]:
    """One field of the response model: its JSON type, required (a response always carries
    it, null where the answer has none), described as the answer's field is."""
    held, optional = held_type(hint)
    json_type = _ANSWER_JSON_TYPES.get(held, held)
    low, high = metadata.get("bounds", (None, None))
    described = Field(description=metadata.get("doc"), ge=low, le=high)
    return (json_type | None if optional else json_type), described


_ANSWER_FIELDS: dict[str, Any] = {
    f.name: _answer_field(answer_types()[f.name], f.metadata) for f in dataclass_fields(Answer)
}
_AnswerBody: type[BaseModel] = create_model("_AnswerBody", **_ANSWER_FIELDS)


# An answer's fields (tuner.answers.answer.Answer, in its order) and, when asked for, the kernel's
# source and launch. (No docstring: it would become the schema's description.)
class BestResponse(_AnswerBody):  # type: ignore[misc, valid-type]
    kernel: KernelOut | None = None


class DeviceIn(Strict):
    name: str = Field(min_length=1, max_length=200, pattern=NON_BLANK)
    arch: str = Field(
        pattern=ARCH_FORMAT.pattern, description="'sm_' and the compute capability, e.g. sm_90"
    )
    sm_count: StrictInt = Field(ge=1, le=100_000)


class ShapeIn(Strict):
    m: Dim
    n: Dim
    k: Dim
    dtype: Dtype = "float32"
    layout: Layout = "NN"
    out_dtype: OutDtype = Field(
        default=STORED_OUT_DTYPE,
        description="type of C the measurements wrote; omitted: float32 (what every result "
        "measured before C had a type)",
    )

    _out_dtype = field_validator("out_dtype")(_out_for_inputs)


class MeasurementIn(Strict):
    """One evaluated candidate. Beyond these types, the config must obey its family's rules
    and the times must be plausible on the device (:mod:`tuner.data.intake`; 422 otherwise)."""

    family: FamilyName  # type: ignore[valid-type]
    config_name: str = Field(
        max_length=255,
        pattern=CONFIG_NAME,
        description="the config's canonical procedural name, e.g. "
        "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128",
    )
    params: dict[str, Annotated[StrictInt, Field(ge=0, le=2**31 - 1)]]
    status: Status = "ok"
    reason: str | None = Field(default=None, pattern=NON_BLANK)
    ms: Millis | None = None
    tflops: Number | None = None
    cublas_ms: Millis | None = None
    cublas_tflops: Number | None = None
    ratio: Number | None = None
    rel_error: Number | None = None
    registers: Count | None = None
    smem_bytes: Count | None = None
    occupancy: Number | None = None
    study: str | None = Field(default=None, max_length=255, pattern=NON_BLANK)
    trial_number: Count | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)
    phase: Phase = Field(
        default="screening",
        description="when in its study it was measured: `final` for a finalist re-measured side "
        "by side with cuBLAS, which outranks screening times for the best config",
    )
    evaluator: EvaluatorName = Field(
        default="gpu",
        description="what produced it: `gpu` (timed on the device) or `replay` (answered from "
        "a replay table: stored and listed, never the best config)",
    )


class ResultsUpload(Strict):
    """Measurements of one device and shape, as a tuning worker uploads them."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": UPLOAD_EXAMPLES})

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
    out_dtype: str
    # The measurement record (storage.MEASUREMENT_FIELDS), TFLOP/s derived where not stored.
    family: str
    config_name: str
    params: dict[str, int]
    status: str
    reason: str | None
    ms: float | None
    tflops: float | None
    cublas_ms: float | None
    cublas_tflops: float | None
    ratio: float | None
    rel_error: float | None
    registers: int | None
    smem_bytes: int | None
    occupancy: float | None
    study: str | None
    trial_number: int | None
    provenance: dict[str, Any]
    accuracy: str
    phase: Phase
    trusted: bool = Field(description="false for an upload without the trusted token: never best")
    created_at: str
    evaluator: EvaluatorName = Field(
        description="`gpu`: timed on the device; `replay`: answered from a replay table, never "
        "the best config"
    )


class ResultsPage(BaseModel):
    total: int
    limit: int
    offset: int
    next_cursor: int | None = Field(
        default=None, description="pass as `cursor` for the next page; null on the last page"
    )
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
    unreadable_configs: int = Field(
        description="stored best configs this version cannot read, never served"
    )


class ErrorOut(BaseModel):
    """A refusal that is not about one field: token, size, missing study, database down."""

    detail: str


class FieldError(BaseModel):
    loc: list[str | int] = Field(description="where: 'body', 'query' or 'path', then the field")
    field: str = Field(description="the field, dotted (e.g. measurements.0.ms)")
    msg: str = Field(description="what is allowed and what was sent, naming the field")
    type: str


class FieldErrors(BaseModel):
    """Bad input: one entry per problem, each naming its field."""

    detail: list[FieldError]


_ERRORS: dict[int, tuple[type[BaseModel], str]] = {
    401: (ErrorOut, "missing or wrong bearer token"),
    403: (ErrorOut, "uploads are disabled on this server"),
    404: (ErrorOut, "no such resource"),
    413: (ErrorOut, "request body larger than GEMMTUNE_MAX_BODY_BYTES (read no further)"),
    422: (FieldErrors, "bad input, each problem naming its field"),
    503: (ErrorOut, "the database is unreachable, refuses access, or its file was replaced"),
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for the error statuses a route really gives."""
    return {code: {"model": _ERRORS[code][0], "description": _ERRORS[code][1]} for code in codes}
