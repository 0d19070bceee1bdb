"""tma_ws (sm_90 only) against cuBLAS in the same dtype (FP32 sums) and against FP32 on the
unrounded values, for both input types and every layout: aligned shapes with ragged tile edges
in M, N and K run directly (TMA zero-fills outside the matrix), shapes whose stored rows are not
whole 16-byte vectors (M, N, K = 1, 7, 63, 65, 127, 129 and every residue mod 8) through the
padded launch (``_pad8``), views off 16 bytes through the copies ``launch`` makes for them; and
C of float16 and bfloat16. Each check is verify's two: alpha/beta with C read, and beta = 0 on
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
# EPI 1: C through shared memory by TMA stores where beta == 0. The deep rings of small tiles:
# 12 stages of 64x64 in a 2x1 cluster, 8 of 64x128 (the ring's parity turns over at 12 and 8).
TILES = (
    "tma_ws_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep0_cm1_cn1",
    "tma_ws_bm128_bn128_bk64_cw1_s5_gr16_ra1_ep1_cm1_cn1",
    "tma_ws_bm256_bn64_bk64_cw2_s3_gr1_ra0_ep1_cm1_cn1",
    "tma_ws_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep1_cm2_cn1",
    "tma_ws_bm256_bn128_bk64_cw2_s4_gr4_ra1_ep0_cm1_cn2",
    "tma_ws_bm64_bn64_bk64_cw1_s12_gr1_ra0_ep1_cm2_cn1",
    "tma_ws_bm64_bn128_bk64_cw1_s8_gr8_ra0_ep0_cm1_cn1",
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


def kind_config(base: str, dtype: str, layout: str, out: str | None = None) -> str:
    """``base`` pinned for the dtype, layout and type of C (None: the input type); a config's
    name leaves OUT out where it is 0 (float32 C)."""
    pinned = TMA_WS.pinned(Shape(8, 8, 8, dtype, layout, out))
    tokens = (f"{PARAM_ABBR[name]}{value}" for name, value in pinned.items())
    return "_".join([base, *(t for t in tokens if t != "out0")])


def sm90_kernels(names: list[str]) -> dict[str, tuple[Any, Any]]:
    """``names`` compiled and loaded, or the test skipped on any GPU but sm_90."""
    from tuner.gpu.device import live_device

    if live_device().arch != "sm_90":
        pytest.skip("tma_ws runs on sm_90 only")
    return compile_and_load(names)


@pytest.fixture(scope="module")
def kernels() -> dict[str, tuple[Any, Any]]:
    names = [kind_config(base, *kind) for kind in KINDS for base in TILES]
    return sm90_kernels(names + [kind_config(TILES[1], *kind) + "_pad8" for kind in KINDS])


def _check(kernels: dict[str, tuple[Any, Any]], name: str, shape: Shape) -> str | None:
    from tuner.gpu.measure import verify

    kernel, source = kernels[name]
    result = verify(kernel, source, shape, seed=shape.m + 3 * shape.n + 7 * shape.k)
    print(f"RESULT tma_ws {shape.label()} {name} rel_error={result.rel_error:.3e}")
    return None if result.ok else f"{name}: {result.reason}"


def _failures(
    kernels: dict[str, tuple[Any, Any]],
    kinds: list[tuple[str, str, str, str | None]],
    mnk: tuple[int, int, int],
    launches: int = 1,
) -> list[str]:
    """verify's checks of every (base, input type, layout, type of C) of ``kinds`` on ``mnk``,
    each ``launches`` times over: what failed."""
    failures = []
    for base, dtype, layout, out in kinds:
        name = kind_config(base, dtype, layout, out)
        shape = Shape(*mnk, dtype, layout, out)
        for _ in range(launches):
            failure = _check(kernels, name, shape)
            if failure:
                failures.append(failure)
    return failures


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


@pytest.mark.parametrize("offsets", [(1, 0), (0, 3), (5, 6)], ids=str)
@pytest.mark.parametrize("layout", ["NN", "NT"])
def test_a_view_off_16_bytes_runs_through_copies_and_the_raw_launch_refuses_it(
    layout: str, offsets: tuple[int, int], float32_c_kernels: dict[str, tuple[Any, Any]]
) -> None:
    """float16 A and B as views 2 to 12 bytes past a 16-byte boundary (rows of whole 16-byte
    vectors otherwise) cannot be TMA bases: ``launch`` copies them first and matches FP32 sums of
    the same values; the raw kernel launch says why it cannot take them."""
    import cupy as cp

    from tuner.gpu.measure import launch, launch_kernel, relative_error

    shape = Shape(136, 264, 200, "float16", layout, "float32")
    rng = cp.random.default_rng(sum(offsets))
    b_rows, b_cols = (shape.k, shape.n) if layout == "NN" else (shape.n, shape.k)

    def view(rows: int, cols: int, offset: int) -> Any:
        flat = rng.standard_normal(rows * cols + 8, dtype=cp.float32).astype(cp.float16)
        return flat[offset : offset + rows * cols].reshape(rows, cols)

    a, b = view(shape.m, shape.k, offsets[0]), view(b_rows, b_cols, offsets[1])
    b_kn = b if layout == "NN" else b.T
    ref = a.astype(cp.float32) @ b_kn.astype(cp.float32)
    kernel, source = float32_c_kernels[kind_config(TILES[0], "float16", layout, "float32")]
    c = cp.full((shape.m, shape.n), cp.nan, dtype=cp.float32)
    launch(kernel, source, shape, 1.0, a, b, 0.0, c)
    assert relative_error(c, ref) <= 1e-5
    with pytest.raises(ValueError, match="16-byte aligned base"):
        launch_kernel(kernel, source, shape, 1.0, a, b, 0.0, c)


@pytest.fixture(scope="module")
def float32_c_kernels() -> dict[str, tuple[Any, Any]]:
    return sm90_kernels(
        [kind_config(TILES[0], "float16", layout, "float32") for layout in ("NN", "NT")]
    )


# C of 16-bit types (OUT 1 float16, 2 bfloat16: the inputs' own), direct and by TMA stores.
HALF_C_TILES = (
    "tma_ws_bm128_bn128_bk64_cw1_s5_gr16_ra1_ep0_cm1_cn1",
    "tma_ws_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep1_cm2_cn1",
)
HALF_C_BITS = {1: ("float16", 0x7E00), 2: ("bfloat16", 0x7FC0)}  # the type and a NaN of it
# Relative error allowed after rounding C to the type (a few unit roundoffs, the sums' error
# far below it).
HALF_C_TOLERANCE = {1: 2e-3, 2: 1.2e-2}


@pytest.fixture(scope="module")
def half_c_kernels() -> dict[str, tuple[Any, Any]]:
    names = [
        f"{base}_dt{out - 1}_ly{layout}_out{out}"  # float16 inputs (dt0) for OUT 1, bfloat16 for 2
        for base in HALF_C_TILES
        for layout in (0, 1)
        for out in HALF_C_BITS
    ]
    return sm90_kernels(names)


@pytest.mark.parametrize("out", sorted(HALF_C_BITS))
@pytest.mark.parametrize("layout", ["NN", "NT"])
@pytest.mark.parametrize("mnk", [(200, 72, 136), (1096, 520, 328)], ids=str)
def test_tma_ws_writes_half_c(
    out: int, layout: str, mnk: tuple[int, int, int], half_c_kernels: dict[str, tuple[Any, Any]]
) -> None:
    """C of float16 or bfloat16: alpha * A@B + beta * C against FP32 sums of the same inputs,
    within the rounding of C's type; with beta = 0 C starts as NaN and must not be read."""
    import cupy as cp

    from tuner.gpu import half_arrays
    from tuner.gpu.measure import launch, random_operands, relative_error

    c_type, nan_bits = HALF_C_BITS[out]
    shape = Shape(*mnk, c_type, layout, c_type)  # C in the inputs' own type
    a, b, c32 = random_operands(Shape(*mnk, c_type, layout, "float32"), seed=out)
    a32 = half_arrays.to_float32(a, c_type)
    b32 = half_arrays.to_float32(b, c_type)
    product = (a32 if layout[0] == "N" else a32.T) @ (b32 if layout[1] == "N" else b32.T)
    c0 = half_arrays.from_float32(c32, c_type)
    for base in HALF_C_TILES:
        name = f"{base}_dt{out - 1}_ly{['NN', 'NT'].index(layout)}_out{out}"
        kernel, source = half_c_kernels[name]
        for alpha, beta in ((0.5, 3.0), (1.0, 0.0)):
            if beta == 0.0:
                c = cp.full(c0.shape, nan_bits, dtype=cp.uint16).view(c0.dtype)
            else:
                c = c0.copy()
            launch(kernel, source, shape, alpha, a, b, beta, c)
            got = half_arrays.to_float32(c, c_type)
            want = alpha * product + beta * half_arrays.to_float32(c0, c_type)
            err = relative_error(got, want)
            assert err <= HALF_C_TOLERANCE[out], f"{name} alpha={alpha} beta={beta}: {err:.2e}"


