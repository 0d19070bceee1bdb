"""A few valid configs per family, spread over tile sizes, layouts and modes.

The set every family is checked on beyond its space's rules: its renders and compiler register
counts are pinned, each config is compiled for sm_90 and run on edge shapes on the GPU, and the
lab times it beside cuBLAS. A comment above a family's list says what each config stands for.
"""

from __future__ import annotations

REPRESENTATIVE: dict[str, list[str]] = {
    "smem_tiling": ["smem_tiling_bm32_bn32_bk32", "smem_tiling_bm16_bn64_bk8"],
    "blocktile_1d": ["blocktile_1d_bm64_bn64_bk8_tm8", "blocktile_1d_bm128_bn32_bk4_tm16"],
    "blocktile_2d": ["blocktile_2d_bm128_bn128_bk8_tm8_tn8", "blocktile_2d_bm64_bn32_bk16_tm4_tn8"],
    "vectorized": ["vectorized_bm128_bn128_bk8_tm8_tn8", "vectorized_bm64_bn64_bk16_tm4_tn4"],
    "warptile": [
        "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128",
        "warptile_bm64_bn128_bk8_wm32_wn64_wni2_tm4_tn4_t128",
    ],
    # Past the 48 KiB of static shared memory; a tile too heavy for the register prefetch; a
    # small 4-warp tile.
    "doublebuf": [
        "doublebuf_bm256_bn128_bk16_wm64_wn64_wni2_tm4_tn8_t256",
        "doublebuf_bm128_bn128_bk32_wm64_wn64_wni4_tm4_tn4_t128",
        "doublebuf_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128",
    ],
    "pipelined": [
        "pipelined_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128_s3",
        "pipelined_bm64_bn128_bk8_wm32_wn64_wni2_tm4_tn4_t128_s2",
    ],
    # Skinny-M streaming (BM=16, 64 threads), a non-power-of-two split with BK=64, and a deep
    # split whose lanes hold B rather than A (WMITER*TM > WNITER*TN).
    "splitk": [
        "splitk_bm16_bn64_bk32_wm16_wn32_wni1_tm4_tn4_t64_s4_sk8",
        "splitk_bm64_bn128_bk64_wm32_wn64_wni2_tm4_tn4_t128_s3_sk3",
        "splitk_bm128_bn64_bk32_wm64_wn32_wni1_tm8_tn4_t128_s3_sk32",
    ],
    # 8 warps in 128x128 tiles split 32 ways (the large-K shape); one 2-warp block with a
    # non-power-of-two split; a tile whose registers leave no room for the prefetch (the loop
    # that loads each tile where it is used).
    "warptile_splitk": [
        "warptile_splitk_bm128_bn128_bk32_wm64_wn32_wni1_tm8_tn4_t256_sk32",
        "warptile_splitk_bm32_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t64_sk3",
        "warptile_splitk_bm128_bn128_bk32_wm64_wn64_wni4_tm4_tn4_t128_sk6",
    ],
    # The 128x256 tile of the large squares, one block per SM, staggered; the suite's best
    # (128x128, two blocks per SM under a 128-register cap); a small 4-warp tile at four
    # blocks per SM (a deeper stream-K share); a 2-warp block whose tiles are 32 rows,
    # staggered.
    "streamk": [
        "streamk_bm128_bn256_bk16_wm32_wn128_wni2_tm8_tn4_t256_smb1_stg1",
        "streamk_bm128_bn128_bk16_wm32_wn64_wni2_tm8_tn4_t256_smb2_stg0",
        "streamk_bm64_bn64_bk8_wm32_wn32_wni1_tm4_tn4_t128_smb4_stg0",
        "streamk_bm32_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t64_smb2_stg1",
    ],
    # One row, no split, scalar A loads (KU=1); 16 lanes along k with chunks of two float4s of
    # A (KU=8); 8-wide lanes with float2 chunks (KU=2) and a 64-way split; 16 rows, float4s of A.
    "skinny": [
        "skinny_bm1_bn32_tn4_lk4_ku1_sk1",
        "skinny_bm8_bn32_tn4_lk16_ku8_sk2",
        "skinny_bm8_bn256_tn8_lk8_ku2_sk64",
        "skinny_bm16_bn32_tn4_lk16_ku4_sk2",
    ],
    # Each mma depth and both widening points; a big tile without a split, split-K tiles, a
    # two-warp block.
    "dmma": [
        "dmma_bm128_bn128_bk16_wm64_wn32_mk8_sk1_mb1_wd0",
        "dmma_bm64_bn128_bk16_wm32_wn32_mk4_sk1_mb2_wd1",
        "dmma_bm64_bn64_bk16_wm32_wn32_mk16_sk4_mb1_wd1",
        "dmma_bm32_bn32_bk16_wm16_wn32_mk8_sk2_mb2_wd0",
    ],
    # Each k tile depth (float4 and float2 fragment reads), each B fragment width (NT 2, 4, 8:
    # the three swizzles), each mma depth and stage count; split and unsplit.
    "dmma_pipelined": [
        "dmma_pipelined_bm64_bn128_bk16_wm32_wn32_mk4_s3_sk1_mb2",
        "dmma_pipelined_bm64_bn64_bk32_wm32_wn64_mk16_s3_sk4_mb1",
        "dmma_pipelined_bm64_bn64_bk8_wm64_wn16_mk8_s4_sk2_mb1",
        "dmma_pipelined_bm128_bn128_bk16_wm64_wn32_mk8_s2_sk1_mb1",
    ],
    # Each k tile depth and B fragment width (NT 8, 4, 2), one to four blocks per SM: grids of
    # fewer tiles than blocks (all stream-K), of whole waves and a shared rest.
    "dmma_streamk": [
        "dmma_streamk_bm64_bn128_bk32_wm32_wn64_mk4_s3_smb1",
        "dmma_streamk_bm64_bn64_bk16_wm32_wn32_mk16_s4_smb2",
        "dmma_streamk_bm64_bn64_bk8_wm64_wn16_mk8_s4_smb1",
        "dmma_streamk_bm32_bn64_bk16_wm16_wn32_mk8_s3_smb4",
    ],
    # Each layout and both input types; warp tiles of 64x64 (128 sums a lane), 32x32, 64x32 and
    # 128x32 (BM 256 with four warps along m); BK 32 and 64; 2 to 5 stages; row tiles of A and B
    # of 4, 8 and 32 chunks (each swizzle period); L2 groups of 1, 4 and 8.
    "hmma": [
        "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt0_ly0",
        "hmma_bm128_bn256_bk32_wpm2_wpn4_s3_sw4_dt1_ly1",
        "hmma_bm64_bn64_bk64_wpm2_wpn2_s5_sw1_dt1_ly2",
        "hmma_bm256_bn128_bk32_wpm2_wpn4_s3_sw8_dt0_ly3",
        "hmma_bm64_bn128_bk32_wpm1_wpn4_s2_sw1_dt0_ly1",
    ],
    "hmma_splitk": [
        "hmma_splitk_bm64_bn64_bk64_wpm2_wpn2_s3_sw4_sk8_dt1_ly0",
        "hmma_splitk_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_sk3_dt0_ly1",
    ],
    # The 128x256 tile of the large squares with the TMA-store epilogue (NT); 256x128 in 1x2
    # clusters sharing A (NN); one consumer of two m64n128 tiles, FP16, direct stores (TN); a 2x1
    # cluster sharing B with BF16 C (TT); two consumers of m64n128 with the stream-K tail (TN);
    # BM 64, one consumer of one m64 row of m64n256 in 5 stages: FP16 C through TMA stores (NN,
    # A stored MN-major in one 64-wide column) and BF16 C stored directly in column bands (NT).
    "tma_ws": [
        "tma_ws_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep1_cm1_cn1_dt1_ly1",
        "tma_ws_bm256_bn128_bk64_cw2_s4_gr8_ra0_ep1_cm1_cn2_dt1_ly0",
        "tma_ws_bm128_bn128_bk64_cw1_s5_gr16_ra1_ep0_cm1_cn1_dt0_ly2",
        "tma_ws_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep1_cm2_cn1_dt1_ly3_out2",
        "tma_ws_bm128_bn128_bk64_cw2_s6_gr8_ra0_ep1_cm1_cn1_tl1_dt0_ly2",
        "tma_ws_bm64_bn256_bk64_cw1_s5_gr8_ra0_ep1_cm1_cn1_dt0_ly0_out1",
        "tma_ws_bm64_bn256_bk64_cw1_s5_gr16_ra1_ep0_cm1_cn1_dt1_ly1_out2",
    ],
    # Each layout and both input types; two warpgroups of m64n256 (128 sums a thread), one of
    # two m64n128 tiles, one of m64n64; two warpgroups of two m64n64 (BM 256); 3 to 6 stages;
    # MN-major tiles of one, two and four 64-wide columns; L2 groups of 1, 4 and 8.
    "wgmma": [
        "wgmma_bm128_bn256_bk64_wgm2_s4_sw8_dt1_ly0",
        "wgmma_bm128_bn128_bk64_wgm1_s3_sw4_dt0_ly1",
        "wgmma_bm64_bn64_bk64_wgm1_s6_sw1_dt1_ly2",
        "wgmma_bm256_bn64_bk64_wgm2_s5_sw8_dt0_ly3",
    ],
    "wgmma_splitk": [
        "wgmma_splitk_bm64_bn128_bk64_wgm1_s4_sw4_sk8_dt1_ly0",
        "wgmma_splitk_bm128_bn64_bk64_wgm2_s3_sw1_sk3_dt0_ly3",
    ],
    # FP32 emulated on BF16 (the half families' templates, DTYPE pinned to BF16): one tile each,
    # in a layout per family.
    "hmma_bf16x3": ["hmma_bf16x3_bm128_bn128_bk32_wpm2_wpn2_s3_sw4_dt1_ly0"],
    "hmma_splitk_bf16x3": ["hmma_splitk_bf16x3_bm64_bn64_bk32_wpm2_wpn2_s3_sw1_sk4_dt1_ly1"],
    "wgmma_bf16x3": ["wgmma_bf16x3_bm128_bn256_bk64_wgm2_s4_sw8_dt1_ly2"],
    "wgmma_splitk_bf16x3": ["wgmma_splitk_bf16x3_bm128_bn64_bk64_wgm2_s3_sw1_sk3_dt1_ly3"],
    "tma_ws_bf16x3": [
        "tma_ws_bf16x3_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep1_cm1_cn1_dt1_ly1",
        "tma_ws_bf16x3_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep0_cm1_cn1_tl1_dt1_ly0",
    ],
}

ALL_REPRESENTATIVE = [name for names in REPRESENTATIVE.values() for name in names]
