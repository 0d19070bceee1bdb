"""The streaming small-M family on the CPU: rules, footprint, rendering, launch geometry, the
space's limits for it and the cost model. Compiling the representative configs (zero spills)
is in test_compile.py; correctness against cuBLAS is in tests/gpu."""

from __future__ import annotations

import pytest

from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.kernels.compile import NvccCompiler, parse_ptxas_report
from tuner.kernels.families import SKINNY_MAX_ROW_BLOCKS, SPLITK_MAX_TILES, get_family, parse_config
from tuner.kernels.render import render
from tuner.kernels.representative import REPRESENTATIVE
from tuner.kernels.resources import DEVICE_TABLE
from tuner.kernels.space import Space, split_blocks_per_sm
from tuner.model.cost_model import estimate

H100 = DEVICE_TABLE["sm_90"]
FAMILY = get_family("skinny")
BASE = dict(BM=16, BN=128, TN=4, LK=4, KU=4, SPLITK=8)


def skinny(**changes: int) -> Config:
    return FAMILY.config({**BASE, **changes})


def test_name_round_trips_and_threads_follow_the_lane_layout() -> None:
    config = skinny()
    assert config.name == "skinny_bm16_bn128_tn4_lk4_ku4_sk8"
    assert parse_config(config.name) == config
    # 128 columns / 4 per lane = 32 column lanes, times 4 lanes along k = 128 threads.
    assert FAMILY.threads(config.as_dict()) == 128
    assert FAMILY.broken_rules(config) == []


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        # 8 lanes along n x 4 columns = 32 columns per warp: BN=48 is not whole warps.
        (dict(BN=48, LK=4), "whole column strips"),
        # 32 columns, one lane along k: 8 threads, not a warp.
        (dict(BN=32, LK=1), "whole number of warps"),
        # 512 columns / 4 x 16 lanes along k = 2048 threads.
        (dict(BN=512, LK=16), "at most 1024"),
        (dict(TN=6), "multiple of 4"),
    ],
)
def test_rules_reject_with_their_reason(params: dict[str, int], reason: str) -> None:
    broken = FAMILY.broken_rules(skinny(**params))
    assert any(reason in b for b in broken), broken


def test_footprint_by_hand() -> None:
    # 16 rows x 4 columns of accumulators; 4 k x 4 columns of B for this chunk and as many for
    # the next (loaded ahead), plus 4 values of A; 4 bytes of shared memory for the split-K
    # ticket, none without a split.
    fp = FAMILY.footprint(skinny().as_dict())
    assert (fp.threads, fp.smem_bytes, fp.dynamic_smem) == (128, 4, False)
    assert (fp.accumulators, fp.fragments) == (64, 36)
    assert FAMILY.footprint(skinny(SPLITK=1).as_dict()).smem_bytes == 0


def test_launch_grid() -> None:
    source = render(skinny())
    launch = source.launch(Shape(16, 4096, 4096))
    assert launch.grid == (32, 1, 8) and launch.block == (128, 1, 1)
    assert launch.dynamic_smem_bytes == 0
    assert source.launch(Shape(33, 100, 5000)).grid == (1, 3, 8)


def test_rendered_kernel_holds_the_split_protocol() -> None:
    """The split-K hand-off of the other split families (_splitk_handoff), the ticket passed
    through shared memory."""
    code = render(skinny()).code
    for counter in ("arrivals", "done", "finished"):
        assert f"static __device__ unsigned int splitk_{counter}[{SPLITK_MAX_TILES}];" in code
    assert "ld.acquire.gpu.u32" in code and "st.release.gpu.u32" in code
    assert "red.global.add.v4.f32" in code and "__threadfence();" in code
    assert "first = block_ticket == 0u;" in code and "__syncthreads_or" not in code
    assert "atomicAdd(&splitk_finished[tile], 1u) == 7u" in code  # 8 slices
    # Lanes along k meet by shuffles over offsets 16 .. 8 (4 lanes of 8 columns groups).
    assert "offset >= 8" in code
    unsplit = render(skinny(SPLITK=1, LK=1, BN=128)).code
    assert "splitk_arrivals" not in unsplit and "__shfl_xor_sync" not in unsplit


