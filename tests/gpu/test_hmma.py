"""hmma and hmma_splitk against cuBLAS in the same dtype (FP32 sums) and against FP32 on the
unrounded values, for every input type and layout, on edge shapes: M, N and K of every residue
the copies care about (rows 16-, 8-, 4- and only 2-byte aligned), K = 1, tiny and ragged
tiles."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gpu.loaded_kernels import compile_and_load
from tuner.core.config import IMPLICIT_VALUES, PARAM_ABBR
from tuner.core.shape import SUPPORTED_LAYOUTS, Shape
from tuner.kernels.families import HMMA

pytestmark = pytest.mark.gpu

# Tiles of each kind: 4 warps of 64x64 (128 sums a lane) in 4 stages; 32x32 warps with BK = 64
# in 3 stages and L2 groups of 4; one warp row of 4 warps (64x32 each) in 2 stages.
# hmma_splitk: K in 8 slices of BK = 64 (slices without a k tile on the small K) and in 3
# slices of BK = 32.
TILES = (
    "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8",
    "hmma_bm64_bn64_bk64_wpm2_wpn2_s3_sw4",
    "hmma_bm64_bn128_bk32_wpm1_wpn4_s2_sw1",
    "hmma_splitk_bm64_bn64_bk64_wpm2_wpn2_s3_sw4_sk8",
    "hmma_splitk_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_sk3",
)
KINDS = [(dtype, layout) for dtype in ("float16", "bfloat16") for layout in SUPPORTED_LAYOUTS]
# (M, N, K): 1x1x1; K = 1; tiny ragged; a row count of each residue mod 8 in every dimension
# (1030: 4-byte rows, 1028: 8-byte rows, 1025 and 1031: odd, 2-byte rows, 1024: 16-byte);
# several block rows for the L2 grouping with a partial last group.
EDGE = [
    (1, 1, 1),
    (33, 17, 1),
    (17, 33, 9),
    (3, 200, 7),
    (130, 1028, 1030),
    (1031, 66, 1028),
    (257, 511, 1025),
    (1024, 1024, 1024),
    (1100, 700, 96),
]


def kind_config(base: str, dtype: str, layout: str, out_dtype: str = "float32") -> str:
    """``base`` pinned for ``dtype`` inputs in ``layout`` writing ``out_dtype`` C (float32
    unless asked: what every test of this file checks)."""
    pinned = HMMA.pinned(Shape(1, 1, 1, dtype, layout, out_dtype))  # hmma_splitk pins the same
    # As a config's name has it: no out token for float32 C (``IMPLICIT_VALUES``).
    tokens = (
        f"{PARAM_ABBR[name]}{value}"
        for name, value in pinned.items()
        if IMPLICIT_VALUES.get(name) != value
    )
    return "_".join([base, *tokens])


@pytest.fixture(scope="module")
def kernels() -> dict[str, tuple[Any, Any]]:
    return compile_and_load([kind_config(base, *kind) for kind in KINDS for base in TILES])


@pytest.mark.parametrize(("dtype", "layout"), KINDS)
@pytest.mark.parametrize("mnk", EDGE, ids=lambda d: "x".join(map(str, d)))
def test_hmma_matches_cublas_and_fp32(
    dtype: str, layout: str, mnk: tuple[int, int, int], kernels: dict[str, tuple[Any, Any]]
) -> None:
    from tuner.gpu.measure import verify

    shape = Shape(*mnk, dtype, layout, "float32")
    for base in TILES:
        name = kind_config(base, dtype, layout)
        kernel, source = kernels[name]
        result = verify(kernel, source, shape, seed=sum(mnk))
        print(
            f"RESULT hmma {shape.label()} {name} rel_error={result.rel_error:.3e} "
            f"fp32_error={result.reference_error:.3e}"
        )
        assert result.ok, f"{name} on {shape.label()}: {result.reason}"


@pytest.mark.parametrize("base", [t for t in TILES if t.startswith("hmma_splitk_")])
def test_split_counters_reset_between_launches(
    base: str, kernels: dict[str, tuple[Any, Any]]
) -> None:
    """The same loaded split kernel, launched again and again with other shapes in between and
    a grid too large to split (65 x 257 output tiles of 64 x 64, or 33 x 129 of 128 x 128, over
    the 16384 counters only for the first: then slice 0 does all of K), is right every time."""
    import cupy as cp

    from tuner.gpu.measure import verify

    name = kind_config(base, "bfloat16", "NN")
    kernel, source = kernels[name]
    shapes = [(16, 4096, 4096), (33, 100, 5000), (4097, 16448, 64), (16, 4096, 4096)]
    for i, mnk in enumerate(shapes):
        shape = Shape(*mnk, "bfloat16", "NN", "float32")
        result = verify(kernel, source, shape, seed=i)
        assert result.ok, f"{name} on {shape.label()} (launch {i + 1}): {result.reason}"
    cp.cuda.get_current_stream().synchronize()
