"""``streamk`` on the CPU: warptile's steps in a persistent grid, stream-K pieces summed in C.

Rules, launch geometry, the register cap, rendering, nvcc's report, the resource check and the
cost model. Compiling every representative config (no spills, the footprint's shared memory) is
in test_compile.py; correctness against cuBLAS is in tests/gpu (with the other split families).
"""

from __future__ import annotations

import pytest

from tuner.core.config import Config
from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.kernels.compile import NvccCompiler, parse_ptxas_report
from tuner.kernels.families import STREAMK_MAX_BLOCKS, get_family, parse_config
from tuner.kernels.render import render
from tuner.kernels.representative import REPRESENTATIVE
from tuner.kernels.resources import DEVICE_TABLE, static_check
from tuner.kernels.space import Space
from tuner.model.cost_model import estimate

H100 = DEVICE_TABLE["sm_90"]
STREAMK = get_family("streamk")
# The 128x256 tile of the large squares (warptile's best there).
TILE = dict(BM=128, BN=256, BK=16, WM=32, WN=128, WNITER=2, TM=8, TN=4, THREADS=256)


def config(**changes: int) -> Config:
    return STREAMK.config({**TILE, "SMBLOCKS": 1, "STAGGER": 0, **changes})


def test_the_register_prefetch_is_a_rule() -> None:
    # 256 accumulators a thread leave no room to stage the next k tile.
    heavy = config(BM=256, WM=64, WNITER=1, TM=8, TN=8)
    reasons = STREAMK.broken_rules(heavy)
    assert any("register prefetch" in r for r in reasons), reasons
    assert STREAMK.broken_rules(config()) == []


def test_launch_is_smblocks_per_sm_and_needs_the_sm_count() -> None:
    source = render(config())
    assert source.launch(Shape(3000, 5000, 700), sm_count=132).grid == (132, 1, 1)
    assert source.launch(Shape(1, 1, 1), sm_count=132).grid == (132, 1, 1)  # not the tiles
    two = render(config(BM=64, BN=64, BK=8, WM=32, WN=32, WNITER=1, TM=4, THREADS=128, SMBLOCKS=2))
    assert two.launch(Shape(1000, 1000, 1000), sm_count=132).grid == (264, 1, 1)
    # The counters serve STREAMK_MAX_BLOCKS blocks: a larger chip gets no more.
    assert two.launch(Shape(64, 64, 64), sm_count=1000).grid == (STREAMK_MAX_BLOCKS, 1, 1)
    with pytest.raises(InputError, match="SM count"):
        source.launch(Shape(64, 64, 64))
    # Other families keep their tile grid and ignore the SM count.
    warp = render(parse_config("warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128"))
    assert warp.launch(Shape(1000, 1000, 1000), sm_count=132).grid == (8, 8, 1)


@pytest.mark.parametrize(
    ("changes", "cap"),
    [
        ({}, 216),  # warptile's budget: 128 + 24 + 4*6 + 40
        # 64x64 tiles of 128 threads: a budget of 88 is raised to 168
        (dict(BM=64, BN=64, BK=8, WM=32, WN=32, WNITER=1, TM=4, THREADS=128), 168),
        # two blocks of 256 threads leave 128 registers a thread
        (dict(BN=128, WM=64, WN=32, TM=4, SMBLOCKS=2), 128),
    ],
)
def test_register_cap_is_warptiles_budget_within_the_blocks_per_sm(
    changes: dict[str, int], cap: int
) -> None:
    c = config(**changes)
    assert STREAMK.template_values(c)["MAX_REGISTERS"] == cap
    assert f"__maxnreg__({cap})" in render(c).code


def test_kernel_loops_over_pieces_with_the_epilogue_outside_the_k_loop() -> None:
    code = render(config()).code
    piece_loop = code.index("for (long long left = iterations;;)")
    k_loop = code.index("for (int i = 0; i < len; ++i)", piece_loop)
    epilogue = code.index("Split-K hand-off", k_loop)
    # The k loop holds warptile's three steps (fetch, outer products, store) and no C access.
    body = code[k_loop:epilogue]
    assert body.count("a_stage[l] = ") >= 1 and "fmaf(a[i], b[j], acc[i][j])" in body
    assert "atomicAdd" not in body and "add_c4" not in body
    # Pieces of a split tile meet through the split-K hand-off, with the tile's own counters.
    assert "splitk_arrivals[tile]" in code and "tile = (unsigned)counter;" in code
    assert "== (unsigned)(pieces - 1)" in code
    # Without STAGGER every block starts its first tile at k tile 0.
    assert "const int head = 0;" in code
    staggered = render(config(STAGGER=1)).code
    assert "const int head = dp_tiles > 0 ? (int)(((long long)blockIdx.x * k_tiles) / blocks)" in (
        staggered
    )


def test_kernel_compiles_without_spills_with_the_counters_in_global_memory() -> None:
    source = render(config())
    _, log = NvccCompiler("sm_90")._build(source)
    assert f"{3 * 2 * STREAMK_MAX_BLOCKS * 4} bytes gmem" in log
    usage = parse_ptxas_report(log, source.entry)
    assert not usage.spills, usage
    assert usage.smem_static_bytes == STREAMK.footprint(config().as_dict()).smem_bytes


@pytest.mark.parametrize("name", REPRESENTATIVE["streamk"])
def test_compiled_representatives_fit_their_blocks_per_sm(name: str) -> None:
    """The register cap leaves room for SMBLOCKS blocks per SM: with the registers nvcc chose
    (allocated in whole units per warp) and the shared memory, the H100 holds them all."""
    kernel = NvccCompiler("sm_90").compile(render(parse_config(name)))
    assert kernel.occupancy(H100).blocks_per_sm >= kernel.source.config["SMBLOCKS"]


def test_two_blocks_per_sm_that_cannot_fit_are_pruned() -> None:
    heavy = config(SMBLOCKS=2)  # ~176 registers x 256 threads: one block per SM
    problems = static_check(heavy, H100).problems
    assert any(p.startswith("SMBLOCKS=2 blocks per SM do not fit") for p in problems), problems
    light = config(BM=64, BN=64, BK=8, WM=32, WN=32, WNITER=1, TM=4, THREADS=128, SMBLOCKS=2)
    assert static_check(light, H100).fits
    kept, counts = Space(STREAMK, Shape(3000, 5000, 700), H100).evaluate()
    assert 0 < counts.fits == len(kept) < counts.valid
    for check in kept:
        assert check.occupancy.blocks_per_sm >= check.config["SMBLOCKS"]


def test_estimate_has_no_partial_wave_and_charges_the_stream_k_pieces() -> None:
    warp = get_family("warptile").config(TILE)
    # 480 tiles of 128x256 are 3.6 waves of 132 for warptile; streamk gives every SM 3.6 tiles.
    odd = Shape(3000, 5000, 700)
    ours, theirs = estimate(config(), odd, H100), estimate(warp, odd, H100)
    assert (ours.blocks, ours.wave_efficiency) == (132, 1.0)
    assert theirs.wave_efficiency < 0.95 and ours.cycles < theirs.cycles
    # 4224 = 33 * 128 rows: 528 tiles are exactly 4 waves, no stream-K tiles and no hand-off;
    # one row of tiles more adds stream-K pieces that add into C.
    even = estimate(config(), Shape(4224, 4096, 4096), H100).cycles
    ragged = estimate(config(), Shape(4352, 4096, 4096), H100).cycles
    assert ragged > even