# The stream-K tail (TAIL 1; float32 C, the pieces meeting by atomic adds): two consumers of
# m64n256 whose whole tiles go out by TMA stores, in every layout of BF16; one consumer of
# m64n128 with direct stores, FP16 NT.
TAIL_KINDS = [
    ("tma_ws_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep1_cm1_cn1_tl1", "bfloat16", layout)
    for layout in SUPPORTED_LAYOUTS
] + [("tma_ws_bm128_bn128_bk64_cw1_s5_gr16_ra1_ep0_cm1_cn1_tl1", "float16", "NT")]
# Full rounds then a partial one (192 tiles of 128x256 for 132 SMs, 2.9 rounds of 128x128);
# fewer tiles than SMs, each tile's K cut into dozens of pieces; one tile; ragged edges with a
# deep K; fewer k tiles than blocks (most blocks get no piece).
TAIL_SHAPES = [(1536, 4096, 1032), (256, 256, 8192), (64, 64, 64), (200, 72, 4104), (520, 1096, 64)]


@pytest.fixture(scope="module")
def tail_kernels() -> dict[str, tuple[Any, Any]]:
    return sm90_kernels([kind_config(b, d, ly, "float32") for b, d, ly in TAIL_KINDS])


@pytest.mark.parametrize("mnk", TAIL_SHAPES, ids=lambda d: "x".join(map(str, d)))
def test_the_stream_k_tail_matches_cublas(
    mnk: tuple[int, int, int], tail_kernels: dict[str, tuple[Any, Any]]
) -> None:
    """verify's two launches, back to back: alpha/beta with C read (the first piece of a tile to
    arrive applies beta, the others add), then beta = 0 on NaN-poisoned C (every element
    written); the second also finds the hand-off's counters reset by the first."""
    failures = _failures(tail_kernels, [(*kind, "float32") for kind in TAIL_KINDS], mnk)
    assert not failures, f"on {mnk}: " + "; ".join(failures)


