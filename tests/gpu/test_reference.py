"""The cuBLAS reference itself: one SGEMM call that does alpha, beta and the write into C."""

from __future__ import annotations

import pytest

from tuner.core.shape import Shape

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize(
    "shape", [Shape(1, 1, 1), Shape(33, 100, 70), Shape(1000, 517, 260)], ids=str
)
def test_reference_matches_float64_product(shape: Shape) -> None:
    import cupy

    from tuner.gpu.measure import cublas_gemm, random_operands, relative_error, tolerance

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

    from tuner.gpu.measure import cublas_gemm, random_operands

    a, b, _ = random_operands(Shape(64, 48, 32), seed=3)
    out = cupy.full((64, 48), cupy.nan, dtype=cupy.float32)
    cublas_gemm(1.0, a, b, 0.0, out)
    assert bool(cupy.isfinite(out).all())
    assert bool(cupy.allclose(out, a @ b, rtol=1e-5, atol=1e-5))


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_same_dtype_reference_matches_float64_on_the_rounded_inputs(
    dtype: str, layout: str
) -> None:
    """cublasGemmEx on operands stored in each layout: the float64 product of the same rounded
    values (read back through ``to_float32``), with alpha and beta applied."""
    import cupy

    from tuner.gpu import half_arrays
    from tuner.gpu.measure import random_operands, relative_error, tolerance

    shape = Shape(37, 70, 129, dtype, layout, "float32")
    a, b, c = random_operands(shape, seed=5)
    a64 = half_arrays.to_float32(a, dtype).astype(cupy.float64)
    b64 = half_arrays.to_float32(b, dtype).astype(cupy.float64)
    a64 = a64.T if shape.a_transposed else a64
    b64 = b64.T if shape.b_transposed else b64
    assert a64.shape == (37, 129) and b64.shape == (129, 70)
    expected = 0.5 * (a64 @ b64) + 3.0 * c.astype(cupy.float64)
    out = c.copy()
    half_arrays.gemm(shape, 0.5, a, b, 3.0, out)
    assert relative_error(out.astype(cupy.float64), expected) <= tolerance(shape.k, dtype)


def test_bfloat16_bits_round_to_nearest_even() -> None:
    import cupy

    from tuner.gpu import half_arrays

    values = cupy.array([1.0, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, -2.5, 1.0 + 2.0**-9], cupy.float32)
    bits = half_arrays.from_float32(values, "bfloat16")
    back = half_arrays.to_float32(bits, "bfloat16").get().tolist()
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to the even one, 1; 1 + 3*2^-8 to 1 + 2^-6.
    assert back == [1.0, 1.0, 1.0 + 2.0**-6, -2.5, 1.0]
