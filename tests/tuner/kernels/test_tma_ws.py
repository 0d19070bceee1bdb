"""tma_ws: rules, footprint, pins, the shapes TMA cannot read in place, the TMA boxes and
persistent grid, what the template renders, the sm_90a compile, and the cost model's view."""

from __future__ import annotations

import pytest

from tuner.core.shape import Shape
from tuner.kernels.compile import CompileError, NvccCompiler, compile_many
from tuner.kernels.families import TMA_WS, WGMMA, parse_config
from tuner.kernels.families.tma_ws import (
    box_rows,
    tiles_blocks,
    tma_ws_waste,
)
from tuner.kernels.render import render
from tuner.kernels.resources import DEVICE_TABLE, static_check
from tuner.kernels.space import Space
from tuner.model.cost_model import estimate
from tuner.model.throughput import throughput
from tuner.model.tile_work import TILE_MODELS

H100 = DEVICE_TABLE["sm_90"]
A100 = DEVICE_TABLE["sm_80"]
BASE = {
    "BM": 128,
    "BN": 256,
    "BK": 64,
    "CONSUMERS": 2,
    "STAGES": 4,
    "GROUP": 8,
    "RASTER": 0,
    "EPI": 0,
    "CM": 1,
    "CN": 1,
    "TAIL": 0,
}


def config(**changes: int) -> dict[str, int]:
    return {**BASE, "DTYPE": 1, "LAYOUT": 1, "OUT": 0, **changes}


def test_a_valid_config_breaks_no_rule_and_reads_back_from_its_name() -> None:
    cfg = TMA_WS.config(config())
    assert TMA_WS.broken_rules(cfg) == []
    assert cfg.name == "tma_ws_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep0_cm1_cn1_dt1_ly1"
    assert parse_config(cfg.name) == cfg


@pytest.mark.parametrize("bn", [64, 128, 192, 256])
def test_one_consumer_of_one_m64_row_is_a_valid_tile_of_every_width(bn: int) -> None:
    # BM 64 with one consumer: the tiles that multiply the grid's blocks on shapes with fewer
    # 128-row tiles than SMs; five stages fit the widest with the TMA-store epilogue.
    cfg = TMA_WS.config(config(BM=64, BN=bn, CONSUMERS=1, STAGES=5, EPI=1))
    assert TMA_WS.broken_rules(cfg) == []
    values = TMA_WS.template_values(cfg)
    assert values["MT"] == 1 and values["THREADS"] == 256


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"BK": 32}, "BK must be 64"),
        ({"BM": 64, "CONSUMERS": 2}, "BM/CONSUMERS must be a multiple of 64"),
        ({"BN": 320}, "a multiple of 64 up to 256"),
        ({"BM": 48, "CONSUMERS": 1}, "BM must be 16, 32 or a multiple of 64"),
        ({"BM": 16, "CONSUMERS": 2}, "BM 16 or 32 with one consumer"),
        ({"BM": 16, "CONSUMERS": 1, "EPI": 1}, "a short tile (BM 16 or 32) needs"),
        ({"BM": 32, "CONSUMERS": 1, "CN": 2}, "a short tile (BM 16 or 32) needs"),
        ({"BM": 16, "CONSUMERS": 1, "LAYOUT": 2}, "A stored along K"),
        ({"BM": 256, "CONSUMERS": 1}, "at most 128 FP32 sums"),
        ({"STAGES": 5}, "must fit in 232448 bytes"),
        ({"STAGES": 4, "EPI": 1, "BM": 256}, "at most 128 FP32 sums"),
        ({"CM": 2, "CN": 2}, "a cluster is 1x1, 2x1 or 1x2"),
        ({"OUT": 3}, "OUT must be 0"),
        ({"TAIL": 2}, "TAIL must be 0"),
        ({"TAIL": 1, "OUT": 2}, "TAIL 1 needs float32 C"),
        ({"TAIL": 1, "CN": 2}, "TAIL 1 needs a cluster of one block"),
        ({"SPLIT": 4, "CM": 2}, "SPLIT > 1 needs a cluster of one block"),
        ({"SPLIT": 2, "TAIL": 1}, "(CM = CN = 1) and TAIL 0"),
        ({"BM": 64, "CONSUMERS": 1, "PINGPONG": 1}, "PINGPONG 1 needs two consumers"),
        ({"BM": 128, "PINGPONG": 1}, "at most 128 FP32 sums"),
        ({"BM": 64, "PINGPONG": 1, "TAIL": 1}, "PINGPONG 1 needs TAIL 0 and SPLIT 1"),
        ({"BM": 64, "PINGPONG": 1, "SPLIT": 2}, "PINGPONG 1 needs TAIL 0 and SPLIT 1"),
    ],
)
def test_rules_give_their_reasons(changes: dict[str, int], reason: str) -> None:
    broken = TMA_WS.broken_rules(TMA_WS.config(config(**changes)))
    assert any(reason in b for b in broken), broken