def test_scalar_a_loads_when_chunks_are_not_float4() -> None:
    assert "load4_or_zero(A" in render(skinny(KU=4)).code
    code = render(skinny(KU=2)).code
    assert "load4_or_zero(A" not in code and "load_or_zero(A, row0 + m, k + j" in code


def test_whole_chunks_take_the_unchecked_path_with_b_loaded_ahead() -> None:
    # Vector widths of A in the unchecked path follow KU: float4s, a float2, one float.
    assert "reinterpret_cast<const float4*>(chunk + 4 * v)" in render(skinny(KU=4)).code
    assert "reinterpret_cast<const float2*>(chunk)" in render(skinny(KU=2)).code
    one = render(skinny(KU=1)).code
    assert "a[0] = *chunk;" in one and "reinterpret_cast<const float2*>" not in one
    code = render(skinny()).code
    # B streams past L1; the loop alternates two register sets, each loaded a chunk ahead.
    assert "ld.global.nc.L1::no_allocate.v4.f32" in code
    assert "load4_streamed(chunk + (long long)j * N + 4 * v)" in code
    assert "skinny_load_b(b1, B, N, q1 * 4, col0);" in code
    assert "skinny_load_b(b0, B, N, q2 * 4, col0);" in code
    assert "skinny_products(acc, b0, A, M, K, row0, q * 4);" in code
    # Whole chunks end where K's last whole chunk does; the checked loop takes the rest.
    assert "min(q_end, K / 4)" in code and "load4_or_zero(B, k + j" in code


def test_best_measured_config_compiles_without_spills() -> None:
    # 16 rows x 8 columns of accumulators and two sets of 2 x 8 values of B: near the limit.
    source = render(parse_config("skinny_bm16_bn128_tn8_lk2_ku2_sk32"))
    _, log = NvccCompiler("sm_90")._build(source)
    usage = parse_ptxas_report(log, source.entry)
    assert not usage.spills, usage


def test_compiler_reports_the_counters_the_ticket_and_no_spills() -> None:
    source = render(skinny())
    _, log = NvccCompiler("sm_90")._build(source)
    assert f"{3 * SPLITK_MAX_TILES * 4} bytes gmem" in log
    usage = parse_ptxas_report(log, source.entry)
    assert usage.smem_static_bytes == FAMILY.footprint(skinny().as_dict()).smem_bytes == 4
    assert not usage.spills


def test_space_keeps_it_to_small_m() -> None:
    assert Space("skinny", Shape(4096, 4096, 4096), H100).candidates() == []
    checks, counts = Space("skinny", Shape(128, 4096, 4096), H100).evaluate()
    assert checks and counts.pruned.get("skinny: wasteful for this shape", 0) > 0
    assert all(-(-128 // c.config["BM"]) <= SKINNY_MAX_ROW_BLOCKS for c in checks)


def test_space_split_limits_scale_with_block_size() -> None:
    shape = Shape(16, 4096, 4096)
    checks, _ = Space("skinny", shape, H100).evaluate()
    assert len(checks) > 100
    for check in checks:
        p = check.config.as_dict()
        tiles = -(-shape.m // p["BM"]) * -(-shape.n // p["BN"])
        if p["SPLITK"] > 1:
            assert tiles * p["SPLITK"] <= split_blocks_per_sm(check.threads) * H100.sm_count
            assert shape.k // (p["KU"] * p["LK"]) >= p["SPLITK"]


def test_estimate_prefers_enough_blocks_and_bytes_in_flight() -> None:
    shape = Shape(16, 4096, 4096)
    # 32 blocks of 128 threads leave 100 SMs idle; 8 slices fill the chip.
    one, eight = estimate(skinny(SPLITK=1), shape, H100), estimate(skinny(), shape, H100)
    assert (one.blocks, eight.blocks) == (32, 256)
    assert eight.cycles < one.cycles / 2
    # One k per lane and step keeps a quarter of the bytes in flight of four.
    assert estimate(skinny(KU=1), shape, H100).cycles > eight.cycles


@pytest.mark.parametrize("name", REPRESENTATIVE["skinny"])
def test_representatives_are_valid(name: str) -> None:
    assert FAMILY.broken_rules(parse_config(name)) == []
