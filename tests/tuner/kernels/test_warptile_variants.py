"""The families that reuse warptile.cu.j2 through template inheritance, on the CPU:
``warptile_splitk`` (warptile's main loop, K split over grid z) and ``doublebuf`` (two shared
buffers, one barrier per k tile). Compiling the representative configs (no spills, the
footprint's shared memory) is in test_compile.py; correctness against cuBLAS is in tests/gpu."""

from __future__ import annotations

import pytest

from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.kernels.compile import NvccCompiler, parse_ptxas_report
from tuner.kernels.families import SPLITK_MAX_TILES, get_family, parse_config
from tuner.kernels.render import render
from tuner.kernels.representative import REPRESENTATIVE
from tuner.kernels.resources import DEVICE_TABLE, static_check
from tuner.kernels.space import Space, splitk_waste
from tuner.model.cost_model import estimate

H100 = DEVICE_TABLE["sm_90"]
SPLIT = get_family("warptile_splitk")
DOUBLE = get_family("doublebuf")
TILE = dict(BM=128, BN=128, BK=16, WM=64, WN=32, WNITER=1, TM=8, TN=4, THREADS=256)


def split_config(**changes: int) -> Config:
    return SPLIT.config({**TILE, "SPLITK": 8, **changes})


def _between(code: str, start: str, end: str) -> str:
    begin = code.index(start)
    return code[begin : code.index(end, begin)]


# --- warptile_splitk: rules, footprint, rendering --------------------------------------------


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        (dict(THREADS=128), "one warp per warp tile"),
        (dict(SPLITK=65536), "at most 65535"),
        (dict(BM=32, WM=64), "BM must be a multiple of WM"),
    ],
)
def test_split_rules_reject_with_their_reason(changes: dict[str, int], reason: str) -> None:
    broken = SPLIT.broken_rules(split_config(**changes))
    assert any(reason in b for b in broken), broken


def test_split_family_widens_warptile_to_small_blocks_and_lists_the_splits() -> None:
    values = {p.name: p.values for p in SPLIT.params}
    warptile = {p.name: p.values for p in get_family("warptile").params}
    assert 32 in values["BM"] and 32 not in warptile["BM"]
    assert 64 in values["THREADS"] and 64 not in warptile["THREADS"]
    assert values["SPLITK"][0] == 2 and 64 in values["SPLITK"]
    config = parse_config(REPRESENTATIVE["warptile_splitk"][1])
    assert SPLIT.broken_rules(config) == [] and config["THREADS"] == 64


def test_split_footprint_is_warptiles_static_tile() -> None:
    # 128x128 over 256 threads: 64 accumulators; the tiles in static shared memory (what nvcc
    # reports of them: test_split_kernel_compiles_with_the_counters_in_global_memory).
    fp = SPLIT.footprint(split_config().as_dict())
    assert (fp.threads, fp.accumulators, fp.dynamic_smem) == (256, 64, False)


def test_split_kernel_runs_warptiles_main_loop_over_its_slice() -> None:
    name = "warptile_bm128_bn128_bk16_wm64_wn32_wni1_tm8_tn4_t256"
    plain = render(parse_config(name)).code
    split = render(split_config()).code
    loop_start = "    // Tile 0 goes straight"
    assert (
        _between(plain, loop_start, "    // Epilogue").strip()
        == _between(split, loop_start, "    // Split-K hand-off").strip()
    )
    assert "const int kt_begin = 0;" in plain and "all_tiles / 8" in split
    assert "kt_begin = z * base + min(z, extra);" in split


def test_only_the_split_kernel_holds_the_ticket_protocol() -> None:
    """The protocol itself is checked for both split families in test_splitk.py."""
    split = render(split_config(SPLITK=12)).code
    assert "atomicAdd(&splitk_finished[tile], 1u) == 11u" in split
    plain = render(parse_config("warptile_bm128_bn128_bk16_wm64_wn32_wni1_tm8_tn4_t256")).code
    assert "splitk_" not in plain and "red.global" not in plain


def test_split_launch_has_splitk_blocks_along_z() -> None:
    launch = render(split_config(SPLITK=32)).launch(Shape(256, 256, 65536))
    assert launch.grid == (2, 2, 32) and launch.block == (256, 1, 1)


def test_split_kernel_compiles_with_the_counters_in_global_memory() -> None:
    source = render(split_config())
    _, log = NvccCompiler("sm_90")._build(source)
    assert f"{3 * SPLITK_MAX_TILES * 4} bytes gmem" in log
    usage = parse_ptxas_report(log, source.entry)
    assert usage.smem_static_bytes == SPLIT.footprint(split_config().as_dict()).smem_bytes
    assert not usage.spills


# --- warptile_splitk: space and cost model ---------------------------------------------------


