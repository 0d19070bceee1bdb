"""A half C (OUT 1: float16, 2: bfloat16) written by hmma and wgmma, against cuBLAS writing the
same type of C (cublasGemmEx, FP32 sums) and against FP32 on the unrounded values: each
``verify`` runs alpha = 0.5, beta = 3 on a random C (read, scaled in FP32, rounded once) and
beta = 0 on a C poisoned with NaN (never read, every element written). Shapes with an odd N
take the scalar stores (and wgmma's C staged through shared memory); K = 1 and tiny tiles the
edges. The split-K families write float32 C only, and are not asked to."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gpu.loaded_kernels import compile_and_load
from tests.gpu.test_hmma import kind_config
from tuner.core.shape import Shape

pytestmark = pytest.mark.gpu

HMMA_TILES = ("hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8", "hmma_bm64_bn128_bk32_wpm1_wpn4_s2_sw1")
WGMMA_TILES = ("wgmma_bm128_bn256_bk64_wgm2_s4_sw8", "wgmma_bm64_bn64_bk64_wgm1_s6_sw1")
# Each input type writing its own type, over all four layouts.
KINDS = [
    ("float16", "NN", "float16"),
    ("float16", "TN", "float16"),
    ("bfloat16", "NT", "bfloat16"),
    ("bfloat16", "TT", "bfloat16"),
]
EDGE = [(1, 1, 1), (33, 17, 1), (3, 200, 7), (130, 1028, 1030), (257, 511, 1025), (1031, 66, 96)]


def _names(tiles: tuple[str, ...]) -> list[str]:
    return [kind_config(base, *kind) for kind in KINDS for base in tiles]


@pytest.fixture(scope="module")
def hmma_kernels() -> dict[str, tuple[Any, Any]]:
    return compile_and_load(_names(HMMA_TILES))


@pytest.fixture(scope="module")
def wgmma_kernels() -> dict[str, tuple[Any, Any]]:
    from tuner.gpu.device import live_device

    if live_device().arch != "sm_90":
        pytest.skip("wgmma runs on sm_90 only")
    return compile_and_load(_names(WGMMA_TILES))


def _check(kernels: dict[str, tuple[Any, Any]], tiles: tuple[str, ...], kind: tuple[str, ...]):
    from tuner.gpu.measure import verify

    failures = []
    for mnk in EDGE:
        shape = Shape(*mnk, *kind)
        for base in tiles:
            name = kind_config(base, *kind)
            assert name.endswith("_out1" if kind[2] == "float16" else "_out2")
            kernel, source = kernels[name]
            result = verify(kernel, source, shape, seed=sum(mnk))
            print(
                f"RESULT {shape.label()} {name} rel_error={result.rel_error:.3e} "
                f"(tol {result.tolerance:.1e}) fp32_error={result.reference_error:.3e} "
                f"(tol {result.reference_tolerance:.1e})"
            )
            if not result.ok:
                failures.append(f"{name} on {shape.label()}: {result.reason}")
    assert not failures, "; ".join(failures)


@pytest.mark.parametrize("kind", KINDS, ids="-".join)
def test_hmma_writes_a_half_c_as_cublas_does(
    kind: tuple[str, str, str], hmma_kernels: dict[str, tuple[Any, Any]]
) -> None:
    _check(hmma_kernels, HMMA_TILES, kind)


@pytest.mark.parametrize("kind", KINDS, ids="-".join)
def test_wgmma_writes_a_half_c_as_cublas_does(
    kind: tuple[str, str, str], wgmma_kernels: dict[str, tuple[Any, Any]]
) -> None:
    _check(wgmma_kernels, WGMMA_TILES, kind)


def test_a_kernel_writing_a_half_c_is_refused_for_a_float32_c(
    hmma_kernels: dict[str, tuple[Any, Any]],
) -> None:
    from tuner.gpu.measure import verify

    kernel, source = hmma_kernels[kind_config(HMMA_TILES[0], *KINDS[0])]
    with pytest.raises(ValueError, match="OUT=0"):
        verify(kernel, source, Shape(64, 64, 64, "float16", "NN", "float32"))


@pytest.mark.parametrize("out_dtype", ["float16", "bfloat16"])
def test_cublas_writes_a_half_c_near_the_exact_result(out_dtype: str) -> None:
    """cublasGemmEx writing a half C (the timed baseline): within one unit roundoff of C's type
    (plus the FP32 sums) of the float64 product of the rounded inputs, scaled with the rounded
    C."""
    import cupy

    from tuner.core.shape import UNIT_ROUNDOFF
    from tuner.gpu import half_arrays
    from tuner.gpu.measure import random_operands, relative_error, tolerance

    shape = Shape(37, 70, 129, out_dtype, "NT", out_dtype)
    a, b, c = random_operands(shape, seed=7)
    assert c.dtype == (cupy.float16 if out_dtype == "float16" else cupy.uint16)
    a64 = half_arrays.to_float32(a, out_dtype).astype(cupy.float64)
    b64 = half_arrays.to_float32(b, out_dtype).astype(cupy.float64).T
    c64 = half_arrays.to_float32(c, out_dtype).astype(cupy.float64)
    expected = 0.5 * (a64 @ b64) + 3.0 * c64
    out = c.copy()
    half_arrays.gemm(shape, 0.5, a, b, 3.0, out)
    error = relative_error(half_arrays.to_float32(out, out_dtype).astype(cupy.float64), expected)
    assert error <= UNIT_ROUNDOFF[out_dtype] + tolerance(shape.k, out_dtype)
    assert error > 0.0  # rounded to half: not the float64 values themselves