def test_footprint_counts_stages_barriers_c_pieces_and_the_alignment_spare() -> None:
    direct = TMA_WS.footprint(config())
    assert direct.smem_bytes == 4 * ((128 + 256) * 64 * 2 + 16) + 1024 and direct.dynamic_smem
    assert direct.threads == 384  # a producer and two consumer warpgroups
    assert direct.accumulators == 128  # one m64n256 tile a consumer thread
    staged = TMA_WS.footprint(config(EPI=1))
    assert staged.smem_bytes - direct.smem_bytes == 2 * 2 * 64 * 128  # two pieces a consumer
    assert staged.smem_bytes <= 232448  # the 227 KB a block may have on sm_90


def test_the_shape_pins_input_type_layout_and_output_type() -> None:
    assert TMA_WS.pinned(Shape(64, 64, 64, "float16", "TN", "float32")) == {
        "DTYPE": 0,
        "LAYOUT": 2,
        "OUT": 0,
    }
    # C in the input type unless asked otherwise, as torch.matmul.
    assert TMA_WS.pinned(Shape(64, 64, 64, "float16", "TN"))["OUT"] == 1
    # A half C, in the input type.
    assert TMA_WS.pinned(Shape(64, 64, 64, "bfloat16", "NT")) == {"DTYPE": 1, "LAYOUT": 1, "OUT": 2}


@pytest.mark.parametrize(
    ("layout", "mnk", "ragged"),
    [
        ("NN", (64, 64, 1001), True),  # A's rows are K long
        ("NN", (1001, 64, 64), False),  # M is no stored row's length in NN
        ("NN", (64, 1001, 64), True),  # B's rows are N long
        ("TN", (1001, 64, 64), True),  # A stored K x M
        ("NT", (64, 1001, 64), False),  # B stored N x K
        ("NT", (64, 64, 1001), True),
        ("TT", (64, 64, 64), False),
    ],
)
def test_rows_off_16_bytes_are_left_to_the_padded_config(
    layout: str, mnk: tuple[int, int, int], ragged: bool
) -> None:
    shape = Shape(*mnk, "bfloat16", layout)
    reason = tma_ws_waste(TMA_WS.config(config()).as_dict(), shape)
    assert (reason is not None) == ragged
    if ragged:
        assert "_pad8" in reason and "16-byte" in reason


def test_the_space_offers_it_on_sm_90_for_aligned_rows_only() -> None:
    aligned = Shape(4096, 4096, 4096, "bfloat16", "NT")
    configs = Space("tma_ws", aligned, H100).candidates()
    assert configs and all(c["LAYOUT"] == 1 and c["DTYPE"] == 1 for c in configs)
    assert Space("tma_ws", Shape(4096, 4096, 4095, "bfloat16", "NT"), H100).candidates() == []
    assert Space("tma_ws", aligned, A100).candidates() == []
    assert Space("tma_ws", Shape(4096, 4096, 4096), H100).candidates() == []  # float32
    assert static_check(TMA_WS.config(config()), H100).fits


