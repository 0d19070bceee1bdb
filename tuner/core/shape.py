"""The problem being tuned: C[M,N] = alpha * op(A) @ op(B) + beta * C.

``dtype`` is the type of A and B: float32, or float16 / bfloat16 multiplied with FP32
accumulation. ``out_dtype`` is the type of C: float32 for float32 inputs; for half inputs
float32 or the input type, by default the input type (as ``torch.matmul`` and ``nn.Linear``
give). The sums and beta * C are FP32 whatever C is; a half C is rounded once, when written.
Results stored before C had a type (rows, export files, suites without ``out_dtype``) were all
measured writing float32 C, and read so (:data:`STORED_OUT_DTYPE`).
``layout`` says how A and B are stored, in row-major terms (PyTorch's and CuPy's default): the
first letter for A, the second for B, ``N`` for stored as used (A as M x K, B as K x N) and
``T`` for stored transposed (A as K x M, B as N x K). ``NT`` is ``x @ W.T``, what nn.Linear
does. ``row-major``, the only layout before there were four, is read as ``NN``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tuner.core.dims import Dims, tflops
from tuner.core.errors import InputError

SUPPORTED_DTYPES = ("float32", "float16", "bfloat16")
SUPPORTED_LAYOUTS = ("NN", "NT", "TN", "TT")
# Layout names older databases and exports used, and the layout each means today: ``row-major``
# (the one layout before there were four) is A and B both as used, ``NN``. Schema revision 0006
# renamed stored rows; imports and callers may still send the old name.
LEGACY_LAYOUTS: dict[str, str] = {"row-major": "NN"}
# Every name a layout may be given by: the four, and the older names they replace.
ACCEPTED_LAYOUTS = (*SUPPORTED_LAYOUTS, *LEGACY_LAYOUTS)
HALF_DTYPES = ("float16", "bfloat16")
# The types C may be written in, for each input type: float32 or the input type. float32 sums
# are never rounded to half for float32 inputs (nothing asks for it, and no float32 family writes
# half), nor FP16 inputs written as BF16 or the other way round: cuBLAS has no such GEMM to
# verify or time against (cublasGemmEx answers CUBLAS_STATUS_NOT_SUPPORTED), and torch.matmul
# never asks for one.
OUT_DTYPES: dict[str, tuple[str, ...]] = {
    "float32": ("float32",),
    **{dtype: ("float32", dtype) for dtype in HALF_DTYPES},
}
# The type of C in anything stored without one: every result before C had a type wrote float32.
STORED_OUT_DTYPE = "float32"
# Unit roundoff of each input type (half the distance from 1 to the next value): what
# verification tolerances scale with.
UNIT_ROUNDOFF = {"float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}
ELEMENT_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
# Larger dimensions than this overflow the 32-bit indices the kernels use.
MAX_DIM = 2**31 - 1

_SHAPE_RE = re.compile(r"^\s*(\S+?)\s*[xX\u00d7]\s*(\S+?)\s*[xX\u00d7]\s*(\S+?)\s*$")


def check_dtype(value: object) -> str:
    """``value`` if it names a supported input type, else raise naming it and the choices."""
    if value not in SUPPORTED_DTYPES:
        raise InputError(f"`dtype` must be one of {', '.join(SUPPORTED_DTYPES)}, got {value!r}")
    return str(value)


def default_out_dtype(dtype: str) -> str:
    """The type C is written in when a question names none: the input type, as torch.matmul
    gives (float32 stays float32)."""
    return dtype


def check_out_dtype(value: object, dtype: str) -> str:
    """``value`` if C may be written in it for ``dtype`` inputs, else raise naming it and the
    types allowed."""
    allowed = OUT_DTYPES.get(dtype, ("float32",))
    if value not in allowed:
        raise InputError(
            f"`out_dtype` must be one of {', '.join(allowed)} for {dtype} inputs, got {value!r}"
        )
    return str(value)


def check_layout(value: object) -> str:
    """The canonical name of layout ``value`` (``row-major`` reads as ``NN``), else raise
    naming it and the choices."""
    if not isinstance(value, str) or value not in ACCEPTED_LAYOUTS:
        raise InputError(
            f"`layout` must be one of {', '.join(SUPPORTED_LAYOUTS)} "
            f"(or row-major, meaning NN), got {value!r}"
        )
    return LEGACY_LAYOUTS.get(value, value)


@dataclass(frozen=True, order=True)
class Shape:
    """A GEMM problem size; immutable and hashable so it can key caches and studies.

    ``out_dtype`` left as None becomes :func:`default_out_dtype` of ``dtype`` (the input type):
    a reader of stored results without a C type passes :data:`STORED_OUT_DTYPE` instead."""

    m: int
    n: int
    k: int
    dtype: str = "float32"
    layout: str = "NN"
    out_dtype: str | None = None

    def __post_init__(self) -> None:
        for field, value in (("m", self.m), ("n", self.n), ("k", self.k)):
            check_dim(field, value)
        check_dtype(self.dtype)
        object.__setattr__(self, "layout", check_layout(self.layout))
        out = default_out_dtype(self.dtype) if self.out_dtype is None else self.out_dtype
        object.__setattr__(self, "out_dtype", check_out_dtype(out, self.dtype))

    @property
    def out(self) -> str:
        """The type of C (``out_dtype``, never None once built)."""
        assert self.out_dtype is not None
        return self.out_dtype

    @property
    def flops(self) -> int:
        """Floating-point operations of one GEMM (a multiply and an add per term)."""
        return 2 * self.m * self.n * self.k

    @property
    def dims(self) -> Dims:
        return (self.m, self.n, self.k)

    def tflops(self, ms: float | None) -> float | None:
        """TFLOP/s of this GEMM done in ``ms`` milliseconds (:func:`tuner.core.dims.tflops`)."""
        return tflops(self.m, self.n, self.k, ms)

    @property
    def a_transposed(self) -> bool:
        """Whether A is stored K x M (its columns contiguous)."""
        return self.layout[0] == "T"

    @property
    def b_transposed(self) -> bool:
        """Whether B is stored N x K (its columns contiguous), as nn.Linear's weight is."""
        return self.layout[1] == "T"

    @property
    def is_default_kind(self) -> bool:
        """float32 NN: what a bare ``MxNxK`` means and every FP32 family computes."""
        return self.dtype == "float32" and self.layout == "NN"

    def with_out(self, out_dtype: str | None) -> Shape:
        """This shape writing C in ``out_dtype`` (None: the input type's default)."""
        return Shape(self.m, self.n, self.k, self.dtype, self.layout, out_dtype)

    def __str__(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"

    def label(self) -> str:
        """``MxNxK``, followed by dtype and layout unless they are float32 NN, and by ``-> out``
        where C's type is not the input type."""
        if self.is_default_kind:
            return str(self)
        out = "" if self.out == self.dtype else f" -> {self.out}"
        return f"{self} {self.dtype} {self.layout}{out}"


def check_dim(field: str, value: object) -> int:
    """Return ``value`` if it is a usable matrix dimension, else raise naming the field."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"`{field}` must be an integer in 1..{MAX_DIM}, got {value!r}")
    if not 1 <= value <= MAX_DIM:
        raise InputError(f"`{field}` must be an integer in 1..{MAX_DIM}, got {value}")
    return value


def parse_shape(
    text: str, dtype: str = "float32", layout: str = "NN", out_dtype: str | None = None
) -> Shape:
    """Parse ``MxNxK`` (e.g. ``4096x4096x4096``) into a :class:`Shape` of ``dtype``, ``layout``
    and ``out_dtype`` (None: the input type)."""
    match = _SHAPE_RE.match(text)
    if not match:
        raise InputError(f"shape must look like MxNxK with positive integers, got {text!r}")
    dims = []
    for field, token in zip(("M", "N", "K"), match.groups(), strict=True):
        if not token.isdigit():
            raise InputError(f"{field} in shape {text!r} must be a positive integer, got {token!r}")
        dims.append(check_dim(field, int(token)))
    return Shape(dims[0], dims[1], dims[2], dtype, layout, out_dtype)