def test_space_applies_the_split_k_steps() -> None:
    # 4 tiles of 128x128 x SPLITK=32 = 128 blocks leave 4 of the 132 SMs idle while 64 is
    # possible; 256 blocks fill them.
    waste = splitk_waste(SPLIT, split_config(SPLITK=32), Shape(256, 256, 65536), H100)
    assert waste is not None and waste[0] == "split-K: fewer blocks than SMs"
    assert splitk_waste(SPLIT, split_config(SPLITK=64), Shape(256, 256, 65536), H100) is None
    kept, counts = Space(SPLIT, Shape(256, 256, 65536), H100).evaluate()
    assert 0 < counts.fits == len(kept) < counts.valid
    # Every kept config has a block per SM, or already the deepest split.
    for check in kept:
        p = check.config.as_dict()
        blocks = (256 // p["BM"]) * (256 // p["BN"]) * p["SPLITK"]
        assert blocks >= H100.sm_count or p["SPLITK"] == 64


def test_estimate_counts_split_blocks_and_the_prefetch() -> None:
    shape = Shape(256, 256, 65536)
    deep, shallow = (
        estimate(split_config(SPLITK=32), shape, H100),
        estimate(split_config(SPLITK=8), shape, H100),
    )
    assert (deep.blocks, shallow.blocks) == (4 * 32, 4 * 8)
    assert deep.cycles < shallow.cycles
    assert static_check(split_config(SPLITK=32), H100).fits


# --- doublebuf --------------------------------------------------------------------------------


def test_doublebuf_buffers_need_dynamic_shared_memory() -> None:
    """Two buffers of the 256x128x16 tile are past the 48 KiB of static shared memory: only
    dynamic memory holds them (that the launch gives what the kernel addresses, and nvcc sees no
    static arrays: test_smem_layout.py, test_compile.py)."""
    fp = DOUBLE.footprint(parse_config(REPRESENTATIVE["doublebuf"][0]).as_dict())
    assert fp.dynamic_smem and fp.smem_bytes > 48 * 1024


@pytest.mark.parametrize("name", REPRESENTATIVE["doublebuf"])
def test_doublebuf_has_one_barrier_per_k_tile(name: str) -> None:
    """One barrier in the k loop; warptile with the same tile has two there."""
    config = parse_config(name)
    double = render(config).code
    plain = render(get_family("warptile").config(config.as_dict())).code
    loop_start = "    for (int kt = 0; kt < k_tiles; ++kt) {"
    loop = _between(double, loop_start, "#undef WARPTILE_AS")
    assert loop.count("__syncthreads();") == 1
    assert _between(plain, loop_start, "    // Epilogue").count("__syncthreads();") == 2
    assert "WARPTILE_AS(read)" in loop and "WARPTILE_AS(read ^ 1)" in loop


def test_doublebuf_without_register_room_loads_after_the_reads() -> None:
    code = render(parse_config(REPRESENTATIVE["doublebuf"][1])).code
    assert "register prefetch off" in code
    loop = _between(code, "    for (int kt = 0; kt < k_tiles; ++kt) {", "#undef WARPTILE_AS")
    assert loop.index("WARPTILE_AS(read)[k]") < loop.index("const int k_next")
    prefetched = render(parse_config(REPRESENTATIVE["doublebuf"][0])).code
    assert "register prefetch on" in prefetched
    loop = _between(prefetched, "    for (int kt = 0; kt < k_tiles; ++kt) {", "#undef WARPTILE_AS")
    assert loop.index("const int k_next") < loop.index("WARPTILE_AS(read)[k]")


def test_doublebuf_tiles_warptile_cannot_fit_statically_are_candidates() -> None:
    shape = Shape(4096, 4096, 4096)
    # 32 * (256 + 4 + 128) floats = 49664 B: one buffer is already past 48 KiB of static memory.
    big = {"BM": 256, "BN": 128, "BK": 32, "WM": 64, "WN": 64, "WNITER": 2, "TM": 4, "TN": 8}
    big["THREADS"] = 256
    assert not static_check(get_family("warptile").config(big), H100).fits
    assert DOUBLE.config(big) in Space(DOUBLE, shape, H100).candidates()


# --- the outer product's order ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "warptile_bm128_bn256_bk16_wm32_wn128_wni2_tm8_tn4_t256",
        REPRESENTATIVE["doublebuf"][0],
        REPRESENTATIVE["warptile_splitk"][0],
    ],
)
def test_outer_product_walks_rows_in_serpentine_order(name: str) -> None:
    config = parse_config(name)
    values = get_family(config.family).template_values(config)
    cols = values["WNITER"] * values["TN"]
    code = render(config).code
    assert f"const int j = (i & 1) ? {cols - 1} - jj : jj;" in code
    assert "acc[i][j] = fmaf(a[i], b[j], acc[i][j]);" in code