@pytest.mark.parametrize(
    ("layout", "cm", "cn", "rows"),
    [
        ("NT", 1, 1, (128, 256)),  # both K-major: one box of the whole tile each
        ("NN", 1, 1, (128, 64)),  # B MN-major: boxes of 64 n by 64 k
        ("TN", 1, 1, (64, 64)),
        ("TT", 1, 1, (64, 256)),
        ("NT", 2, 1, (128, 128)),  # B shared along M: each block loads half its rows
        ("NN", 2, 1, (128, 32)),  # ... or half the k of each MN-major column
        ("NT", 1, 2, (64, 256)),  # A shared along N
    ],
)
def test_tma_boxes_follow_layout_and_cluster(
    layout: str, cm: int, cn: int, rows: tuple[int, int]
) -> None:
    assert box_rows(config(CM=cm, CN=cn), layout) == rows


def test_the_persistent_grid_is_one_block_per_sm_in_whole_clusters() -> None:
    big = Shape(8192, 8192, 8192, "bfloat16", "NT")
    assert tiles_blocks(config(), big, 132) == 132
    small = Shape(256, 512, 64, "bfloat16", "NT")  # 2 x 2 tiles of 128 x 256
    assert tiles_blocks(config(), small, 132) == 4
    assert tiles_blocks(config(CM=2), small, 132) == 4  # 1 x 2 clusters of two blocks
    assert tiles_blocks(config(CM=2), big, 131) == 130  # whole clusters only
    source = render(TMA_WS.config(config()))
    assert source.launch(small, 132).grid == (4, 1, 1)
    assert source.persistent and source.tensor_maps
    # The stream-K tail shares the 4 tiles' k tiles over a block per SM.
    assert tiles_blocks(config(TAIL=1), small, 132) == 132
    assert render(TMA_WS.config(config(TAIL=1))).launch(small, 132).grid == (132, 1, 1)


def test_the_stream_k_tail_renders_the_shared_pieces_and_the_hand_off() -> None:
    tail = render(TMA_WS.config(config(TAIL=1, EPI=1))).code
    assert TMA_WS.config(config(TAIL=1)).name.endswith("_cm1_cn1_tl1_dt1_ly1")
    for piece in (
        "next_piece(w, first_tile, tile_step, dp_tiles, k_tiles, sk_begin, sk_end",
        "const int k0 = (kt_first + kt) * 64;",
        "atomicAdd(&splitk_arrivals[tile], 1u)",
        "store_release_gpu(&splitk_done[tile], 1u)",
        "bar.sync 3, 256;",  # the consumers' own barrier, not __syncthreads
        "if (tid == 128)",  # the first consumer thread holds the ticket
        "add_c2(C + (long long)r * ldc, col, N, vec_ok, alpha * v0, alpha * v1)",
        "tma_store(",  # whole tiles still go out by TMA stores
    ):
        assert piece in tail, piece
    plain = render(TMA_WS.config(config(EPI=1))).code
    assert "next_piece" not in plain and "splitk_" not in plain and "bar.sync 3" not in plain


def test_the_template_renders_tma_mbarriers_setmaxnreg_and_the_options() -> None:
    plain = render(TMA_WS.config(config())).code
    for piece in (
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "mbarrier.try_wait.parity",
        "mbarrier.arrive.expect_tx",
        "setmaxnreg.dec.sync.aligned.u32 40",
        "setmaxnreg.inc.sync.aligned.u32 232",
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16",
        "const __grid_constant__ TensorMap a_map",
    ):
        assert piece in plain, piece
    assert "multicast" not in plain and "__cluster_dims__" not in plain
    assert "tma_store(" not in plain
    cluster = render(TMA_WS.config(config(CM=2, EPI=1, OUT=2))).code
    assert "__cluster_dims__(2, 1, 1)" in cluster and ".multicast::cluster" in cluster
    assert "tma_store(" in cluster and "cvt.rn.bf16x2.f32" in cluster
    assert "unsigned short* __restrict__ C" in cluster


