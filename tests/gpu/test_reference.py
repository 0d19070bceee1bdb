"""The cuBLAS reference itself: one SGEMM call that does alpha, beta and the write into C."""

from __future__ import annotations

import pytest

from tuner.shape import Shape

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    "shape", [Shape(1, 1, 1), Shape(33, 100, 70), Shape(1000, 517, 260)], ids=str
)
def test_reference_matches_float64_product(shape: Shape) -> None:
    import cupy

    from tuner.measure import cublas_gemm, random_operands, relative_error, tolerance

    a, b, c = random_operands(shape, seed=7)
    expected = 0.5 * (a.astype(cupy.float64) @ b.astype(cupy.float64)) + 3.0 * c.astype(
        cupy.float64
    )
    out = c.copy()
    cublas_gemm(0.5, a, b, 3.0, out)
    assert out.dtype == cupy.float32 and out.flags.c_contiguous
    assert relative_error(out.astype(cupy.float64), expected) <= tolerance(shape.k)


def test_reference_with_beta_zero_never_reads_c() -> None:
    import cupy

    from tuner.measure import cublas_gemm, random_operands

    a, b, _ = random_operands(Shape(64, 48, 32), seed=3)
    out = cupy.full((64, 48), cupy.nan, dtype=cupy.float32)
    cublas_gemm(1.0, a, b, 0.0, out)
    assert bool(cupy.isfinite(out).all())
    assert bool(cupy.allclose(out, a @ b, rtol=1e-5, atol=1e-5))