# K split into pieces (SPLIT > 1) meeting in float32 sums, the last piece writing C: BF16 with a
# BF16 C in every layout (two consumers of m64n128, TMA stores); FP16 with an FP16 C through
# direct stores (one consumer of m64n64, 8 pieces); float32 C from 3 pieces of m64n256 tiles;
# and 32 pieces of one consumer's m64n128 tiles, more pieces than k tiles on the short shapes.
SPLIT_KINDS = [
    ("tma_ws_bm128_bn128_bk64_cw2_s6_gr8_ra0_ep1_cm1_cn1_sp4", "bfloat16", layout, "bfloat16")
    for layout in SUPPORTED_LAYOUTS
] + [
    ("tma_ws_bm64_bn64_bk64_cw1_s6_gr8_ra0_ep0_cm1_cn1_sp8", "float16", "NT", "float16"),
    ("tma_ws_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep0_cm1_cn1_sp3", "bfloat16", "NN", "float32"),
    ("tma_ws_bm64_bn128_bk64_cw1_s6_gr1_ra1_ep1_cm1_cn1_sp32", "bfloat16", "NT", "bfloat16"),
]
# Few tiles with a deep K (every tile split); ragged edges and a deep K; one tile of one k tile
# (most pieces empty); more pieces than blocks (a block walks several, the grid comes round);
# more tiles than slots (no split: piece 0 does all of K); 16 rows (one warp's rows in C); 40
# rows (a warp whose 16 rows straddle M) and a single row: the warps wholly past M keep out of
# the slot, so a wrong row bound shows up as missing or stale sums there.
SPLIT_SHAPES = [
    (256, 256, 8192),
    (200, 72, 4104),
    (64, 64, 64),
    (1096, 520, 328),
    (2056, 2120, 64),
    (16, 4096, 1032),
    (40, 520, 4104),
    (1, 1032, 2048),
]


@pytest.fixture(scope="module")
def split_kernels() -> dict[str, tuple[Any, Any]]:
    return sm90_kernels([kind_config(*kind) for kind in SPLIT_KINDS])


@pytest.mark.parametrize("mnk", SPLIT_SHAPES, ids=lambda d: "x".join(map(str, d)))
def test_the_k_split_matches_cublas_in_every_type_of_c(
    mnk: tuple[int, int, int], split_kernels: dict[str, tuple[Any, Any]]
) -> None:
    """verify's two launches, twice over: alpha/beta with C read (the last piece of a tile
    applies beta once), then beta = 0 on NaN-poisoned C; the later launches find every slot
    cleared and every counter reset by the earlier ones, or their sums would be off."""
    failures = _failures(split_kernels, SPLIT_KINDS, mnk, launches=2)
    assert not failures, f"on {mnk}: " + "; ".join(failures)


