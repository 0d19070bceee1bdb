"""``dmma_pipelined`` on the CPU: dmma's FP64 tensor-core GEMM fed by a cp.async ring.

Rules, footprint against the render, the permuted k and n of the vector fragment reads (a model of
the template's index arithmetic: every mma sees matching A and B values, C's columns are covered
once, and every phase of a vector read hits distinct banks), nvcc's report and the search space.
Correctness against cuBLAS is in tests/gpu/test_correctness.py.
"""

from __future__ import annotations

import pytest

from tests.tuner.dmma_checks import (
    assert_compiles_without_spills_within_the_blocks_per_sm,
    assert_cost_model_rates_candidates,
)
from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.kernels.families import DMMA_PIPELINED_A_PADS, get_family, parse_config
from tuner.kernels.render import render
from tuner.kernels.representative import REPRESENTATIVE
from tuner.kernels.resources import DEVICE_TABLE, static_check
from tuner.kernels.space import Space

H100 = DEVICE_TABLE["sm_90"]
FAMILY = get_family("dmma_pipelined")
# The fastest config of the first H100 sweep at 4096^3 (h100-sweep-dmma-pipelined.jsonl).
TILE = dict(BM=64, BN=64, BK=16, WM=32, WN=64, MK=4, STAGES=3, SPLITK=1, MINBLOCKS=4)


def config(**changes: int) -> Config:
    return FAMILY.config({**TILE, **changes})


def test_name_reads_back() -> None:
    c = config()
    assert c.name == "dmma_pipelined_bm64_bn64_bk16_wm32_wn64_mk4_s3_sk1_mb4"
    assert parse_config(c.name) == c


def test_rules_are_dmmas() -> None:
    reasons = FAMILY.broken_rules(config(BM=32, BN=32, WM=16, WN=16, BK=8))
    assert any("whole float4 passes" in r for r in reasons), reasons
    assert any("whole mma steps" in r for r in FAMILY.broken_rules(config(BK=8, MK=16)))


def test_representative_configs_are_valid_and_fit() -> None:
    for name in REPRESENTATIVE["dmma_pipelined"]:
        c = parse_config(name)
        assert FAMILY.broken_rules(c) == [], name
        assert static_check(c, H100).fits, name


@pytest.mark.parametrize(("bk", "stages"), [(8, 2), (16, 3), (32, 4)])
def test_ring_waits_for_the_oldest_of_its_stages(bk: int, stages: int) -> None:
    """STAGES - 1 k tiles are in flight; tile kt has landed once STAGES - 2 are pending (the
    stages' extent against what the kernel addresses: test_smem_layout.py)."""
    c = config(BK=bk, STAGES=stages, MK=4)
    fp = FAMILY.footprint(c.as_dict())
    assert fp.dynamic_smem and fp.threads == 64
    assert f"cp.async.wait_group {stages - 2};" in render(c).code
    # Four FP64 sums per m16n8 tile: a 32x64 warp tile has 2 x 8 of them.
    assert fp.accumulators == 8 * 2 * 8


def test_split_k_counters_only_when_split() -> None:
    assert "splitk_arrivals" not in render(config()).code
    split = render(config(SPLITK=33))
    assert "splitk_arrivals" in split.code and "red.global.add.v4.f32" in split.code
    assert split.launch(Shape(256, 256, 65536)).grid == (4, 4, 33)
    assert FAMILY.module_counters


# --- a model of the template's fragment indexing ------------------------------------------------


def b_swizzle(nt: int, key: int) -> int:
    """The XOR of B's chunk index for the rows of lane t = key (as in the template)."""
    return (key & 1) | ((key & 2) << 1) if nt == 8 else key * 2


