"""The split-K family on the CPU: rules, footprint, rendering, launch geometry, the space's
split-K step and the cost model. Compiling the representative configs (zero spills, no static
shared memory) is in test_compile.py; correctness against cuBLAS is in tests/gpu."""

from __future__ import annotations

import pytest

from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.kernels.compile import NvccCompiler, parse_ptxas_report
from tuner.kernels.families import SPLITK_MAX_TILES, get_family, parse_config
from tuner.kernels.render import render
from tuner.kernels.representative import REPRESENTATIVE
from tuner.kernels.resources import DEVICE_TABLE, static_check
from tuner.kernels.space import Space, split_blocks_per_sm, splitk_waste
from tuner.model.cost_model import estimate

H100 = DEVICE_TABLE["sm_90"]
FAMILY = get_family("splitk")
SKINNY = "splitk_bm16_bn64_bk32_wm16_wn32_wni1_tm4_tn4_t64_s4_sk8"
TILE = dict(BM=64, BN=64, BK=32, WM=32, WN=32, WNITER=1, TM=4, TN=4, THREADS=128, STAGES=3)


def splitk(**changes: int) -> Config:
    return FAMILY.config({**TILE, "SPLITK": 4, **changes})


# --- rules -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        # 16x64 tile in 16x32 warp tiles is 2 warps, not 4.
        (dict(BM=16, BN=64, WM=16, WN=32, THREADS=128), "one warp per warp tile"),
        (dict(BM=16, WM=32), "BM must be a multiple of WM"),
        # One warp for the whole 16x256 block: its 32 threads cannot each keep one of the 64
        # 16-byte columns of a B row.
        (dict(BM=16, BN=256, WM=16, WN=256, WNITER=2, TM=4, TN=8, THREADS=32), "of BN/4"),
        (dict(SPLITK=65536), "at most 65535"),
    ],
)
def test_rules_reject_with_their_reason(params: dict[str, int], reason: str) -> None:
    broken = FAMILY.broken_rules(splitk(**params))
    assert any(reason in b for b in broken), broken


def test_small_m_tiles_are_valid_and_names_round_trip() -> None:
    config = parse_config(SKINNY)
    assert config.family == "splitk" and config["SPLITK"] == 8 and config.name == SKINNY
    assert FAMILY.broken_rules(config) == []
    values = FAMILY.template_values(config)
    assert (values["WMITER"], values["WSUBM"], values["WSUBN"]) == (1, 16, 32)
    assert {16, 32} <= set(next(p.values for p in FAMILY.params if p.name == "BM"))


# --- footprint and the compiler's report -------------------------------------------------------
# (The dynamic shared memory against what the rendered kernel addresses: test_smem_layout.py.)


def test_footprint_by_hand() -> None:
    # 4 stages * (As 16x(32+4) + Bs 32x64) = 4 * (576 + 2048) floats = 41984 B, all dynamic.
    # WMITER 1, WNITER 1, 4x4 per lane: 16 accumulators, 4 + 4 fragment values.
    fp = FAMILY.footprint(parse_config(SKINNY).as_dict())
    assert (fp.threads, fp.smem_bytes, fp.dynamic_smem) == (64, 41984, True)
    assert (fp.accumulators, fp.fragments) == (16, 8)


def test_compiler_reports_the_counters_and_no_static_shared_memory() -> None:
    """ptxas sees the three counter arrays as global memory, and no static shared memory."""
    source = render(parse_config(SKINNY))
    _, log = NvccCompiler("sm_90")._build(source)
    assert f"{3 * SPLITK_MAX_TILES * 4} bytes gmem" in log
    usage = parse_ptxas_report(log, source.entry)
    assert usage.smem_static_bytes == 0 and not usage.spills


# --- rendering and launch ----------------------------------------------------------------------


def test_launch_grid_has_a_z_dimension_of_splitk() -> None:
    source = render(parse_config(SKINNY))
    launch = source.launch(Shape(16, 4096, 4096))
    assert launch.grid == (64, 1, 8) and launch.block == (64, 1, 1)
    assert source.launch(Shape(33, 100, 5000)).grid == (2, 3, 8)
    other = render(parse_config(REPRESENTATIVE["pipelined"][0]))
    assert other.launch(Shape(33, 100, 5000)).grid[2] == 1


@pytest.mark.parametrize(
    "name", [SKINNY, "warptile_splitk_bm128_bn128_bk16_wm64_wn32_wni1_tm8_tn4_t256_sk8"]
)
def test_rendered_kernel_holds_the_ticket_protocol(name: str) -> None:
    """Both split-K families on warp tiles render the same hand-off (_splitk_handoff)."""
    code = render(parse_config(name)).code
    for counter in ("arrivals", "done", "finished"):
        assert f"static __device__ unsigned int splitk_{counter}[{SPLITK_MAX_TILES}];" in code
    assert "atomicAdd(&splitk_arrivals[tile], 1u)" in code
    assert "ld.acquire.gpu.u32" in code and "st.release.gpu.u32" in code
    assert "__threadfence();" in code and "red.global.add.v4.f32" in code
    # The block completing the count of 8 resets the counters.
    assert "atomicAdd(&splitk_finished[tile], 1u) == 7u" in code
    assert "must not run concurrently" in code
    # k is split in whole BK tiles, balanced over the 8 slices.
    assert "all_tiles / 8" in code and "all_tiles % 8" in code


