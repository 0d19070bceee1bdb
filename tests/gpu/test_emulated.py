"""FP32 emulated on the BF16 tensor cores (``hmma_bf16x3``; ``wgmma_bf16x3``, ``tma_ws_bf16x3`` on
sm_90) against cuBLAS in strict FP32, within the FP32 tolerance plus the ``bf16x3`` class's
allowance: every layout, hmma's edge shapes (every residue of M, N and K mod 8, K = 1, ragged
tiles), every residue mod 16 (NN), operand views 4, 8 and 12 bytes past a 16-byte boundary and
operands whose rows are further apart than their length, whose float32 rows the split reads
wherever they lie."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gpu.loaded_kernels import compile_and_load
from tests.gpu.test_alignment import RESIDUE_SHAPES
from tests.gpu.test_hmma import EDGE, kind_config
from tuner.core.shape import SUPPORTED_LAYOUTS, Shape

pytestmark = pytest.mark.gpu

# hmma's 4-warp 128x128 tile in 3 stages, and its split-K twin in 4 slices; wgmma's two
# warpgroups of n256 in 4 stages, and its split-K twin in 3 slices.
HMMA_TILES = (
    "hmma_bf16x3_bm128_bn128_bk32_wpm2_wpn2_s3_sw4",
    "hmma_splitk_bf16x3_bm64_bn64_bk32_wpm2_wpn2_s3_sw1_sk4",
)
WGMMA_TILES = (
    "wgmma_bf16x3_bm128_bn256_bk64_wgm2_s4_sw8",
    "wgmma_splitk_bf16x3_bm128_bn64_bk64_wgm2_s3_sw1_sk3",
)
# tma_ws's two consumer warpgroups of n256 in 4 stages with the TMA-store epilogue (taken where
# beta is 0 and C's rows lie on 16 bytes), one consumer of n128 in 2x1 clusters, and two
# consumers taking 64x256 tiles in turn (PINGPONG).
TMA_WS_TILES = (
    "tma_ws_bf16x3_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep1_cm1_cn1",
    "tma_ws_bf16x3_bm128_bn128_bk64_cw1_s5_gr16_ra1_ep0_cm2_cn1",
    "tma_ws_bf16x3_bm64_bn256_bk64_cw2_pp1_s4_gr8_ra0_ep1_cm1_cn1",
)
# Each group is compiled and checked apart (``-k tma_ws`` runs one); the last two need sm_90.
TILE_GROUPS = {"hmma": HMMA_TILES, "wgmma": WGMMA_TILES, "tma_ws": TMA_WS_TILES}
SM_90_GROUPS = ("wgmma", "tma_ws")
OFFSETS = [(1, 1, 1), (2, 2, 2), (3, 3, 3), (1, 2, 3)]


def _name(base: str, layout: str) -> str:
    return kind_config(base, "bfloat16", layout)  # the split's parts are BF16


@pytest.fixture(scope="module", params=list(TILE_GROUPS))
def kernels(request: pytest.FixtureRequest) -> dict[str, tuple[Any, Any]]:
    from tuner.gpu.device import live_device

    group = request.param
    if group in SM_90_GROUPS and live_device().arch != "sm_90":
        pytest.skip(f"{group} runs on sm_90 only")
    tiles = TILE_GROUPS[group]
    return compile_and_load([_name(base, layout) for base in tiles for layout in SUPPORTED_LAYOUTS])


@pytest.mark.parametrize("layout", SUPPORTED_LAYOUTS)
@pytest.mark.parametrize("mnk", EDGE, ids=lambda d: "x".join(map(str, d)))
def test_emulated_matches_strict_fp32_cublas(
    layout: str, mnk: tuple[int, int, int], kernels: dict[str, tuple[Any, Any]]
) -> None:
    from tuner.gpu.measure import verify

    shape = Shape(*mnk, "float32", layout)
    failures = []
    for name, (kernel, source) in kernels.items():
        if not name.endswith(_name("", layout)):
            continue
        result = verify(kernel, source, shape, seed=sum(mnk))
        print(f"RESULT bf16x3 {shape.label()} {name} rel_error={result.rel_error:.3e}")
        if not result.ok:
            failures.append(f"{name}: {result.reason}")
    assert not failures, f"on {shape.label()}: " + "; ".join(failures)


def _view(cp: Any, rng: Any, rows: int, cols: int, offset: int) -> Any:
    """A rows x cols float32 matrix starting ``offset`` floats into a fresh aligned buffer."""
    flat = cp.empty(rows * cols + 4, dtype=cp.float32)
    view = flat[offset : offset + rows * cols].reshape(rows, cols)
    view[...] = rng.standard_normal((rows, cols), dtype=cp.float32)
    return view


@pytest.mark.parametrize("offsets", OFFSETS, ids=lambda o: "-".join(map(str, o)))
@pytest.mark.parametrize("layout", SUPPORTED_LAYOUTS)
def test_emulated_reads_and_writes_misaligned_views(
    layout: str, offsets: tuple[int, int, int], kernels: dict[str, tuple[Any, Any]]
) -> None:
    import cupy as cp

    from tuner.core.accuracy import allowance
    from tuner.gpu.measure import launch, relative_error, shape_gemm, stored_shapes, tolerance

    shape = Shape(283, 266, 181, "float32", layout)
    rng = cp.random.default_rng(sum(offsets))
    a_shape, b_shape = stored_shapes(shape)
    a = _view(cp, rng, *a_shape, offsets[0])
    b = _view(cp, rng, *b_shape, offsets[1])
    c0 = _view(cp, rng, shape.m, shape.n, offsets[2])
    expected = c0.copy()
    shape_gemm(shape, 0.5, a, b, 3.0, expected)
    limit = tolerance(shape.k) + allowance("bf16x3")
    for name, (kernel, source) in kernels.items():
        if not name.endswith(_name("", layout)):
            continue
        c = _view(cp, rng, shape.m, shape.n, offsets[2])
        c[...] = c0
        launch(kernel, source, shape, 0.5, a, b, 3.0, c)
        error = relative_error(c, expected)
        assert error <= limit, f"{name} at offsets {offsets}: relative error {error:.2e}"


@pytest.mark.parametrize("shape", RESIDUE_SHAPES, ids=str)
def test_emulated_matches_on_every_residue_mod_16(
    shape: Shape, kernels: dict[str, tuple[Any, Any]]
) -> None:
    from tuner.gpu.measure import verify

    for name, (kernel, source) in kernels.items():
        if name.endswith(_name("", "NN")):
            result = verify(kernel, source, shape, seed=shape.m)
            assert result.ok, f"{name} on {shape}: {result.reason}"


@pytest.mark.parametrize("extras", [(1, 2, 3), (4, 8, 4)], ids=str)
def test_emulated_reads_operands_whose_pitch_is_wider_than_their_rows(
    extras: tuple[int, int, int], kernels: dict[str, tuple[Any, Any]]
) -> None:
    """A, B and C as column slices of wider arrays: the split reads each row at its pitch, and
    the half kernel writes C's view in place, leaving the columns past it as they were."""
    import cupy as cp

    from tuner.core.accuracy import allowance
    from tuner.gpu.measure import cublas_gemm, launch, relative_error, tolerance

    shape = Shape(283, 266, 181)
    rng = cp.random.default_rng(sum(extras))
    a = rng.standard_normal((shape.m, shape.k + extras[0]), dtype=cp.float32)[:, : shape.k]
    b = rng.standard_normal((shape.k, shape.n + extras[1]), dtype=cp.float32)[:, : shape.n]
    c0 = rng.standard_normal((shape.m, shape.n), dtype=cp.float32)
    ref = c0.copy()
    cublas_gemm(0.5, cp.ascontiguousarray(a), cp.ascontiguousarray(b), 3.0, ref)
    for name, (kernel, source) in kernels.items():
        if not name.endswith(_name("", "NN")):
            continue
        wide = rng.standard_normal((shape.m, shape.n + extras[2]), dtype=cp.float32)
        outside = wide[:, shape.n :].copy()
        c = wide[:, : shape.n]
        c[...] = c0
        launch(kernel, source, shape, 0.5, a, b, 3.0, c)
        assert relative_error(c, ref) <= tolerance(shape.k) + allowance("bf16x3"), name
        assert bool(cp.all(wide[:, shape.n :] == outside)), f"{name} wrote past C's view"
