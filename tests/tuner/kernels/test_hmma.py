"""hmma: rules, footprint, the shared-memory swizzle, the shape-pinned dtype and layout, and nvcc
builds for sm_80 (sm_90 builds are in test_compile with every representative)."""

from __future__ import annotations

import itertools

import pytest

from tuner.answers.default_rule import default_config
from tuner.core.shape import Shape
from tuner.kernels.compile import CompileError, NvccCompiler, compile_many
from tuner.kernels.families import FAMILIES, HMMA, KERNEL_FAMILIES, checked_config, parse_config
from tuner.kernels.families.hmma import hmma_derive
from tuner.kernels.render import render
from tuner.kernels.representative import REPRESENTATIVE
from tuner.kernels.resources import DEVICE_TABLE, static_check
from tuner.kernels.space import Space
from tuner.model.cost_model import estimate

H100 = DEVICE_TABLE["sm_90"]
A100 = DEVICE_TABLE["sm_80"]
BASE = {"BM": 128, "BN": 128, "BK": 32, "WARPS_M": 2, "WARPS_N": 2, "STAGES": 4, "SWIZZLE": 8}


def config(**changes: int) -> dict[str, int]:
    return {**BASE, "DTYPE": 1, "LAYOUT": 1, **changes}


def test_a_valid_config_breaks_no_rule_and_reads_back_from_its_name() -> None:
    cfg = HMMA.config(config())
    assert HMMA.broken_rules(cfg) == []
    assert cfg.name == "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt1_ly1"
    assert parse_config(cfg.name) == cfg


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"BM": 64, "WARPS_M": 8}, "multiple of 16: a warp computes whole m16"),
        ({"BN": 64, "WARPS_N": 8}, "BN/WARPS_N must be a multiple of 16"),
        ({"BM": 64, "BN": 64, "WARPS_M": 4, "WARPS_N": 4}, "whole passes of 16-byte chunks"),
        ({"BM": 256, "BN": 128, "WARPS_M": 1, "WARPS_N": 2}, "at most 128 FP32 sums"),
    ],
)
def test_rules_give_their_reasons(changes: dict[str, int], reason: str) -> None:
    broken = HMMA.broken_rules(HMMA.config(config(**changes)))
    assert any(reason in b for b in broken), broken


def test_footprint_counts_every_stage_of_both_tiles_in_halves() -> None:
    fp = HMMA.footprint(config(BM=256, BN=64, BK=64, WARPS_M=4, WARPS_N=1, STAGES=3))
    assert fp.smem_bytes == 3 * (256 * 64 + 64 * 64) * 2 and fp.dynamic_smem
    assert fp.threads == 128
    # A 64x64 warp tile: 4 m16 x 8 n8 mma tiles of 4 sums; fragments of 4 + 2 registers each.
    assert fp.accumulators == 4 * 8 * 4
    assert fp.fragments == 4 * 4 + 8 * 2


def test_too_deep_a_ring_does_not_fit_the_a100() -> None:
    big = HMMA.config(config(BM=256, BN=256, BK=64, WARPS_M=4, WARPS_N=4, STAGES=5))
    check = static_check(big, A100)  # 5 x 64 KiB of tiles
    assert not check.fits and "shared memory" in check.problems[0]


