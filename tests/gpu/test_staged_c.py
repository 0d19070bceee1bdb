"""C through shared memory (templates/_staged_c.cuh.j2) against cuBLAS (strict FP32): configs
of both FP64 tensor-core families that take it, with warp tiles 16, 32 and 64 columns wide,
split and unsplit, on C rows of each residue mod 4, on C views in wider rows, and on a C whose
rows are whole float4s but whose base is 4 bytes off. C read and scaled (beta 3: the direct
store for a first slice, the staged one for later slices) and NaN-poisoned and not read (beta
0: staged); the columns of wider rows past C's view must stay as they were."""

from __future__ import annotations

from typing import Any

import pytest

from tuner.core.shape import Shape

CONFIGS = [
    "dmma_bm32_bn32_bk16_wm32_wn16_mk16_sk4_mb2_wd1",
    "dmma_bm128_bn64_bk32_wm16_wn64_mk4_sk1_mb1_wd0",
    "dmma_bm32_bn64_bk16_wm32_wn16_mk8_sk1_mb4_wd1",
    "dmma_pipelined_bm32_bn128_bk32_wm32_wn16_mk8_s2_sk1_mb2",
    "dmma_pipelined_bm64_bn128_bk16_wm32_wn64_mk16_s4_sk4_mb1",
    "dmma_pipelined_bm64_bn64_bk16_wm32_wn32_mk16_s4_sk1_mb3",
]
# N of each residue mod 4 (and ragged M and K), several block tiles each way.
SHAPES = [Shape(197, 261, 203), Shape(130, 390, 517), Shape(67, 131, 300), Shape(96, 128, 64)]
# (extra floats in C's row pitch, floats C's base is past 16-byte alignment)
C_LAYOUTS = [(0, 0), (1, 0), (3, 0), (0, 1)]


@pytest.fixture(scope="module")
def staged_kernels() -> dict[str, tuple[Any, Any]]:
    from tests.gpu.loaded_kernels import compile_and_load

    return compile_and_load(CONFIGS)


def _c_array(cp: Any, rng: Any, shape: Shape, extra: int, offset: int) -> tuple[Any, Any]:
    """C (M x N) as a view: rows ``extra`` floats wider than N, the base ``offset`` floats past
    a 16-byte boundary; and the whole buffer it lies in."""
    pitch = shape.n + extra
    flat = rng.standard_normal(shape.m * pitch + 4, dtype=cp.float32)
    whole = flat[offset : offset + shape.m * pitch].reshape(shape.m, pitch)
    return whole[:, : shape.n], flat


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_staged_c_matches_cublas_and_writes_nothing_else(
    shape: Shape, staged_kernels: dict[str, tuple[Any, Any]]
) -> None:
    import cupy as cp

    from tuner.gpu.measure import cublas_gemm, launch, relative_error, tolerance

    rng = cp.random.default_rng(shape.m * shape.n)
    a = rng.standard_normal((shape.m, shape.k), dtype=cp.float32)
    b = rng.standard_normal((shape.k, shape.n), dtype=cp.float32)
    c0 = rng.standard_normal((shape.m, shape.n), dtype=cp.float32)
    for extra, offset in C_LAYOUTS:
        for alpha, beta in ((0.5, 3.0), (1.0, 0.0)):
            ref = c0.copy()
            cublas_gemm(alpha, a, b, beta, ref)
            for name, (kernel, source) in staged_kernels.items():
                c, flat = _c_array(cp, rng, shape, extra, offset)
                c[...] = c0 if beta != 0.0 else cp.nan
                before = flat.copy()
                launch(kernel, source, shape, alpha, a, b, beta, c)
                where = f"{name} on {shape}, C pitch +{extra}, base +{4 * offset} B, beta {beta}"
                err = relative_error(c, ref)
                assert err <= tolerance(shape.k), f"{where}: relative error {err:.3e}"
                written = cp.zeros(flat.shape, dtype=bool)
                pitch = shape.n + extra
                view = written[offset : offset + shape.m * pitch].reshape(shape.m, pitch)
                view[:, : shape.n] = True
                assert bool(cp.all(flat[~written] == before[~written])), where