def test_split_kernel_runs_pipelineds_main_loop_over_its_slice() -> None:
    """splitk extends pipelined.cu.j2: the same k loop, over the slice's k tiles."""
    config = splitk(SPLITK=3)
    plain = render(get_family("pipelined").config(dict(TILE))).code
    split = render(config).code

    def k_loop(code: str) -> str:
        start = code.index("    // Prologue")
        return code[start : code.index("    // Only empty groups", start)]

    assert k_loop(plain) == k_loop(split)
    assert "const int kt_begin = 0;" in plain and "kt_begin = z * base + min(z, extra);" in split
    assert "splitk_" not in plain


# --- the space's split-K step ------------------------------------------------------------------


def test_splitk_waste_names_each_reason() -> None:
    def kind(shape: Shape, **params: int) -> str | None:
        waste = splitk_waste(FAMILY, splitk(**params), shape, H100)
        return None if waste is None else waste[0]

    # 64x64 tiles: 64 x 64 = 4096 tiles fit the counters; 129 x 129 do not.
    assert (
        kind(Shape(8256, 8256, 4096), SPLITK=2) == "split-K: more output tiles than ticket counters"
    )
    detail = splitk_waste(FAMILY, splitk(SPLITK=2), Shape(8256, 8256, 4096), H100)
    assert detail is not None and f"exceed the {SPLITK_MAX_TILES}" in detail[1]
    # K=64 is 2 BK tiles: 4 slices would leave two without work; the smallest split stays.
    assert kind(Shape(256, 256, 64), SPLITK=4) == "split-K: fewer BK tiles than slices"
    assert kind(Shape(256, 256, 64), SPLITK=2) is None
    # 16 tiles x 4 = 64 blocks leave SMs idle while 12 or more slices are possible.
    assert kind(Shape(256, 256, 65536), SPLITK=4) == "split-K: fewer blocks than SMs"
    assert kind(Shape(256, 256, 65536), SPLITK=16) is None
    # 1024 tiles x 4 blocks of 128 threads: more than 4 per SM (512 threads per SM).
    assert split_blocks_per_sm(128) == 4
    assert kind(Shape(2048, 2048, 4096), SPLITK=4) == "split-K: more blocks per SM than needed"
    # Other families have no split to judge.
    warptile = parse_config(REPRESENTATIVE["warptile"][0])
    assert splitk_waste(get_family("warptile"), warptile, Shape(16, 4096, 4096), H100) is None


def test_tiny_k_keeps_the_smallest_split() -> None:
    configs = Space("splitk", Shape(1, 1, 1), H100).candidates()
    assert configs and {c["SPLITK"] for c in configs} == {2}


@pytest.mark.parametrize(
    "shape", [Shape(16, 4096, 4096), Shape(128, 4096, 4096), Shape(256, 256, 65536)], ids=str
)
def test_split_shapes_have_a_sensible_number_of_candidates(shape: Shape) -> None:
    checks, counts = Space("splitk", shape, H100).evaluate()
    assert 100 <= counts.fits <= 3500, counts
    assert any(reason.startswith("split-K") for reason in counts.pruned)
    for check in checks:
        config = check.config
        tiles = -(-shape.m // config["BM"]) * -(-shape.n // config["BN"])
        assert tiles <= SPLITK_MAX_TILES
        if config["SPLITK"] > 2:  # the smallest split is kept whatever the shape
            per_sm = split_blocks_per_sm(FAMILY.threads(config.as_dict()))
            assert tiles * config["SPLITK"] <= per_sm * H100.sm_count
            assert -(-shape.k // config["BK"]) >= config["SPLITK"]
    if shape.m == 16:  # skinny M: only one-warp-row block tiles are useful
        assert {c.config["BM"] for c in checks} == {16}


# --- cost model --------------------------------------------------------------------------------


def test_estimate_counts_blocks_times_splitk_and_shorter_slices() -> None:
    shape = Shape(256, 256, 65536)
    two, eight = estimate(splitk(SPLITK=2), shape, H100), estimate(splitk(SPLITK=8), shape, H100)
    assert (two.blocks, eight.blocks) == (16 * 2, 16 * 8)
    assert eight.cycles < two.cycles / 3  # 4x the SMs at work on 1/4 of the k tiles each
    assert two.edge_efficiency == eight.edge_efficiency == 1


def test_estimate_charges_the_atomic_adds_into_c() -> None:
    # K=256 is 8 BK tiles: 32 slices gain little compute and pay 31 atomic adds of each C tile.
    shape = Shape(256, 256, 256)
    assert (
        estimate(splitk(SPLITK=32), shape, H100).cycles
        > estimate(splitk(SPLITK=2), shape, H100).cycles
    )


def test_estimate_of_a_grid_too_large_to_split_is_unsplit() -> None:
    shape = Shape(8256, 8256, 4096)  # 129 x 129 tiles of 64x64 > the counters
    assert estimate(splitk(SPLITK=8), shape, H100).blocks == 129 * 129
    assert static_check(splitk(SPLITK=8), H100).fits
