"""wgmma: rules, footprint, the 128-byte swizzled layout the copies write, the architecture
it compiles for (sm_90a) and runs on (sm_90 only), and what the cost model makes of it."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from tuner.core.shape import Shape
from tuner.kernels.compile import CompileError, NvccCompiler, compile_many
from tuner.kernels.families import HMMA, WGMMA, checked_config, parse_config
from tuner.kernels.families.wgmma import stage_bytes, staged_c_bytes, wgmma_derive
from tuner.kernels.render import render
from tuner.kernels.representative import REPRESENTATIVE
from tuner.kernels.resources import DEVICE_TABLE, static_check
from tuner.kernels.space import Space
from tuner.model.cost_model import estimate

H100 = DEVICE_TABLE["sm_90"]
A100 = DEVICE_TABLE["sm_80"]
BASE = {"BM": 128, "BN": 256, "BK": 64, "WG_M": 2, "STAGES": 4, "SWIZZLE": 8}


def config(**changes: int) -> dict[str, int]:
    return {**BASE, "DTYPE": 1, "LAYOUT": 0, **changes}


def test_a_valid_config_breaks_no_rule_and_reads_back_from_its_name() -> None:
    cfg = WGMMA.config(config())
    assert WGMMA.broken_rules(cfg) == []
    assert cfg.name == "wgmma_bm128_bn256_bk64_wgm2_s4_sw8_dt1_ly0"
    assert parse_config(cfg.name) == cfg


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"BK": 32}, "BK must be 64"),
        ({"BM": 64, "WG_M": 2}, "BM/WG_M must be a multiple of 64"),
        ({"BM": 256, "WG_M": 1}, "at most 128 FP32 sums"),
        ({"STAGES": 2}, "STAGES must be at least 3"),
    ],
)
def test_rules_give_their_reasons(changes: dict[str, int], reason: str) -> None:
    broken = WGMMA.broken_rules(WGMMA.config(config(**changes)))
    assert any(reason in b for b in broken), broken


def test_footprint_counts_every_stage_and_the_alignment_spare() -> None:
    fp = WGMMA.footprint(config(STAGES=3))
    assert fp.smem_bytes == 3 * (128 + 256) * 64 * 2 + 1024 and fp.dynamic_smem
    assert fp.threads == 256
    assert fp.accumulators == 128  # one m64n256 tile: 256 / 2 sums a thread
    assert fp.fragments == 2 * (128 + 256) * 64 // 8 // 256  # the copies' addresses


def test_a_ring_too_deep_for_the_h100_is_refused_before_compiling() -> None:
    check = static_check(WGMMA.config(config(STAGES=5)), H100)  # 5 x 48 KiB + 1 KiB
    assert not check.fits and "shared memory" in check.problems[0]


def test_it_runs_on_sm_90_alone() -> None:
    cfg = WGMMA.config(config(STAGES=3))
    assert static_check(cfg, H100).fits
    older = static_check(cfg, A100)
    assert not older.fits and "needs sm_90 or newer" in " ".join(older.problems)
    newer = static_check(cfg, replace(H100, arch="sm_100"))
    assert not newer.fits and "nothing newer than sm_90" in " ".join(newer.problems)
    shape = Shape(4096, 4096, 4096, "bfloat16", "NN")
    assert Space("wgmma", shape, H100).candidates()
    assert Space("wgmma", shape, A100).candidates() == []
    assert Space("hmma", shape, A100).candidates()


@pytest.mark.parametrize("layout", range(4))
@pytest.mark.parametrize(("bm", "bn", "groups"), [(128, 256, 2), (64, 64, 1), (256, 128, 2)])
def test_copies_land_in_the_swizzled_layout_the_descriptors_name(
    layout: int, bm: int, bn: int, groups: int
) -> None:
    """Each copy's chunk lands where the 128-byte swizzle puts it: every chunk of the tile
    exactly once, 8 consecutive rows of one chunk (an 8-row atom's column) in 8 distinct bank
    groups, and a K-major operand's rows or an MN-major operand's 64-wide columns of 8 KiB."""
    d = wgmma_derive(config(BM=bm, BN=bn, WG_M=groups, LAYOUT=layout))
    assert (d["A_MN_MAJOR"], d["B_MN_MAJOR"]) == (layout // 2, 1 - layout % 2)
    for x, extent in (("A", bm), ("B", bn)):
        rows, chunks = d[f"{x}_TILE_ROWS"], d[f"{x}_CHUNKS"]
        column = d[f"{x}_COLUMN_BYTES"]
        assert rows * chunks * 8 == extent * 64

        def place(r: int, c: int, column: int = column) -> int:  # the template's x_dst
            return (c >> 3) * column + r * 128 + (((c & 7) ^ (r & 7)) << 4)

        places = [place(r, c) for r, c in itertools.product(range(rows), range(chunks))]
        assert sorted(places) == list(range(0, rows * chunks * 16, 16))
        for first, c in itertools.product(range(0, rows, 8), range(chunks)):
            groups_hit = {place(first + r, c) // 16 % 8 for r in range(8)}
            assert len(groups_hit) == 8
        if d[f"{x}_MN_MAJOR"]:
            assert rows == 64 and column == 64 * 128  # k rows of one 64-wide column


def test_cost_model_ranks_wgmma_above_hmma_on_a_large_square() -> None:
    shape = Shape(4096, 4096, 4096, "bfloat16", "NN")
    wgmma = estimate(WGMMA.config(config()), shape, H100).ms
    hmma = estimate(checked_config("hmma_bm128_bn256_bk32_wpm4_wpn2_s5_sw4_dt1_ly0"), shape, H100)
    assert wgmma < hmma.ms


def test_it_compiles_for_sm_90a_whatever_the_compiler_was_made_for() -> None:
    names = REPRESENTATIVE["wgmma"][:2] + REPRESENTATIVE["wgmma_splitk"][:1]
    sources = [render(parse_config(n)) for n in names]
    compiler = NvccCompiler("sm_90")
    assert [compiler.target(s) for s in sources] == ["sm_90a"] * 3
    hmma = render(HMMA.config({**dict(parse_config(REPRESENTATIVE["hmma"][0]).params)}))
    assert compiler.target(hmma) == "sm_90"
    assert NvccCompiler("sm_90a").target(sources[0]) == "sm_90a"
    for name, source, result in zip(names, sources, compile_many(compiler, sources), strict=True):
        assert not isinstance(result, CompileError), getattr(result, "log", "")
        assert result.arch == "sm_90a" and not result.usage.spills, (name, result.usage)
        assert "wgmma.mma_async.sync.aligned.m64n" in source.code


def test_wgmma_splitk_is_wgmma_with_the_split_k_hand_off_over_grid_z() -> None:
    split = render(checked_config("wgmma_splitk_bm64_bn128_bk64_wgm1_s4_sw4_sk4_dt1_ly1"))
    plain = render(checked_config("wgmma_bm64_bn128_bk64_wgm1_s4_sw4_dt1_ly1"))
    assert "splitk_arrivals" in split.code and "splitk_arrivals" not in plain.code
    shape = Shape(100, 200, 5000, "bfloat16", "NT")
    assert split.launch(shape).grid == (2, 2, 4)
    assert plain.launch(shape).grid == (2, 2, 1)


def test_c_through_shared_memory_fits_in_the_ring_of_every_valid_config() -> None:
    """The epilogue for an odd ldc reuses the ring: 16 rows of BN + 8 floats per warp; a float32
    C may be added into there by a later split-K slice, a half C is rounded once and stored."""
    shape = Shape(4097, 4097, 4097, "bfloat16", "NN", "float32")
    configs = Space("wgmma", shape, H100).candidates()
    assert configs
    for cfg in configs:
        p = cfg.as_dict()
        assert staged_c_bytes(p) <= p["STAGES"] * stage_bytes(p), cfg.name
    code = render(configs[0]).code
    assert "if (!c_vec && (beta == 0.0f || !first))" in code and "atomicAdd(c, v)" in code
    half = render(Space("wgmma", shape.with_out("bfloat16"), H100).candidates()[0]).code
    assert "if (!c_vec && (beta == 0.0f || !first))" in half and "*c = to_c(v);" in half
    assert "atomicAdd" not in half


def test_cost_model_charges_a_ring_with_one_tile_copied_ahead() -> None:
    """With STAGES 3 only one k tile is copied ahead, and its burst of copies lands later than
    the tile's products take: the model ranks it below STAGES 4 (as measured at 4096^3)."""
    shape = Shape(4096, 4096, 4096, "bfloat16", "NN")
    three = estimate(WGMMA.config(config(STAGES=3)), shape, H100).ms
    four = estimate(WGMMA.config(config(STAGES=4)), shape, H100).ms
    assert four < three
