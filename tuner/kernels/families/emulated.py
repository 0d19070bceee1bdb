"""FP32 emulated on the FP16/BF16 tensor cores: a half family run on float32 inputs split in
BF16 parts (accuracy class ``bf16x3``, ``tuner.core.accuracy``).

Each float32 x becomes hi = bf16(x) and lo = bf16(x - hi) (BF16 keeps FP32's exponent range, so
neither overflows). The product A·B ≈ lo_A·hi_B + hi_A·lo_B + hi_A·hi_B (lo·lo, about 2^-16 of
each term, is dropped) is ONE BF16 GEMM of depth 3·Kp, Kp = K rounded up to 8: A' holds
[lo_A | hi_A | hi_A] and B' holds [hi_B ; lo_B ; hi_B] along K, each block Kp deep with zeros
past K. The small terms come first, so the FP32 sums add them before the large ones. A split
pass (``templates/split_bf16x3.cu``, ``tuner.gpu.split_launch``) writes A' and B' into kept buffers
in the caller's layout, rows on 16 bytes, before the half family's own kernel runs on them, and
its time counts in every measurement.

The half family's parameters, rules, footprint and template are used unchanged; its DTYPE is
pinned to BF16, the type of the shape its kernel sees (``Family.kernel_shape``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from tuner.core.accuracy import BF16X3
from tuner.core.shape import SUPPORTED_LAYOUTS, Shape
from tuner.kernels.families._base import Family
from tuner.kernels.families.hmma import HMMA, HMMA_SPLITK
from tuner.kernels.families.tma_ws import TMA_WS, short_tile_waste
from tuner.kernels.families.wgmma import WGMMA, WGMMA_SPLITK

# The parts of each input, in the order the split writes them along K (A's, then B's): the
# pairs of equal position are the three products.
A_PARTS = ("lo", "hi", "hi")
B_PARTS = ("hi", "lo", "hi")
PARTS = len(A_PARTS)
# A block of K is rounded up to whole 16-byte vectors of BF16, so each block starts on one.
BLOCK_MULTIPLE = 8


def split_depth(k: int) -> int:
    """Kp: the depth of one part's block along K (K rounded up to :data:`BLOCK_MULTIPLE`)."""
    return -(-k // BLOCK_MULTIPLE) * BLOCK_MULTIPLE


@lru_cache(maxsize=256)
def split_shape(shape: Shape) -> Shape:
    """The BF16 product the half kernel computes for a float32 ``shape``: M x N x 3·Kp, in the
    caller's layout, writing the caller's float32 C."""
    k = PARTS * split_depth(shape.k)
    return Shape(shape.m, shape.n, k, "bfloat16", shape.layout, "float32")


def bf16x3(inner: Family) -> Family:
    """``inner`` (a half-input family) computing float32 inputs in class ``bf16x3``: named
    ``<inner>_bf16x3``, its template and everything else kept."""
    return replace(
        inner,
        name=f"{inner.name}_{BF16X3.name}",
        doc=f"float32 inputs split into BF16 high and low parts, three products by {inner.name} "
        f"(accuracy class {BF16X3.name}): {inner.doc}",
        dtypes=("float32",),
        layouts=SUPPORTED_LAYOUTS,
        out_dtypes=("float32",),
        accuracy=BF16X3.name,
        kernel_shape=split_shape,
        # The kernel's input type and layout are those of the split: BF16.
        pinned=lambda shape: inner.pinned(split_shape(shape)),
        template_name=inner.template,
    )


HMMA_BF16X3 = bf16x3(HMMA)
HMMA_SPLITK_BF16X3 = bf16x3(HMMA_SPLITK)
WGMMA_BF16X3 = bf16x3(WGMMA)
WGMMA_SPLITK_BF16X3 = bf16x3(WGMMA_SPLITK)
# Of tma_ws's wastes only the short tiles' applies: rows off 16 bytes, which TMA cannot read in
# place, do not occur, since the split's buffers have rows whole 16-byte vectors apart
# (``tuner.kernels.operand_split``) whatever M, N and K, and CuPy's bases are 256-byte aligned.
TMA_WS_BF16X3 = bf16x3(replace(TMA_WS, waste=short_tile_waste))
