"""The default rule: the config for a shape nobody has tuned, chosen without a measurement.

Every kernel is correct for any M, N, K >= 1, so a default is always safe, only maybe slow.
"""

from __future__ import annotations

from tuner.core.accuracy import BF16X3, DEFAULT_ACCURACY, accepted
from tuner.core.config import PARAM_ABBR, Config
from tuner.core.shape import Shape
from tuner.kernels.families import HMMA, HMMA_BF16X3, parse_config

# The default rule: 128x128 block tiles once there are enough of them to fill every SM of an
# H100 (132) at least once; smaller 64x64 tiles otherwise, so small or skinny problems still
# spread over the chip. Both configs are valid for every family rule and fit sm_80..sm_90; on the
# committed H100 sweep they rank 61st of 2575 at 4096^3 (large) and 19th-21st of 1821-2575 at
# 1000^3 and 128x4096x4096 (small).
DEFAULT_LARGE = "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128"
DEFAULT_SMALL = "warptile_bm64_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t128"
DEFAULT_TILE = 128
DEFAULT_WAVE_BLOCKS = 132
# FP16/BF16 inputs, by the same rule: hmma's 128x128 tile of four 64x64 warp tiles in 4 stages,
# else a 64x64 tile of four 32x32 warp tiles in 3 stages (chosen before any measurement; both
# fit sm_80..sm_90), with the input type, layout and type of C the shape pins.
HALF_DEFAULT_LARGE = "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8"
HALF_DEFAULT_SMALL = "hmma_bm64_bn64_bk32_wpm2_wpn2_s3_sw1"
DEFAULT_RULE = (
    f"{DEFAULT_LARGE} when ceil(m/{DEFAULT_TILE})*ceil(n/{DEFAULT_TILE}) >= "
    f"{DEFAULT_WAVE_BLOCKS} (one full wave on an H100), else {DEFAULT_SMALL}; for float16 and "
    f"bfloat16 inputs {HALF_DEFAULT_LARGE} or {HALF_DEFAULT_SMALL} by the same test, with the "
    "shape's dtype, layout and out_dtype; for float32 at accuracy bf16x3 the same hmma tile as "
    f"{HMMA_BF16X3.name} when the grid is large or the layout is not NN (only the emulated "
    "families compute float32 in NT, TN and TT)"
)


def applied_branch(
    m: int, n: int, dtype: str = "float32", layout: str = "NN", accuracy: str = DEFAULT_ACCURACY
) -> str:
    """The part of :data:`DEFAULT_RULE` that decides for this shape, in words: what an answer
    says (the whole rule is in its provenance)."""
    blocks = -(-m // DEFAULT_TILE) * -(-n // DEFAULT_TILE)
    large = blocks >= DEFAULT_WAVE_BLOCKS
    test = (
        f"ceil({m}/{DEFAULT_TILE})*ceil({n}/{DEFAULT_TILE}) = {blocks} "
        f"{'>=' if large else '<'} {DEFAULT_WAVE_BLOCKS} (one full wave on an H100)"
    )
    if dtype != "float32":
        tile = HALF_DEFAULT_LARGE if large else HALF_DEFAULT_SMALL
        return f"{test}: {tile}, pinned to the shape's dtype, layout and type of C"
    if BF16X3.name in accepted(accuracy) and (large or layout != "NN"):
        why = "the grid is large" if large else f"only the emulated families compute {layout}"
        return f"{test}, and {why}: the {HMMA_BF16X3.name} tile, the BF16 split first"
    return f"{test}: {DEFAULT_LARGE if large else DEFAULT_SMALL}"


def default_config(
    m: int,
    n: int,
    dtype: str = "float32",
    layout: str = "NN",
    accuracy: str = DEFAULT_ACCURACY,
    out_dtype: str | None = None,
) -> Config:
    """The rule-chosen config for a shape nobody has tuned (see :data:`DEFAULT_RULE`), writing
    C in ``out_dtype`` (None: the input type)."""
    large = -(-m // DEFAULT_TILE) * -(-n // DEFAULT_TILE) >= DEFAULT_WAVE_BLOCKS
    half = HALF_DEFAULT_LARGE if large else HALF_DEFAULT_SMALL
    shape = Shape(m, n, 1, dtype, layout, out_dtype)
    if dtype == "float32":
        emulated = BF16X3.name in accepted(accuracy) and (large or layout != "NN")
        if not emulated:
            return parse_config(DEFAULT_LARGE if large else DEFAULT_SMALL)
        half = half.replace(HMMA.name, HMMA_BF16X3.name, 1)
        shape = HMMA_BF16X3.run_shape(shape)
    tokens = (f"{PARAM_ABBR[name]}{value}" for name, value in HMMA.pinned(shape).items())
    return parse_config("_".join([half, *tokens]))