def test_it_compiles_for_sm_90a_without_spills() -> None:
    names = [
        TMA_WS.config(config()).name,
        TMA_WS.config(config(BN=128, CONSUMERS=1, STAGES=5, LAYOUT=0, DTYPE=0, EPI=1)).name,
        TMA_WS.config(config(BM=256, BN=128, CN=2, EPI=1, LAYOUT=3, OUT=2)).name,
        TMA_WS.config(config(TAIL=1, EPI=1, LAYOUT=2)).name,
        TMA_WS.config(config(BM=64, BN=128, CONSUMERS=1, STAGES=6, SPLIT=16, EPI=1, OUT=2)).name,
        TMA_WS.config(config(BN=128, STAGES=6, SPLIT=2, LAYOUT=0, DTYPE=0, OUT=1)).name,
        TMA_WS.config(config(BM=16, BN=64, CONSUMERS=1, STAGES=16, OUT=2)).name,
        TMA_WS.config(config(BM=32, BN=128, CONSUMERS=1, STAGES=8, SPLIT=4, LAYOUT=0)).name,
        TMA_WS.config(config(BM=64, PINGPONG=1, EPI=1, CM=2, LAYOUT=2, OUT=2)).name,
        TMA_WS.config(config(BN=128, PINGPONG=1, STAGES=6, EPI=1, LAYOUT=3, DTYPE=0)).name,
    ]
    sources = [render(parse_config(n)) for n in names]
    compiler = NvccCompiler("sm_90")
    assert [compiler.target(s) for s in sources] == ["sm_90a"] * len(names)
    for name, result in zip(names, compile_many(compiler, sources), strict=True):
        assert not isinstance(result, CompileError), getattr(result, "log", "")
        usage = result.usage
        # The launch count: all 65536 registers over the block's threads (one block per SM).
        assert not usage.spills and 0 < usage.registers <= 65536 // result.source.threads, (
            name,
            usage,
        )


def test_cost_model_ranks_it_no_lower_than_wgmma_and_counts_whole_tiles_per_block() -> None:
    """Both are bound by the tensor cores on a large square, but TMA has no burst of copies to
    wait out, so even a shallow ring keeps them busy where wgmma's STAGES 3 does not; and a
    persistent block runs ceil(tiles / blocks) whole tiles."""
    shape = Shape(4096, 4096, 4096, "bfloat16", "NT")
    wgmma = {"BM": 128, "BN": 256, "BK": 64, "WG_M": 2, "SWIZZLE": 8, "DTYPE": 1, "LAYOUT": 1}
    ours = estimate(TMA_WS.config(config(STAGES=3)), shape, H100)
    shallow = estimate(WGMMA.config(wgmma | {"STAGES": 3}), shape, H100)
    deep = estimate(WGMMA.config(wgmma | {"STAGES": 4}), shape, H100)
    assert ours.ms <= deep.ms and ours.ms < shallow.ms
    assert ours.blocks == 132 and ours.blocks_per_sm == 1
    # 512 tiles over 132 blocks: 4 rounds of 64 k tiles; 8192^3 has 2048 tiles: 16 rounds of
    # 128 k tiles, 8 times the cycles.
    big = estimate(TMA_WS.config(config(STAGES=3)), Shape(8192, 8192, 8192, "bfloat16", "NT"), H100)
    assert big.cycles == pytest.approx(ours.cycles * 16 * 2 / 4)


