"""The cost model: behaviour, not numbers."""

from __future__ import annotations

import pytest

from tuner.core.config import Config
from tuner.core.shape import Shape
from tuner.kernels.families import get_family, parse_config
from tuner.kernels.resources import static_check, table_device
from tuner.kernels.space import Space
from tuner.model.cost_model import estimate, rank

H100 = table_device("sm_90")
TILE = dict(BM=128, BN=128, BK=16, WM=64, WN=64, WNITER=4, TM=8, TN=4, THREADS=128)


def warptile(**changes: int) -> Config:
    return get_family("warptile").config({**TILE, **changes})


def test_one_full_wave_beats_a_wave_and_a_bit_on_the_same_tile() -> None:
    config = warptile()
    per_wave = H100.sm_count * static_check(config, H100).occupancy.blocks_per_sm
    one_wave = Shape(128 * per_wave, 128, 4096)
    a_bit_more = Shape(128 * (per_wave + per_wave // 10), 128, 4096)
    full, over = estimate(config, one_wave, H100), estimate(config, a_bit_more, H100)
    assert full.waves == 1 and full.wave_efficiency == 1
    assert over.waves > 1 and over.wave_efficiency < 0.6
    # Per useful FLOP the full wave is cheaper.
    assert full.cycles / one_wave.flops < over.cycles / a_bit_more.flops


def test_tile_edge_waste_costs_time() -> None:
    config = warptile()
    per_wave = H100.sm_count * static_check(config, H100).occupancy.blocks_per_sm
    exact = Shape(128 * per_wave, 128, 1024)  # exactly one full wave
    ragged = Shape(128 * per_wave + 1, 128, 1024)  # one more row: a second, nearly empty wave
    assert estimate(config, exact, H100).edge_efficiency == 1
    assert estimate(config, ragged, H100).edge_efficiency < 1
    assert estimate(config, ragged, H100).cycles > estimate(config, exact, H100).cycles


def test_deeper_pipelines_hide_latency_and_rank_is_deterministic() -> None:
    shape = Shape(1024, 1024, 1024)
    fam = get_family("pipelined")
    two, four = (fam.config({**TILE, "STAGES": s}) for s in (2, 4))
    assert estimate(four, shape, H100).cycles <= estimate(two, shape, H100).cycles
    configs = Space("warptile", shape, H100).candidates()
    assert rank(configs, shape, H100) == rank(list(reversed(configs)), shape, H100)
    assert sorted(rank(configs, shape, H100)) == sorted(configs)


def test_issue_efficiency_counts_idle_schedulers_and_missing_ready_warps() -> None:
    from tuner.model.throughput import SCHEDULERS, WARP_READY, issue_efficiency

    # Two warps leave two of the four schedulers idle; one warp each issues WARP_READY.
    assert issue_efficiency(2) == pytest.approx(0.5 * WARP_READY)
    assert issue_efficiency(SCHEDULERS) == pytest.approx(WARP_READY)
    effs = [issue_efficiency(w) for w in (1, 2, 4, 8, 16, 32)]
    assert effs == sorted(effs) and effs[-1] < 1.0
    # Blocks of two warps: one per SM leaves half the schedulers idle, two per SM do not.
    shape = Shape(3000, 5000, 700)
    tile = "streamk_bm32_bn64_bk16_wm32_wn32_wni1_tm4_tn4_t64"
    one = estimate(parse_config(tile + "_smb1_stg0"), shape, H100).cycles
    two = estimate(parse_config(tile + "_smb2_stg0"), shape, H100).cycles
    assert two < one


def test_skinny_on_ragged_rows_is_charged_its_checked_loop() -> None:
    """skinny reads chunks unchecked only where A's rows (K) and B's rows (N) are whole float4s;
    on the H100 it ran 33x4096x4093 at a tenth of the model's unchecked estimate, below the
    tiled families, so a K or N one off a multiple of 4 costs it a multiple of its time."""
    config = parse_config("skinny_bm16_bn32_tn4_lk4_ku4_sk4")
    aligned = estimate(config, Shape(32, 4096, 4092), H100).ms
    for ragged in (Shape(32, 4096, 4093), Shape(32, 4095, 4092)):
        assert estimate(config, ragged, H100).ms > 2.5 * aligned
    tiled = parse_config("dmma_bm32_bn64_bk32_wm16_wn32_mk16_sk2_mb1_wd1")
    assert (
        estimate(tiled, Shape(32, 4096, 4093), H100).ms
        < estimate(config, Shape(32, 4096, 4093), H100).ms
    )


def test_skinny_estimate_grows_with_many_block_rows_of_serial_chunks() -> None:
    """Measured on the H100 (h100-sweep-skinny-128.jsonl), skinny at M = 128 runs 2.6 times
    slower than the best tiled config; the model must not rate it above the tiled families
    there, while at M = 16 (where it beat cuBLAS 1.7x) it still does."""

    def best(shape: Shape, family: str) -> float:
        space = Space(family, shape, H100).candidates()
        return min(estimate(c, shape, H100).cycles for c in space)

    wide, thin = Shape(128, 4096, 4096), Shape(16, 4096, 4096)
    assert best(wide, "skinny") > best(wide, "streamk")
    assert best(thin, "skinny") < min(best(thin, "streamk"), best(thin, "warptile"))


def test_a_config_is_estimated_as_the_candidate_its_space_builds() -> None:
    """``estimate`` of a bare config checks it itself; a space's candidate carries the check
    the space made, and a padded twin its plan: the figures are the same."""
    shape = Shape(2053, 3001, 1999)
    for family in ("warptile", "streamk", "skinny", "dmma_pipelined"):
        for candidate in Space(family, shape, H100).built_candidates()[:5]:
            assert estimate(candidate, shape, H100) == estimate(candidate.config, shape, H100)
            if family == "dmma_pipelined":
                twin = candidate.padded(shape)
                assert estimate(twin, shape, H100) == estimate(twin.config, shape, H100)


def test_a_built_candidate_is_estimated_without_checking_or_planning_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The space checked each candidate and a padded twin planned its copies when built: the
    model reads both (no resource check per estimate, no padding plan per padded estimate)."""
    import tuner.kernels.candidate
    import tuner.model.cost_model

    shape = Shape(2053, 3001, 1999)
    built = Space("dmma_pipelined", shape, H100).built_candidates()[:5]
    twins = [candidate.padded(shape) for candidate in built]

    def again(*args: object, **kwargs: object) -> None:
        raise AssertionError("worked out again")

    monkeypatch.setattr(tuner.kernels.candidate, "static_check", again)
    monkeypatch.setattr(tuner.kernels.candidate, "plan_padding", again)
    monkeypatch.setattr(tuner.model.cost_model, "plan_padding", again)
    for candidate in [*built, *twins]:
        assert estimate(candidate, shape, H100).ms > 0
    with pytest.raises(AssertionError, match="worked out again"):
        estimate(built[0].config, shape, H100)  # a bare config is checked here
