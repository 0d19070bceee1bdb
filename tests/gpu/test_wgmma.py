"""wgmma and wgmma_splitk (sm_90 only) against cuBLAS in the same dtype (FP32 sums) and against
FP32 on the unrounded values, for every input type and layout, on hmma's edge shapes: M, N and K
of every residue the copies care about, K = 1, tiny and ragged tiles. Run with sm_90a kernels
on an sm_90 GPU; skipped on any other."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gpu.loaded_kernels import compile_and_load
from tests.gpu.test_hmma import EDGE, KINDS, kind_config
from tuner.core.shape import Shape

pytestmark = pytest.mark.gpu

# Two warpgroups of one m64 tile each, n256, in 4 stages; one warpgroup of two m64 tiles, n128,
# in 3 stages with L2 groups of 4; one warpgroup of one m64n64 tile in 6 stages. wgmma_splitk:
# K in 8 slices (slices without a k tile on the small K) and in 3.
TILES = (
    "wgmma_bm128_bn256_bk64_wgm2_s4_sw8",
    "wgmma_bm128_bn128_bk64_wgm1_s3_sw4",
    "wgmma_bm64_bn64_bk64_wgm1_s6_sw1",
    "wgmma_splitk_bm64_bn128_bk64_wgm1_s4_sw4_sk8",
    "wgmma_splitk_bm128_bn64_bk64_wgm2_s3_sw1_sk3",
)


@pytest.fixture(scope="module")
def kernels() -> dict[str, tuple[Any, Any]]:
    from tuner.gpu.device import live_device

    if live_device().arch != "sm_90":
        pytest.skip("wgmma runs on sm_90 only")
    return compile_and_load([kind_config(base, *kind) for kind in KINDS for base in TILES])


@pytest.mark.parametrize(("dtype", "layout"), KINDS)
@pytest.mark.parametrize("mnk", EDGE, ids=lambda d: "x".join(map(str, d)))
def test_wgmma_matches_cublas_and_fp32(
    dtype: str, layout: str, mnk: tuple[int, int, int], kernels: dict[str, tuple[Any, Any]]
) -> None:
    from tuner.gpu.measure import verify

    shape = Shape(*mnk, dtype, layout, "float32")
    failures = []
    for base in TILES:
        name = kind_config(base, dtype, layout)
        kernel, source = kernels[name]
        result = verify(kernel, source, shape, seed=sum(mnk))
        print(
            f"RESULT wgmma {shape.label()} {name} rel_error={result.rel_error:.3e} "
            f"fp32_error={result.reference_error:.3e}"
        )
        if not result.ok:
            failures.append(f"{name}: {result.reason}")
    assert not failures, f"on {shape.label()}: " + "; ".join(failures)


@pytest.fixture(scope="module")
def padded(kernels: dict[str, tuple[Any, Any]]) -> dict[str, tuple[Any, Any]]:
    return compile_and_load([kind_config(TILES[1], *kind) + "_pad8" for kind in KINDS])


@pytest.mark.parametrize(("dtype", "layout"), KINDS)
def test_padded_wgmma_matches_cublas_on_every_residue_mod_8(
    dtype: str, layout: str, padded: dict[str, tuple[Any, Any]]
) -> None:
    from tests.gpu.test_padded_operands import HALF_RESIDUE_SHAPES
    from tuner.gpu.measure import verify

    name = kind_config(TILES[1], dtype, layout) + "_pad8"
    kernel, source = padded[name]
    for mnk in HALF_RESIDUE_SHAPES:
        shape = Shape(*mnk, dtype, layout, "float32")
        result = verify(kernel, source, shape, seed=sum(mnk))
        assert result.ok, f"{name} on {shape.label()}: {result.reason}"


@pytest.mark.parametrize("offsets", [(1, 2), (3, 0), (0, 4), (6, 5)], ids=str)
@pytest.mark.parametrize("layout", ["NN", "NT"])
def test_wgmma_reads_operands_off_16_byte_alignment(
    layout: str,
    offsets: tuple[int, int],
    kernels: dict[str, tuple[Any, Any]],
    padded: dict[str, tuple[Any, Any]],
) -> None:
    """float16 A and B as views 2 to 12 bytes past a 16-byte boundary (rows of whole 16-byte
    vectors otherwise): the direct kernel falls back to narrower copies, the padded one copies
    them; both match FP32 sums of the same half values."""
    import cupy as cp

    from tuner.gpu.measure import launch, relative_error

    shape = Shape(136, 264, 200, "float16", layout, "float32")
    rng = cp.random.default_rng(sum(offsets))
    b_rows, b_cols = (shape.k, shape.n) if layout == "NN" else (shape.n, shape.k)

    def view(rows: int, cols: int, offset: int) -> Any:
        flat = rng.standard_normal(rows * cols + 8, dtype=cp.float32).astype(cp.float16)
        assert flat.data.ptr % 16 == 0
        return flat[offset : offset + rows * cols].reshape(rows, cols)

    a, b = view(shape.m, shape.k, offsets[0]), view(b_rows, b_cols, offsets[1])
    b_kn = b if layout == "NN" else b.T
    ref = a.astype(cp.float32) @ b_kn.astype(cp.float32)
    for name in (
        kind_config(TILES[1], "float16", layout),
        kind_config(TILES[0], "float16", layout),
    ):
        for table, suffix in ((kernels, ""), (padded, "_pad8")):
            if name + suffix not in table:
                continue
            kernel, source = table[name + suffix]
            c = cp.full((shape.m, shape.n), cp.nan, dtype=cp.float32)
            launch(kernel, source, shape, 1.0, a, b, 0.0, c)
            err = relative_error(c, ref)
            assert err <= 1e-5, f"{name}{suffix}, views {offsets} halves off: error {err:.3e}"
