"""tma_ws (sm_90 only) against cuBLAS in the same dtype (FP32 sums) and against FP32 on the
unrounded values, for both input types and every layout: aligned shapes with ragged tile edges
in M, N and K run directly (TMA zero-fills outside the matrix), shapes whose stored rows are not
whole 16-byte vectors (M, N, K = 1, 7, 63, 65, 127, 129 and every residue mod 8) through the
padded launch (``_pad8``). Each check is verify's two: alpha/beta with C read, and beta = 0 on
C poisoned with NaN. Skipped on any GPU but sm_90."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gpu.loaded_kernels import compile_and_load
from tests.gpu.test_padded_operands import HALF_RESIDUE_SHAPES
from tuner.core.config import PARAM_ABBR
from tuner.core.shape import SUPPORTED_LAYOUTS, Shape
from tuner.kernels.families.tma_ws import TMA_WS

pytestmark = pytest.mark.gpu

KINDS = [(dtype, layout) for dtype in ("float16", "bfloat16") for layout in SUPPORTED_LAYOUTS]
# Two consumers of one m64n256 tile each, 4 stages; one consumer of two m64n128 tiles, 5 stages,
# bands of columns; two consumers of two m64n64 tiles (BM 256) in 3 stages, tiles one by one.
# Clusters: 2x1 sharing B, 1x2 sharing A (each half loaded by one block and multicast).
TILES = (
    "tma_ws_bm128_bn256_bk64_cw2_s4_gr8_ra0_cm1_cn1",
    "tma_ws_bm128_bn128_bk64_cw1_s5_gr16_ra1_cm1_cn1",
    "tma_ws_bm256_bn64_bk64_cw2_s3_gr1_ra0_cm1_cn1",
    "tma_ws_bm128_bn256_bk64_cw2_s4_gr8_ra0_cm2_cn1",
    "tma_ws_bm256_bn128_bk64_cw2_s4_gr4_ra1_cm1_cn2",
)
# Every stored row a multiple of 8 halves, the tile edges ragged: one k tile and a part, a
# single partial tile, more tiles than SMs (the persistent loop comes round), K of 8.
ALIGNED = [
    (64, 64, 64),
    (8, 8, 8),
    (200, 72, 136),
    (1096, 520, 328),
    (2056, 2120, 64),
    (136, 264, 4104),
]
# Odd sides: 1, 7, 63, 65, 127, 129 in each dimension, through the padded launch.
ODD = [
    (1, 1, 1),
    (7, 63, 65),
    (65, 7, 127),
    (129, 127, 7),
    (63, 129, 1),
    (127, 65, 129),
]


def kind_config(base: str, dtype: str, layout: str) -> str:
    pinned = TMA_WS.pinned(Shape(8, 8, 8, dtype, layout))
    return "_".join([base, *(f"{PARAM_ABBR[name]}{value}" for name, value in pinned.items())])


@pytest.fixture(scope="module")
def kernels() -> dict[str, tuple[Any, Any]]:
    from tuner.gpu.device import live_device

    if live_device().arch != "sm_90":
        pytest.skip("tma_ws runs on sm_90 only")
    names = [kind_config(base, *kind) for kind in KINDS for base in TILES]
    return compile_and_load(names + [kind_config(TILES[1], *kind) + "_pad8" for kind in KINDS])


def _check(kernels: dict[str, tuple[Any, Any]], name: str, shape: Shape) -> str | None:
    from tuner.gpu.measure import verify

    kernel, source = kernels[name]
    result = verify(kernel, source, shape, seed=shape.m + 3 * shape.n + 7 * shape.k)
    print(f"RESULT tma_ws {shape.label()} {name} rel_error={result.rel_error:.3e}")
    return None if result.ok else f"{name}: {result.reason}"


@pytest.mark.parametrize(("dtype", "layout"), KINDS)
@pytest.mark.parametrize("mnk", ALIGNED, ids=lambda d: "x".join(map(str, d)))
def test_tma_ws_matches_cublas_on_aligned_rows(
    dtype: str, layout: str, mnk: tuple[int, int, int], kernels: dict[str, tuple[Any, Any]]
) -> None:
    shape = Shape(*mnk, dtype, layout)
    failures = [_check(kernels, kind_config(base, dtype, layout), shape) for base in TILES]
    failures = [f for f in failures if f]
    assert not failures, f"on {shape.label()}: " + "; ".join(failures)


@pytest.mark.parametrize(("dtype", "layout"), KINDS)
def test_padded_tma_ws_matches_cublas_on_odd_sides_and_every_residue(
    dtype: str, layout: str, kernels: dict[str, tuple[Any, Any]]
) -> None:
    name = kind_config(TILES[1], dtype, layout) + "_pad8"
    failures = []
    for mnk in ODD + HALF_RESIDUE_SHAPES:
        shape = Shape(*mnk, dtype, layout)
        failure = _check(kernels, name, shape)
        if failure:
            failures.append(f"{shape.label()}: {failure}")
    assert not failures, "; ".join(failures)


def test_direct_tma_ws_refuses_a_misaligned_view(kernels: dict[str, tuple[Any, Any]]) -> None:
    """A view 2 bytes past a 16-byte boundary cannot be a TMA base: the launch says so rather
    than computing garbage."""
    import cupy as cp

    from tuner.gpu.measure import launch

    shape = Shape(64, 64, 64, "float16", "NT")
    flat = cp.zeros(64 * 64 + 8, dtype=cp.float16)
    a = flat[1 : 1 + 64 * 64].reshape(64, 64)
    b = cp.ones((64, 64), dtype=cp.float16)
    c = cp.empty((64, 64), dtype=cp.float32)
    kernel, source = kernels[kind_config(TILES[0], "float16", "NT")]
    with pytest.raises(ValueError, match="16-byte aligned base"):
        launch(kernel, source, shape, 1.0, a, b, 0.0, c)
