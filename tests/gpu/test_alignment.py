"""Every family against cuBLAS (strict FP32) where rows are not whole 16-byte vectors: every
residue of M, N and K mod 16 (so mod 4 too), and operand views 4, 8 and 12 bytes past a 16-byte
boundary. The kernels decide at run time, from the row length and the pointer, whether rows are
16-byte vectors (``rows_are_float4``); where they are not, the ``cp.async`` families copy interior
chunks as four unchecked 4-byte copies and the others load floats, and both those paths and the
checked edges must give cuBLAS's answer."""

from __future__ import annotations

from typing import Any

import pytest

from tuner.core.accuracy import DEFAULT_ACCURACY
from tuner.core.shape import Shape
from tuner.kernels.families import FAMILIES
from tuner.kernels.representative import REPRESENTATIVE

pytestmark = pytest.mark.gpu

# Shape r has residues r, (5r + 3) % 16 and (11r + 7) % 16 for M, N and K: over the 16 shapes
# each dimension meets every residue mod 16 once. Sides of 272..287 hold a whole 256-wide tile
# and a ragged one; K of 160..175 whole k tiles (BK up to 64) and a ragged one.
RESIDUE_SHAPES = [
    Shape(272 + r, 272 + (5 * r + 3) % 16, 160 + (11 * r + 7) % 16) for r in range(16)
]
# Views of A, B and C that many floats past a 16-byte boundary: each offset on all three, and
# three different offsets at once.
OFFSETS = [(1, 1, 1), (2, 2, 2), (3, 3, 3), (1, 2, 3), (3, 0, 2)]
# Rows of whole float4s (only the pointers misalign them) and rows of 2 mod 4 floats (8-byte
# accesses where the view allows, 4-byte ones where it does not).
OFFSET_SHAPES = [Shape(283, 264, 176), Shape(283, 266, 178)]


@pytest.fixture(scope="module")
def residue_operands() -> dict[Shape, Any]:
    from tuner.gpu.measure import Operands

    return {shape: Operands.make(shape, seed=i) for i, shape in enumerate(RESIDUE_SHAPES)}


def test_residue_shapes_cover_every_residue() -> None:
    for dim in ("m", "n", "k"):
        residues = {getattr(shape, dim) % 16 for shape in RESIDUE_SHAPES}
        assert residues == set(range(16)), dim


# float32 families only: hmma (half inputs) has its edge shapes in test_hmma.py.
# Strict FP32 only: the emulated families (class bf16x3, whose representatives pin other
# layouts too) have their residues, offsets and pitches in test_emulated.py.
FP32_FAMILIES = [
    f
    for f in REPRESENTATIVE
    if "float32" in FAMILIES[f].dtypes and FAMILIES[f].accuracy == DEFAULT_ACCURACY
]


@pytest.mark.parametrize("family", FP32_FAMILIES)
def test_every_residue_mod_16_matches_cublas(
    family: str, kernels: dict[str, tuple[Any, Any]], residue_operands: dict[Shape, Any]
) -> None:
    from tuner.gpu.measure import verify

    for name in REPRESENTATIVE[family]:
        kernel, source = kernels[name]
        for shape, operands in residue_operands.items():
            result = verify(kernel, source, shape, operands=operands)
            assert result.ok, (
                f"{name} on {shape} (residues {shape.m % 16}, {shape.n % 16}, {shape.k % 16} "
                f"mod 16): relative error {result.rel_error:.3e} > {result.tolerance:.1e}"
            )


def _view(rng: Any, rows: int, cols: int, offset: int) -> Any:
    """A rows x cols matrix that starts ``offset`` floats into a fresh 16-byte aligned buffer."""
    import cupy as cp

    flat = rng.standard_normal(rows * cols + 4, dtype=cp.float32)
    assert flat.data.ptr % 16 == 0
    return flat[offset : offset + rows * cols].reshape(rows, cols)