def physical_k(bk: int, mk: int, step: int, t: int, h: int) -> int:
    """Physical k inside the tile of the mma's logical k = t + 4h of step ``step``."""
    return t * (bk // 4) + step * (mk // 4) + h


@pytest.mark.parametrize(("bk", "mk"), [(8, 4), (8, 8), (16, 4), (16, 8), (16, 16), (32, 16)])
def test_every_mma_multiplies_a_and_b_at_the_same_k_and_covers_the_tile(bk: int, mk: int) -> None:
    steps = bk // mk
    seen = set()
    for t in range(4):
        for s in range(steps):
            # A register r of lane (g, t) is logical k t + 4*(r // 2), B register r is t + 4r.
            a_ks = {physical_k(bk, mk, s, t, r // 2) for r in range(mk // 2)}
            b_ks = {physical_k(bk, mk, s, t, r) for r in range(mk // 4)}
            assert a_ks == b_ks
            seen |= a_ks
            # The lane's k are inside its own run t*BK/4 .. (t+1)*BK/4 - 1 (one vector read).
            assert all(t * bk // 4 <= k < (t + 1) * bk // 4 for k in a_ks)
    assert seen == set(range(bk))


@pytest.mark.parametrize("nt", [2, 4, 8])
def test_c_columns_of_the_warp_tile_are_each_held_once(nt: int) -> None:
    # Sum acc[i][j][c + 2*half] of lane (g, t) is column (2t + c)*NT + j of the warp tile.
    columns = [(2 * t + c) * nt + j for t in range(4) for c in range(2) for j in range(nt)]
    assert sorted(columns) == list(range(8 * nt))
    # B: lane g reads columns g*NT + j, the mma's column g of n8 tile j.
    b_columns = [g * nt + j for g in range(8) for j in range(nt)]
    assert sorted(b_columns) == list(range(8 * nt))


def phases(width_bytes: int) -> list[list[int]]:
    """Lanes served together by one shared-memory wavefront for a vector width."""
    per_phase = 128 // width_bytes if width_bytes > 4 else 32
    return [list(range(p, p + per_phase)) for p in range(0, 32, per_phase)]


def distinct_banks(addresses: dict[int, int], width_floats: int) -> bool:
    banks = [(a + w) % 32 for a in addresses.values() for w in range(width_floats)]
    return len(banks) == len(set(banks))


@pytest.mark.parametrize("bk", [8, 16, 32])
def test_a_fragment_reads_are_free_of_bank_conflicts(bk: int) -> None:
    a_ld = bk + DMMA_PIPELINED_A_PADS[bk]
    vw = min(bk // 4, 4)
    for vg in range(bk // 4 // vw):
        for row_offset in (0, 8):
            for lanes in phases(4 * vw):
                addresses = {
                    lane: (lane // 4 + row_offset) * a_ld + (lane % 4) * (bk // 4) + vg * vw
                    for lane in lanes
                }
                assert distinct_banks(addresses, vw), (bk, vg, addresses)


@pytest.mark.parametrize("bk", [8, 16, 32])
@pytest.mark.parametrize(("bn", "wn"), [(64, 16), (128, 32), (64, 64), (256, 64)])
def test_b_fragment_reads_are_free_of_bank_conflicts(bk: int, bn: int, wn: int) -> None:
    nt = wn // 8
    width = min(nt, 4)
    for warp_n in range(0, bn, wn):
        for x in range(bk // 4):
            for q in range(max(nt // 4, 1)):
                for lanes in phases(4 * width):
                    addresses = {}
                    for lane in lanes:
                        g, t = lane // 4, lane % 4
                        col = warp_n + g * nt + 4 * q
                        chunk = (col // 4) ^ b_swizzle(nt, t)
                        row = t * (bk // 4) + x
                        addresses[lane] = row * bn + chunk * 4 + col % 4
                    assert distinct_banks(addresses, width), (bk, bn, wn, addresses)


def test_b_swizzle_stays_inside_the_row() -> None:
    for nt in (2, 4, 8):
        for bn in (32, 64, 128, 256):
            for key in range(4):
                chunks = sorted(c ^ b_swizzle(nt, key) for c in range(bn // 4))
                assert chunks == list(range(bn // 4))


def test_template_swizzles_as_modelled() -> None:
    assert "(((row / 4) & 1) | (((row / 4) & 2) << 1))" in render(config(WN=64)).code
    assert "((row / 4) * 2)" in render(config(WN=32)).code


# --- compiler and search space ---------------------------------------------------------------


@pytest.mark.parametrize("name", REPRESENTATIVE["dmma_pipelined"] + [config().name])
def test_nvcc_compiles_without_spills_within_the_blocks_per_sm(name: str) -> None:
    assert_compiles_without_spills_within_the_blocks_per_sm(name)


def test_space_splits_k_where_the_grid_is_small_and_fills_the_h100() -> None:
    square = list(Space("dmma_pipelined", Shape(4096, 4096, 4096), H100).candidates())
    assert square and {c["SPLITK"] for c in square} == {1}
    large_k = list(Space("dmma_pipelined", Shape(256, 256, 65536), H100).candidates())
    # 16 tiles of 64x64 split 33 ways: four blocks on each of the 132 SMs.
    assert config(SPLITK=33) in large_k


def test_cost_model_rates_every_candidate() -> None:
    assert_cost_model_rates_candidates("dmma_pipelined", Shape(1000, 1000, 1000))