def test_cost_model_never_ranks_the_tail_above_whole_tiles() -> None:
    """1536x4096x14336: 192 tiles of 128x256 for 132 blocks. The tail was measured slower than
    whole tiles (see the model's docstring), so it costs whole tiles' rounds and a hand-off;
    where the tiles fill whole rounds (132 tiles) nothing is cut and the two are the same;
    with fewer tiles than SMs the tail's grid of one block per SM costs one round."""
    ragged = Shape(1536, 4096, 14336, "bfloat16", "NT", "float32")
    whole = estimate(TMA_WS.config(config()), ragged, H100)
    tail = estimate(TMA_WS.config(config(TAIL=1)), ragged, H100)
    assert tail.cycles > whole.cycles
    assert tail.cycles == pytest.approx(whole.cycles, rel=0.01)
    even = Shape(1408, 3072, 14336, "bfloat16", "NT", "float32")  # 11 x 12 = 132 tiles
    assert estimate(TMA_WS.config(config(TAIL=1)), even, H100).cycles == pytest.approx(
        estimate(TMA_WS.config(config()), even, H100).cycles
    )
    few = Shape(256, 512, 14336, "bfloat16", "NT", "float32")  # 4 tiles
    assert estimate(TMA_WS.config(config(TAIL=1)), few, H100).cycles >= (
        estimate(TMA_WS.config(config()), few, H100).cycles
    )


