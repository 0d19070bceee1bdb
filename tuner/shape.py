"""The problem being tuned: C[M,N] = alpha * A[M,K] @ B[K,N] + beta * C, float32, row-major."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tuner.errors import InputError

SUPPORTED_DTYPES = ("float32",)
SUPPORTED_LAYOUTS = ("row-major",)
# Larger dimensions than this overflow the 32-bit indices the kernels use.
MAX_DIM = 2**31 - 1

_SHAPE_RE = re.compile(r"^\s*(\S+?)\s*[xX\u00d7]\s*(\S+?)\s*[xX\u00d7]\s*(\S+?)\s*$")


@dataclass(frozen=True, order=True)
class Shape:
    """A GEMM problem size; immutable and hashable so it can key caches and studies."""

    m: int
    n: int
    k: int
    dtype: str = "float32"
    layout: str = "row-major"

    def __post_init__(self) -> None:
        for field, value in (("m", self.m), ("n", self.n), ("k", self.k)):
            check_dim(field, value)
        if self.dtype not in SUPPORTED_DTYPES:
            raise InputError(
                f"dtype must be one of {', '.join(SUPPORTED_DTYPES)}, got {self.dtype!r}"
            )
        if self.layout not in SUPPORTED_LAYOUTS:
            raise InputError(
                f"layout must be one of {', '.join(SUPPORTED_LAYOUTS)}, got {self.layout!r}"
            )

    @property
    def flops(self) -> int:
        """Floating-point operations of one GEMM (a multiply and an add per term)."""
        return 2 * self.m * self.n * self.k

    def __str__(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"


def check_dim(field: str, value: object) -> int:
    """Return ``value`` if it is a usable matrix dimension, else raise naming the field."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"`{field}` must be an integer in 1..{MAX_DIM}, got {value!r}")
    if not 1 <= value <= MAX_DIM:
        raise InputError(f"`{field}` must be an integer in 1..{MAX_DIM}, got {value}")
    return value


def parse_shape(text: str) -> Shape:
    """Parse ``MxNxK`` (e.g. ``4096x4096x4096``) into a :class:`Shape`."""
    match = _SHAPE_RE.match(text)
    if not match:
        raise InputError(f"shape must look like MxNxK with positive integers, got {text!r}")
    dims = []
    for field, token in zip(("M", "N", "K"), match.groups(), strict=True):
        if not token.isdigit():
            raise InputError(f"{field} in shape {text!r} must be a positive integer, got {token!r}")
        dims.append(check_dim(field, int(token)))
    return Shape(dims[0], dims[1], dims[2])
