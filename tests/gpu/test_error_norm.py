"""The relative error's kernel on the GPU (``tuner.gpu.error_norm``) against the same sums in
NumPy's float64, for every pair of stored types."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

STORED = ("float64", "float32", "float16", "bfloat16")


def _stored(values: np.ndarray, kind: str) -> tuple[Any, np.ndarray]:
    """``values`` on the GPU as ``kind`` is stored (BF16 as bit patterns), and the float64 values
    the GPU array holds."""
    import cupy as cp

    from tuner.gpu.half_arrays import from_float32, to_float32

    if kind == "float64":
        return cp.asarray(values), values
    stored = from_float32(cp.asarray(values.astype(np.float32)), kind)
    return stored, to_float32(stored, kind).get().astype(np.float64)


@pytest.mark.parametrize("size", [1, 7, 300, 65537, 512 * 256 * 3 + 5])
@pytest.mark.parametrize("out_kind", STORED)
@pytest.mark.parametrize("ref_kind", STORED)
def test_the_kernel_sums_as_numpy_does_in_float64(size: int, out_kind: str, ref_kind: str) -> None:
    from tuner.gpu.error_norm import relative_error, squared_sums

    rng = np.random.default_rng(size)
    ref_values = rng.standard_normal(size)
    out, out64 = _stored(ref_values + 1e-3 * rng.standard_normal(size), out_kind)
    ref, ref64 = _stored(ref_values, ref_kind)
    diff2, ref2 = squared_sums(out, ref)
    assert diff2 == pytest.approx(float(np.sum((out64 - ref64) ** 2)), rel=1e-12, abs=1e-300)
    assert ref2 == pytest.approx(float(np.sum(ref64**2)), rel=1e-12)
    expected = math.sqrt(np.sum((out64 - ref64) ** 2)) / math.sqrt(np.sum(ref64**2))
    assert relative_error(out, ref) == pytest.approx(expected, rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("kind", ["float32", "float16", "bfloat16"])
def test_a_nan_or_inf_anywhere_is_an_infinite_error(kind: str) -> None:
    from tuner.gpu.error_norm import relative_error
    from tuner.gpu.half_arrays import nan_filled

    ref, _ = _stored(np.ones(1000), kind)
    assert relative_error(nan_filled(10, 100, kind), ref) == math.inf
    out, _ = _stored(np.r_[np.ones(999), np.inf], kind)
    assert relative_error(out, ref) == math.inf


def test_a_zero_reference_gives_the_norm_of_the_difference() -> None:
    import cupy as cp

    from tuner.gpu.error_norm import relative_error

    out = cp.full(16, 0.5, dtype=cp.float32)
    assert relative_error(out, cp.zeros(16, dtype=cp.float32)) == pytest.approx(2.0)


def test_views_and_broadcasting_still_go_through_cupy() -> None:
    import cupy as cp

    from tuner.gpu.measure import relative_error

    rng = cp.random.default_rng(3)
    a = rng.standard_normal((64, 48), dtype=cp.float32)
    b = a + 1e-3 * rng.standard_normal((64, 48), dtype=cp.float32)
    contiguous = relative_error(cp.ascontiguousarray(b.T), cp.ascontiguousarray(a.T))
    assert relative_error(b.T, a.T) == pytest.approx(contiguous, rel=1e-6)