@pytest.mark.parametrize("shape", OFFSET_SHAPES, ids=str)
@pytest.mark.parametrize("family", FP32_FAMILIES)
def test_unaligned_views_match_cublas(
    family: str, shape: Shape, kernels: dict[str, tuple[Any, Any]]
) -> None:
    """Both checks of ``verify``: C read and scaled (alpha 0.5, beta 3), and C poisoned with
    NaN and not read (alpha 1, beta 0)."""
    import cupy as cp

    from tuner.gpu.measure import cublas_gemm, launch, relative_error, tolerance

    rng = cp.random.default_rng(shape.n)
    for off_a, off_b, off_c in OFFSETS:
        a = _view(rng, shape.m, shape.k, off_a)
        b = _view(rng, shape.k, shape.n, off_b)
        c0 = _view(rng, shape.m, shape.n, off_c)
        for alpha, beta in ((0.5, 3.0), (1.0, 0.0)):
            ref = c0.copy()
            cublas_gemm(alpha, a, b, beta, ref)
            for name in REPRESENTATIVE[family]:
                kernel, source = kernels[name]
                c = _view(rng, shape.m, shape.n, off_c)
                c[...] = c0 if beta != 0.0 else cp.nan
                launch(kernel, source, shape, alpha, a, b, beta, c)
                err = relative_error(c, ref)
                assert err <= tolerance(shape.k), (
                    f"{name} on {shape}, views {off_a * 4}, {off_b * 4}, {off_c * 4} bytes past "
                    f"16-byte alignment, alpha {alpha}, beta {beta}: relative error {err:.3e}"
                )


# Row pitches this many floats past the row's length: ragged pitches of each residue mod 4, and
# whole-vector ones (the 16-byte path on a pitch that is not the row length).
PITCH_EXTRAS = [(1, 2, 3), (4, 8, 4), (3, 4, 1)]
LEADING_DIMS_FAMILIES = [f for f in FP32_FAMILIES if FAMILIES[f].leading_dims]


@pytest.mark.parametrize("shape", [*OFFSET_SHAPES, RESIDUE_SHAPES[5]], ids=str)
@pytest.mark.parametrize("family", LEADING_DIMS_FAMILIES)
def test_leading_dimensions_wider_than_rows_match_cublas(
    family: str, shape: Shape, kernels: dict[str, tuple[Any, Any]]
) -> None:
    """The families that take leading dimensions, on A, B and C that are column slices of
    wider arrays (``tuner.kernels.operand_padding.row_pitch``): cuBLAS's answer, and C's columns
    past its view left as they were."""
    import cupy as cp

    from tuner.gpu.measure import cublas_gemm, launch, relative_error, tolerance

    rng = cp.random.default_rng(shape.k)
    for extra_a, extra_b, extra_c in PITCH_EXTRAS:
        a = rng.standard_normal((shape.m, shape.k + extra_a), dtype=cp.float32)[:, : shape.k]
        b = rng.standard_normal((shape.k, shape.n + extra_b), dtype=cp.float32)[:, : shape.n]
        c0 = rng.standard_normal((shape.m, shape.n), dtype=cp.float32)
        for alpha, beta in ((0.5, 3.0), (1.0, 0.0)):
            ref = c0.copy()
            cublas_gemm(alpha, cp.ascontiguousarray(a), cp.ascontiguousarray(b), beta, ref)
            for name in REPRESENTATIVE[family]:
                kernel, source = kernels[name]
                wide = rng.standard_normal((shape.m, shape.n + extra_c), dtype=cp.float32)
                outside = wide[:, shape.n :].copy()
                c = wide[:, : shape.n]
                c[...] = c0 if beta != 0.0 else cp.nan
                launch(kernel, source, shape, alpha, a, b, beta, c)
                where = f"{name} on {shape}, pitches +{extra_a}, +{extra_b}, +{extra_c}"
                err = relative_error(c, ref)
                assert err <= tolerance(shape.k), f"{where}, beta {beta}: error {err:.3e}"
                assert bool(cp.all(wide[:, shape.n :] == outside)), where