def _bank_groups(
    rows: int, chunks: int, div: int, mod: int, cells: list[tuple[int, int]]
) -> set[int]:
    """The 16-byte bank groups (of the 8 in a 128-byte line) that tile cells (row, chunk) land
    in under the template's swizzle: chunk c of row r at c ^ ((r / div) % mod)."""
    assert all(r < rows and c < chunks for r, c in cells)
    return {(r * chunks + (c ^ ((r // div) % mod))) % 8 for r, c in cells}


@pytest.mark.parametrize(
    ("bm", "bn", "bk", "layout"),
    [(128, 128, 32, 0), (64, 256, 64, 1), (256, 64, 32, 2), (128, 64, 64, 3)],
)
def test_swizzle_spreads_every_ldmatrix_phase_and_copy_phase_over_all_banks(
    bm: int, bn: int, bk: int, layout: int
) -> None:
    """An ldmatrix 8x8 matrix is 8 consecutive tile rows at one chunk; 8 threads of a copy
    phase write 8 consecutive chunks (row by row). Both must hit 8 distinct bank groups."""
    p = config(BM=bm, BN=bn, BK=bk, LAYOUT=layout, WARPS_M=2, WARPS_N=2)
    d = hmma_derive(p)
    for x in ("A", "B"):
        rows, chunks = d[f"{x}_TILE_ROWS"], d[f"{x}_CHUNKS"]
        div, mod = d[f"{x}_SWZ_DIV"], d[f"{x}_SWZ_MOD"]
        assert rows * chunks * 8 == (bm if x == "A" else bn) * bk
        for first, chunk in itertools.product(range(0, rows, 8), range(chunks)):
            matrix = [(first + r, chunk) for r in range(8)]
            assert len(_bank_groups(rows, chunks, div, mod, matrix)) == 8, (x, first, chunk)
        for start in range(0, rows * chunks, 8):
            phase = [divmod(i, chunks) for i in range(start, start + 8)]
            assert len(_bank_groups(rows, chunks, div, mod, phase)) == 8, (x, start)


def test_tiles_are_stored_with_k_along_rows_exactly_where_the_operand_is_stored_k_major() -> None:
    # A is M x K (k contiguous) in NN and NT, K x M in TN and TT; B is K x N in NN and TN.
    rows = {layout: hmma_derive(config(LAYOUT=layout)) for layout in range(4)}
    assert [rows[x]["A_KROWS"] for x in range(4)] == [0, 0, 1, 1]
    assert [rows[x]["B_KROWS"] for x in range(4)] == [1, 0, 1, 0]
    assert rows[2]["A_TILE_ROWS"] == 32 and rows[0]["A_TILE_ROWS"] == 128


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_half_shape_is_searched_by_the_half_families_alone_with_its_dtype_and_layout(
    dtype: str, layout: str
) -> None:
    """With C float32 all the half families search it; with C in the input type (the default)
    the split-K ones do not (their slices add into C), and every config pins OUT."""
    codes = (["float16", "bfloat16"].index(dtype), ["NN", "NT", "TN", "TT"].index(layout))
    half_families = ("hmma", "hmma_splitk", "wgmma", "wgmma_splitk", "tma_ws")
    for out, searching in (("float32", half_families), (None, ("hmma", "wgmma", "tma_ws"))):
        shape = Shape(1000, 1000, 1000, dtype, layout, out)
        out_code = {"float32": 0, "float16": 1, "bfloat16": 2}[shape.out]
        for half_family in searching:
            configs = Space(half_family, shape, H100).candidates()
            assert configs
            assert {(c["DTYPE"], c["LAYOUT"], c["OUT"]) for c in configs} == {(*codes, out_code)}
        for name in set(half_families) - set(searching):
            checks, counts = Space(name, shape, H100).evaluate()
            assert checks == [] and f"not {shape.out}" in next(iter(counts.pruned))
        for name, family in KERNEL_FAMILIES.items():  # the vendor library computes every type
            if name not in half_families:
                checks, counts = Space(family, shape, H100).evaluate()
                assert checks == [] and f"not {dtype} {layout}" in next(iter(counts.pruned))


def test_float32_shapes_get_no_hmma_config() -> None:
    checks, counts = Space("hmma", Shape(1000, 1000, 1000), H100).evaluate()
    assert checks == [] and "not float32 NN" in next(iter(counts.pruned))


@pytest.mark.parametrize(("m", "n"), [(100, 100), (8192, 8192)])
def test_the_default_for_half_inputs_is_a_valid_hmma_config_of_the_shape(m: int, n: int) -> None:
    cfg = default_config(m, n, "bfloat16", "TN")
    assert cfg.family == "hmma" and (cfg["DTYPE"], cfg["LAYOUT"]) == (1, 2)
    checked_config(cfg.name)
    assert static_check(cfg, A100).fits and static_check(cfg, H100).fits
    assert default_config(m, n).family == "warptile"


def test_cost_model_charges_misaligned_rows_for_their_smaller_copies() -> None:
    """With K = 4095 the rows of A (NN) are only 2-byte aligned: every chunk is copied as eight
    loads, where K = 4096 takes one cp.async; per flop the odd K must not look cheaper."""
    cfg = HMMA.config(config(LAYOUT=0, BM=64, BN=64, WARPS_M=1, WARPS_N=1, STAGES=2))
    aligned = estimate(cfg, Shape(4096, 4096, 4096, "bfloat16", "NN"), H100).ms / 4096
    odd = estimate(cfg, Shape(4096, 4096, 4095, "bfloat16", "NN"), H100).ms / 4095
    assert odd > aligned


def test_representatives_compile_for_sm80_without_spills() -> None:
    names = REPRESENTATIVE["hmma"][:2]
    results = compile_many(NvccCompiler("sm_80"), [render(parse_config(n)) for n in names])
    for name, result in zip(names, results, strict=True):
        assert not isinstance(result, CompileError), getattr(result, "log", "")
        assert not result.usage.spills, (name, result.usage)
        assert result.rejection(A100) is None


def test_hmma_splitk_is_hmma_with_the_split_k_hand_off_over_grid_z() -> None:
    split = render(checked_config("hmma_splitk_bm64_bn64_bk64_wpm2_wpn2_s3_sw4_sk4_dt1_ly0"))
    plain = render(checked_config("hmma_bm64_bn64_bk64_wpm2_wpn2_s3_sw4_dt1_ly0"))
    assert "splitk_arrivals" in split.code and "red.global.add.v2.f32" in split.code
    assert "splitk_arrivals" not in plain.code and "add_c2" not in plain.code
    shape = Shape(100, 200, 5000, "bfloat16", "NN")
    assert split.launch(shape).grid == (4, 2, 4)
    assert plain.launch(shape).grid == (4, 2, 1)
    assert FAMILIES["hmma_splitk"].module_counters and not HMMA.module_counters


def test_the_space_keeps_splits_that_fill_the_chip_for_a_large_k_shape() -> None:
    """256 x 256 output in 64 x 64 tiles is 16 blocks: splits that reach the 132 SMs stay, and
    the cost model ranks a split config above every unsplit one."""
    shape = Shape(256, 256, 65536, "bfloat16", "NN", "float32")
    split_configs = Space("hmma_splitk", shape, H100).candidates()
    assert {8, 16} <= {c["SPLITK"] for c in split_configs}
    best_split = min(estimate(c, shape, H100).ms for c in split_configs)
    best_plain = min(estimate(c, shape, H100).ms for c in Space("hmma", shape, H100).candidates())
    assert best_split < best_plain