def test_cost_model_reads_a_shared_operand_half_from_l2() -> None:
    unit = throughput(H100)
    shape = Shape(4096, 4096, 4096, "bfloat16", "NT")
    work = TILE_MODELS["half_tma"]
    alone = work(TMA_WS, config(), 384, unit, 32, shape)
    shared_b = work(TMA_WS, config(CM=2), 384, unit, 32, shape)
    assert alone.l2_bytes == (128 + 256) * 64 * 2
    assert shared_b.l2_bytes == (128 + 256 // 2) * 64 * 2


SPLIT_BASE = {"BM": 64, "BN": 128, "CONSUMERS": 1, "STAGES": 6, "EPI": 1, "OUT": 2}


def test_a_k_split_is_named_by_its_pieces_and_older_names_read_as_whole_k() -> None:
    split = TMA_WS.config(config(**SPLIT_BASE, SPLIT=4))
    assert TMA_WS.broken_rules(split) == []
    assert split.name == "tma_ws_bm64_bn128_bk64_cw1_s6_gr8_ra0_ep1_cm1_cn1_sp4_dt1_ly1_out2"
    assert parse_config(split.name) == split
    # A name from before SPLIT existed is a whole-K config.
    assert parse_config("tma_ws_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep0_cm1_cn1_dt1_ly1")["SPLIT"] == 1
    assert (
        TMA_WS.footprint(split.as_dict()).smem_bytes
        == TMA_WS.footprint(config(**SPLIT_BASE, SPLIT=1)).smem_bytes + 4
    )  # the ticket word


def test_the_split_grid_has_a_block_per_piece_up_to_one_per_sm() -> None:
    deep = Shape(256, 256, 65536, "bfloat16", "NT")  # 4 x 2 tiles of 64 x 128
    assert tiles_blocks(config(**SPLIT_BASE, SPLIT=16), deep, 132) == 128
    assert tiles_blocks(config(**SPLIT_BASE, SPLIT=32), deep, 132) == 132
    # More tiles than slots (161 and up): the kernel does not split, one block per tile.
    wide = Shape(64, 128 * 170, 4096, "bfloat16", "NT")
    assert tiles_blocks(config(**SPLIT_BASE, SPLIT=4), wide, 132) == 132
    assert render(TMA_WS.config(config(**SPLIT_BASE, SPLIT=16))).launch(deep, 132).grid == (
        128,
        1,
        1,
    )


def test_the_split_renders_the_pieces_and_their_meeting() -> None:
    split = render(TMA_WS.config(config(**SPLIT_BASE, SPLIT=4))).code
    for piece in (
        "const int parts = tiles <= 160 ? 4 : 1;",
        "const int part = unit / tiles;",
        "static __device__ float4 split_sums[327680];",  # 160 slots of 64 x 128 floats, 4 a float4
        "atomicAdd(&split_arrivals[tile], 1u)",
        "__stcg(slot",  # the first piece stores
        "store_release_gpu(&split_opened[tile], 1u)",
        "red.global.add.v4.f32",  # the middle ones add
        "load_acquire_gpu(&split_finished[tile])",  # the last waits for them
        "__ldcg(slot",
        "tma_store(",  # and writes C as a whole tile does
    ):
        assert piece in split, piece
    whole = render(TMA_WS.config(config(**SPLIT_BASE))).code
    assert "split_" not in whole and "bar.sync 3" not in whole


def test_the_space_splits_only_where_the_tiles_leave_sms_idle() -> None:
    deep = Space("tma_ws", Shape(256, 256, 65536, "bfloat16", "NT"), H100)
    configs = deep.candidates()
    splits = [c for c in configs if c["SPLIT"] > 1]
    assert splits and any(c["SPLIT"] == 1 for c in configs)  # whole K is always offered
    for c in splits:
        tiles = -(-256 // c["BM"]) * -(-256 // c["BN"])
        assert tiles * c["SPLIT"] <= 132, c.name  # one round of pieces at most
    counts = deep.evaluate()[1]
    assert counts.pruned.get("split-K: more blocks per SM than needed", 0) > 0
    big = Space("tma_ws", Shape(4096, 4096, 4096, "bfloat16", "NT"), H100).candidates()
    assert big and all(c["SPLIT"] == 1 for c in big)  # more tiles than slots


def test_cost_model_splits_a_deep_k_and_keeps_a_short_one_whole() -> None:
    """256x256x65536 has 8 tiles of 64x128: 16 pieces of 64 k tiles beat 8 blocks of 1024. On
    1024^3 (16 k tiles) the meeting costs more than halving the loop saves, as measured."""
    deep = Shape(256, 256, 65536, "bfloat16", "NT")
    whole = estimate(TMA_WS.config(config(**SPLIT_BASE)), deep, H100)
    split = estimate(TMA_WS.config(config(**SPLIT_BASE, SPLIT=16)), deep, H100)
    assert split.ms < whole.ms / 4 and split.blocks == 128
    short = Shape(1024, 1024, 1024, "bfloat16", "NT")
    tile = {"BN": 128, "STAGES": 6, "EPI": 1, "OUT": 2}
    assert (
        estimate(TMA_WS.config(config(**tile)), short, H100).ms
        < estimate(TMA_WS.config(config(**tile, SPLIT=2)), short, H100).ms
    )


def test_one_round_of_tiles_keeps_one_tile_order() -> None:
    """256x256x65536: every piece has its block, so GROUP and RASTER only reorder work that runs
    at once and each config's GROUP 1, RASTER 0 twin alone is kept; 4096^3 (512 tiles of
    128x256 for 132 SMs) keeps every order."""
    deep = Space("tma_ws", Shape(256, 256, 65536, "bfloat16", "NT"), H100)
    kept = deep.candidates()
    assert kept and all(c["GROUP"] == 1 and c["RASTER"] == 0 for c in kept)
    reason = "tma_ws: wasteful for this shape on this device"
    assert deep.evaluate()[1].pruned[reason] > 0
    big = Space("tma_ws", Shape(4096, 4096, 4096, "bfloat16", "NT"), H100).candidates()
    assert {(c["GROUP"], c["RASTER"]) for c in big} == {(g, r) for g in (1, 8, 16) for r in (0, 1)}


SHORT = {"BM": 16, "BN": 64, "CONSUMERS": 1, "STAGES": 16, "OUT": 2}


def test_a_short_tile_holds_fewer_rows_of_a_per_stage_and_whole_m64_slots() -> None:
    """BM 16: a stage is 16 + 64 rows of 128 bytes (so 16 stages fit), one m64 wgmma tile, and
    a split's slot keeps the m64 tile's place per thread (64 x BN floats, not 16 x BN)."""
    short = TMA_WS.config(config(**SHORT))
    assert TMA_WS.broken_rules(short) == []
    values = TMA_WS.template_values(short)
    assert values["STAGE_BYTES"] == (16 + 64) * 128 and values["MT"] == 1
    split = TMA_WS.template_values(TMA_WS.config(config(**SHORT, SPLIT=2)))
    assert split["SLOT_ROWS"] == 64
    assert box_rows(short.as_dict(), "NT") == (16, 64)


def test_a_short_tile_stores_and_meets_only_its_own_rows() -> None:
    code = render(TMA_WS.config(config(**SHORT, SPLIT=2))).code
    assert "const int row_end = min(M, m0 + 16);" in code
    assert "if (row < row_end)" in code and "if (row + 8 < row_end)" in code
    assert "warp * 16 < 16 ? tm * 16 + warp * 16 : M" in code  # only warp 0 meets
    assert "split_sums[163840]" in code  # 160 slots of 64 x 64 floats, 4 a float4
    tall = render(TMA_WS.config(config(BM=64, BN=64, CONSUMERS=1, STAGES=12))).code
    assert "const int row_end = M;" in tall


def test_the_space_offers_short_tiles_only_where_one_holds_every_row() -> None:
    """On the H200 a 16-row tile ran 16x4096x4096 at 1.05x cuBLAS where 64-row tiles reached
    0.94x, and 48 rows in 16- or 32-row tiles at 0.56-0.86x where 64-row tiles reached 0.99x."""

    def tiles(m: int) -> set[int]:
        space = Space("tma_ws", Shape(m, 4096, 4096, "bfloat16", "NT"), H100).candidates()
        return {c["BM"] for c in space}

    assert tiles(16) == {16}
    assert tiles(24) == {32}
    assert 16 not in tiles(48) and 32 not in tiles(48) and 64 in tiles(48)
    assert tma_ws_waste(config(**SHORT), Shape(17, 64, 64, "bfloat16", "NT"))
    assert tma_ws_waste(config(**SHORT), Shape(16, 64, 64, "bfloat16", "NT")) is None
    nn = Space("tma_ws", Shape(8, 4096, 4096, "bfloat16", "NN"), H100).candidates()
    tn = Space("tma_ws", Shape(8, 4096, 4096, "bfloat16", "TN"), H100).candidates()
    assert {c["BM"] for c in nn} == {16} and min(c["BM"] for c in tn) == 64


def test_cost_model_counts_a_short_tile_as_one_m64_wgmma() -> None:
    """The tensor cores multiply 64 rows whatever BM is; A's bytes from L2 are BM rows."""
    rates = throughput(H100)
    shape = Shape(16, 4096, 4096, "bfloat16", "NT")
    short = TMA_WS.config(config(**SHORT)).as_dict()
    tall = TMA_WS.config(config(**{**SHORT, "BM": 64, "STAGES": 12})).as_dict()
    work = TILE_MODELS["half_tma"]
    short_tile, tall_tile = (work(TMA_WS, p, 256, rates, 32, shape) for p in (short, tall))
    assert short_tile.macs == tall_tile.macs == 64 * 64 * 64
    assert short_tile.l2_bytes == (16 + 64) * 64 * 2 < tall_tile.l2_bytes


PINGPONG = {"BM": 64, "BN": 256, "CONSUMERS": 2, "PINGPONG": 1, "STAGES": 4, "EPI": 1, "OUT": 2}


def test_pingpong_consumers_hold_whole_tiles_and_names_say_so() -> None:
    """PINGPONG 1: each of the two consumers holds all BM/64 m64 tiles of its own tile (two
    m64n128 for 128x128: as many sums as one m64n256), and a name without ``pp`` reads back as
    the consumers sharing each tile's rows."""
    pp = TMA_WS.config(config(**PINGPONG))
    assert TMA_WS.broken_rules(pp) == []
    assert "_cw2_pp1_s4_" in pp.name and parse_config(pp.name) == pp
    assert TMA_WS.template_values(pp)["MT"] == 1
    square = TMA_WS.config(config(**{**PINGPONG, "BM": 128, "BN": 128}))
    assert TMA_WS.template_values(square)["MT"] == 2
    assert TMA_WS.footprint(square.as_dict()).accumulators == 128
    assert TMA_WS.template_values(TMA_WS.config(config(BN=128)))["MT"] == 1  # sharing 128 rows
    assert (
        parse_config("tma_ws_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep0_cm1_cn1_dt1_ly1")["PINGPONG"] == 0
    )


def test_pingpong_renders_turns_and_a_release_by_one_consumer() -> None:
    """A stage is released by the four warps of the consumer that read it (times the blocks of
    a cluster), and each consumer waits its turn before a tile's first k tile."""
    pp = render(TMA_WS.config(config(**PINGPONG, CM=2))).code
    assert "mbar_init(empty_bars + 8 * s, 8);" in pp  # 4 warps x 2 blocks
    assert "int it = consumer * k_tiles;" in pp
    assert "tile += 2 * tile_step, it += k_tiles" in pp
    assert "turn_wait(consumer);" in pp and "turn_pass(consumer);" in pp
    assert "bar.arrive %0, 256" in pp and "bar.sync %0, 256" in pp
    assert "static_cast<unsigned>(i);  // this m64 tile" in pp
    shared = render(TMA_WS.config(config(CM=2))).code
    assert "mbar_init(empty_bars + 8 * s, 16);" in shared  # 2 consumers x 4 warps x 2 blocks
    assert "turn_wait" not in shared and "int it = 0;" in shared
    assert "static_cast<unsigned>(consumer * 1 + i);  // this m64 tile" in shared


def test_the_space_offers_pingpong_only_where_every_block_takes_two_tiles() -> None:
    """A block with one tile has nothing for its second consumer: 1024^3 (at most 256 tiles of
    64x64 for 132 SMs) keeps no PINGPONG config, 4096^3 (1024 tiles of 64x256) keeps them, each
    with two tiles a block or more."""
    small = Space("tma_ws", Shape(1024, 1024, 1024, "bfloat16", "NT"), H100)
    assert small.candidates() and not any(c["PINGPONG"] for c in small.candidates())
    big = Space("tma_ws", Shape(4096, 4096, 4096, "bfloat16", "NT"), H100).candidates()
    assert any(c["PINGPONG"] for c in big)
    for c in big:
        if c["PINGPONG"]:
            tiles = -(-4096 // (c["BM"] * c["CM"])) * -(-4096 // (c["BN"] * c["CN"]))
            assert tiles * c["CM"] * c["CN"] >= 2 * tiles_blocks(
                c.as_dict(), Shape(4096, 4096, 4096, "bfloat16", "NT"), 132
            )


def test_cost_model_reads_b_once_per_m64_wgmma_of_the_consumer_at_work() -> None:
    """Sharing rows, each of two consumers of one m64 tile reads all of B's tile (twice a k
    tile); taking turns, the one at work reads it once per m64 tile it holds."""
    rates = throughput(H100)
    shape = Shape(4096, 4096, 4096, "bfloat16", "NT")
    work = TILE_MODELS["half_tma"]

    def smem(**changes: int) -> int:
        p = TMA_WS.config(config(**changes)).as_dict()
        return work(TMA_WS, p, 384, rates, 32, shape).smem_bytes

    def stage(bm: int, bn: int) -> int:  # the copies' writes into the stage
        return (bm + bn) * 64 * 2

    assert smem() == (128 + 2 * 256) * 64 * 2 + stage(128, 256)
    assert smem(**PINGPONG) == (64 + 256) * 64 * 2 + stage(64, 256)
    square = {**PINGPONG, "BM": 128, "BN": 128}
    assert smem(**square) == (128 + 2 * 128) * 64 * 2 + stage(128, 128)