# Short tiles (BM 16 or 32: the first rows of one m64 wgmma, A stored along K): 16-row tiles in
# a 16-stage ring in both such layouts and input types; 32-row tiles of 128 columns cut into 4
# pieces of K with a BF16 C; 16-row tiles of 128 columns in 2 pieces with a float32 C.
SHORT_KINDS = [
    ("tma_ws_bm16_bn64_bk64_cw1_s16_gr1_ra0_ep0_cm1_cn1", dtype, layout, None)
    for dtype in ("float16", "bfloat16")
    for layout in ("NN", "NT")
] + [
    ("tma_ws_bm32_bn128_bk64_cw1_s8_gr8_ra1_ep0_cm1_cn1_sp4", "bfloat16", "NT", "bfloat16"),
    ("tma_ws_bm16_bn128_bk64_cw1_s12_gr1_ra0_ep0_cm1_cn1_sp2", "float16", "NN", "float32"),
]
# One row; one warp's 16 rows; 17 and 40 rows (a second row tile, partly past M); rows of many
# tiles with ragged N and K; more tiles than split slots (no split).
SHORT_SHAPES = [
    (1, 64, 64),
    (16, 4096, 1032),
    (17, 520, 328),
    (40, 1096, 4104),
    (100, 72, 136),
    (2056, 264, 64),
]


@pytest.fixture(scope="module")
def short_kernels() -> dict[str, tuple[Any, Any]]:
    return sm90_kernels([kind_config(*kind) for kind in SHORT_KINDS])


@pytest.mark.parametrize("mnk", SHORT_SHAPES, ids=lambda d: "x".join(map(str, d)))
def test_short_tiles_match_cublas(
    mnk: tuple[int, int, int], short_kernels: dict[str, tuple[Any, Any]]
) -> None:
    """A short tile's m64 wgmma also multiplies rows that are not its own (B's bytes after A's
    rows in the stage); only its first BM rows may reach C or the split's slot, so a tile that
    wrote more would overwrite the next tile's rows (NaN-poisoned C shows stale ones)."""
    failures = _failures(short_kernels, SHORT_KINDS, mnk, launches=2)
    assert not failures, f"on {mnk}: " + "; ".join(failures)


# PINGPONG 1: the two consumers take whole tiles in turn. One m64n256 tile each in every input
# type and layout; two m64n128 tiles each in bands of columns with TMA stores of a BF16 C; a 2x1
# cluster of one-m64 tiles with TMA stores of an FP16 C; a 1x2 cluster with a float32 C; 64x64
# tiles in 12 stages (the ring's parity turns over inside a tile of a few k tiles).
PINGPONG_KINDS = [
    ("tma_ws_bm64_bn256_bk64_cw2_pp1_s5_gr8_ra0_ep0_cm1_cn1", dtype, layout, None)
    for dtype in ("float16", "bfloat16")
    for layout in SUPPORTED_LAYOUTS
] + [
    ("tma_ws_bm128_bn128_bk64_cw2_pp1_s6_gr16_ra1_ep1_cm1_cn1", "bfloat16", "NT", "bfloat16"),
    ("tma_ws_bm64_bn256_bk64_cw2_pp1_s4_gr8_ra0_ep1_cm2_cn1", "float16", "TN", "float16"),
    ("tma_ws_bm128_bn128_bk64_cw2_pp1_s4_gr8_ra0_ep0_cm1_cn2", "bfloat16", "TT", "float32"),
    ("tma_ws_bm64_bn64_bk64_cw2_pp1_s12_gr1_ra0_ep1_cm1_cn1", "float16", "NN", "float32"),
]
# One tile (the second consumer idle); a few tiles, ragged; one k tile a tile over more tiles
# than two rounds of the grid (a turn every k tile); a deep K; some blocks with an odd number
# of tiles (the last turn is consumer 0's).
PINGPONG_SHAPES = [
    (64, 64, 64),
    (200, 72, 136),
    (1096, 520, 328),
    (2056, 2120, 64),
    (136, 264, 4104),
    (4104, 1000, 200),
]


@pytest.fixture(scope="module")
def pingpong_kernels() -> dict[str, tuple[Any, Any]]:
    return sm90_kernels([kind_config(*kind) for kind in PINGPONG_KINDS])


@pytest.mark.parametrize("mnk", PINGPONG_SHAPES, ids=lambda d: "x".join(map(str, d)))
def test_pingpong_consumers_match_cublas(
    mnk: tuple[int, int, int], pingpong_kernels: dict[str, tuple[Any, Any]]
) -> None:
    """Each consumer waits for its own tiles' stages by parity and skips the other's k tiles in
    its count of the ring: a consumer that waited out of turn would read a stage of the other's
    tile (wrong sums), and a miscounted skip would hang or read stale stages."""
    failures = _failures(pingpong_kernels, PINGPONG_KINDS, mnk)
    assert not failures, f"on {mnk}: " + "; ".join(failures)
