"""Padded configs against cuBLAS: ``_pad4`` in strict FP32 on every residue of M, N and K mod 4,
operand views off a 16-byte boundary, and the caller's arrays left as they were (only C
written, and only its M x N); ``_pad8`` (hmma) in FP16 and BF16, every layout, every residue of
M, N and K mod 8."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gpu.loaded_kernels import compile_and_load
from tests.gpu.test_hmma import KINDS, kind_config
from tuner.core.shape import Shape

pytestmark = pytest.mark.gpu

# A ring of cp.async copies with and without a K split, and a register-staged family.
PADDED = [
    "dmma_pipelined_bm64_bn128_bk16_wm32_wn32_mk4_s3_sk1_mb2_pad4",
    "dmma_pipelined_bm64_bn64_bk32_wm32_wn64_mk16_s3_sk4_mb1_pad4",
    "dmma_bm32_bn64_bk16_wm32_wn16_mk8_sk1_mb4_wd1_pad4",
    "pipelined_bm128_bn64_bk32_wm32_wn32_wni1_tm4_tn4_t256_s4_pad4",
]
# Over the four shapes each of M, N and K meets every residue mod 4 (K of 129..132: a ragged
# last k tile too).
RESIDUE_SHAPES = [Shape(200 + r, 200 + (r + 1) % 4, 129 + (r + 2) % 4) for r in range(4)]
# Over the eight shapes each of M, N and K meets every residue mod 8 (8 halves to a vector).
HALF_RESIDUE_SHAPES = [(136 + r, 136 + (r + 3) % 8, 96 + (r + 5) % 8) for r in range(8)]
HALF_TILE = "hmma_bm64_bn64_bk64_wpm2_wpn2_s3_sw4"
# Floats past a 16-byte boundary for A, B and C.
OFFSETS = [(1, 2, 3), (0, 0, 1), (2, 0, 0)]


@pytest.fixture(scope="module")
def padded_kernels() -> dict[str, tuple[Any, Any]]:
    return compile_and_load(PADDED)


def test_residue_shapes_cover_every_residue_mod_4() -> None:
    for dim in ("m", "n", "k"):
        assert {getattr(s, dim) % 4 for s in RESIDUE_SHAPES} == {0, 1, 2, 3}, dim


@pytest.mark.parametrize("shape", RESIDUE_SHAPES, ids=str)
def test_padded_configs_match_cublas_on_every_residue(
    shape: Shape, padded_kernels: dict[str, tuple[Any, Any]]
) -> None:
    from tuner.gpu.measure import Operands, verify

    operands = Operands.make(shape, seed=shape.m)
    for name, (kernel, source) in padded_kernels.items():
        result = verify(kernel, source, shape, operands=operands)
        assert result.ok, f"{name} on {shape}: {result.reason}"


def _view(rng: Any, rows: int, cols: int, offset: int) -> Any:
    """A rows x cols matrix that starts ``offset`` floats into a fresh 16-byte aligned buffer."""
    import cupy as cp

    flat = rng.standard_normal(rows * cols + 4, dtype=cp.float32)
    assert flat.data.ptr % 16 == 0
    return flat[offset : offset + rows * cols].reshape(rows, cols)


@pytest.mark.parametrize("shape", [Shape(150, 96, 64), Shape(150, 97, 66)], ids=str)
def test_padded_configs_match_cublas_on_unaligned_views(
    shape: Shape, padded_kernels: dict[str, tuple[Any, Any]]
) -> None:
    """Rows of whole float4s whose bases are off (only the pointers call for copies), and
    ragged rows on top; C read and scaled (beta 3), and C NaN-poisoned and not read (beta 0).
    A and B are left as they were, and C's memory outside its M x N view is untouched."""
    import cupy as cp

    from tuner.gpu.measure import cublas_gemm, launch, relative_error, tolerance

    rng = cp.random.default_rng(shape.n)
    for off_a, off_b, off_c in OFFSETS:
        a = _view(rng, shape.m, shape.k, off_a)
        b = _view(rng, shape.k, shape.n, off_b)
        c0 = _view(rng, shape.m, shape.n, off_c)
        a_before, b_before = a.copy(), b.copy()
        for alpha, beta in ((0.5, 3.0), (1.0, 0.0)):
            ref = c0.copy()
            cublas_gemm(alpha, a, b, beta, ref)
            for name, (kernel, source) in padded_kernels.items():
                base = rng.standard_normal(shape.m * shape.n + 8, dtype=cp.float32)
                outside = base.copy()
                c = base[4 + off_c : 4 + off_c + shape.m * shape.n].reshape(shape.m, shape.n)
                c[...] = c0 if beta != 0.0 else cp.nan
                launch(kernel, source, shape, alpha, a, b, beta, c)
                err = relative_error(c, ref)
                where = f"{name} on {shape}, views {off_a}, {off_b}, {off_c} floats off"
                assert err <= tolerance(shape.k), f"{where}, beta {beta}: error {err:.3e}"
                assert bool(cp.all(base[: 4 + off_c] == outside[: 4 + off_c])), where
                assert bool(cp.all(base[4 + off_c + c.size :] == outside[4 + off_c + c.size :]))
        assert bool(cp.all(a == a_before)) and bool(cp.all(b == b_before))


# Floats added to A's and B's rows: pitches that are not whole float4s (copied), and pitches
# that are (150 x 97 x 66: 68 and 100), which a kernel taking leading dimensions reads in place.
@pytest.mark.parametrize("extra", [(3, 5), (2, 3)], ids=str)
@pytest.mark.parametrize("shape", [Shape(150, 97, 66), Shape(131, 64, 64)], ids=str)
def test_padded_configs_read_and_write_rows_at_their_own_pitch(
    shape: Shape, extra: tuple[int, int], padded_kernels: dict[str, tuple[Any, Any]]
) -> None:
    """A, B and C as column slices of wider arrays: the copies read (and C's copy back writes)
    each row at the array's own pitch, whether the kernel takes leading dimensions or runs on
    packed buffers, and views in rows of whole vectors are read where they lie; C's columns
    past its view stay as they were."""
    import cupy as cp

    from tuner.gpu.measure import cublas_gemm, launch, relative_error, tolerance

    rng = cp.random.default_rng(shape.k)
    a = rng.standard_normal((shape.m, shape.k + extra[0]), dtype=cp.float32)[:, : shape.k]
    b = rng.standard_normal((shape.k, shape.n + extra[1]), dtype=cp.float32)[:, : shape.n]
    c0 = rng.standard_normal((shape.m, shape.n), dtype=cp.float32)
    for alpha, beta in ((0.5, 3.0), (1.0, 0.0)):
        ref = c0.copy()
        cublas_gemm(alpha, cp.ascontiguousarray(a), cp.ascontiguousarray(b), beta, ref)
        for name, (kernel, source) in padded_kernels.items():
            wide = rng.standard_normal((shape.m, shape.n + 2), dtype=cp.float32)
            outside = wide[:, shape.n :].copy()
            c = wide[:, : shape.n]
            c[...] = c0 if beta != 0.0 else cp.nan
            launch(kernel, source, shape, alpha, a, b, beta, c)
            err = relative_error(c, ref)
            assert err <= tolerance(shape.k), f"{name} on {shape}, beta {beta}: error {err:.3e}"
            assert bool(cp.all(wide[:, shape.n :] == outside)), name


@pytest.fixture(scope="module")
def half_padded_kernels() -> dict[str, tuple[Any, Any]]:
    return compile_and_load([kind_config(HALF_TILE, *kind) + "_pad8" for kind in KINDS])


def test_half_residue_shapes_cover_every_residue_mod_8() -> None:
    for dim in range(3):
        assert {s[dim] % 8 for s in HALF_RESIDUE_SHAPES} == set(range(8)), dim


@pytest.mark.parametrize(("dtype", "layout"), KINDS)
def test_half_padded_configs_match_cublas_on_every_residue(
    dtype: str, layout: str, half_padded_kernels: dict[str, tuple[Any, Any]]
) -> None:
    from tuner.gpu.measure import verify

    name = kind_config(HALF_TILE, dtype, layout) + "_pad8"
    kernel, source = half_padded_kernels[name]
    for mnk in HALF_RESIDUE_SHAPES:
        shape = Shape(*mnk, dtype, layout, "float32")
        result = verify(kernel, source, shape, seed=sum(mnk))
        assert result.ok, f"{name} on {shape.label()}: {result.reason}"
