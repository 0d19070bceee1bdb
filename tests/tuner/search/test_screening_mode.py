"""The operand mode a study screens each family in (``tuner.search.screening_mode``), the cost
model's estimate of a padded config, and a study that screens a family padded."""

from __future__ import annotations

import pytest

import tuner.search.screening_mode as screening_mode
from tests.tuner.fakes import RuleEvaluator
from tuner.core.shape import Shape
from tuner.kernels.candidate import Candidate, build_candidate
from tuner.kernels.families import parse_config
from tuner.kernels.operand_padding import plan_padding
from tuner.kernels.resources import table_device
from tuner.kernels.space import Space
from tuner.model.cost_model import estimate, padding_copies_ms
from tuner.search.recorder import MemoryRecorder
from tuner.search.screening_mode import other_mode, padded_families, screened_as
from tuner.search.study import Study

H100 = table_device("sm_90")
KERNEL = "dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1"
FFMA = "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128"
EMULATED = "hmma_bf16x3_bm128_bn128_bk32_wpm2_wpn2_s3_sw4_dt1_ly0"
HALF_TMA = "tma_ws_bm128_bn256_bk64_cw2_s4_gr8_ra0_ep1_cm1_cn1_dt1_ly1_out2"
BIG_RAGGED = Shape(2053, 3001, 1999)  # both operands ragged, copies small beside the product


def _candidates(shape: Shape, families: tuple[str, ...]) -> list[Candidate]:
    return [c for f in families for c in Space(f, shape, H100).built_candidates()]


def test_aligned_shapes_screen_every_family_on_the_callers_arrays() -> None:
    shape = Shape(2048, 3000, 2000)
    assert padded_families(_candidates(shape, ("dmma_pipelined",)), shape, H100) == set()


def test_large_ragged_shapes_screen_only_the_leading_dimension_families_padded() -> None:
    candidates = _candidates(BIG_RAGGED, ("warptile", "dmma", "dmma_pipelined"))
    assert padded_families(candidates, BIG_RAGGED, H100) == {"dmma", "dmma_pipelined"}


def test_copies_as_large_as_the_product_keep_the_callers_arrays() -> None:
    shape = Shape(17, 4099, 4095)  # B, copied, is read once by the product too
    assert padded_families(_candidates(shape, ("dmma_pipelined",)), shape, H100) == set()


def test_the_threshold_counts_each_ragged_operand(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both of BIG_RAGGED's operands are ragged: padding is chosen where the copies cost at most
    twice NARROW_COPY_COST of the fastest kernel estimate, not once."""
    candidates = _candidates(BIG_RAGGED, ("dmma_pipelined",))
    fastest = min(estimate(c, BIG_RAGGED, H100).ms for c in candidates)
    share = padding_copies_ms(BIG_RAGGED, True, H100) / fastest
    monkeypatch.setattr(screening_mode, "NARROW_COPY_COST", 0.75 * share)
    assert padded_families(candidates, BIG_RAGGED, H100) == {"dmma_pipelined"}
    monkeypatch.setattr(screening_mode, "NARROW_COPY_COST", 0.45 * share)
    assert padded_families(candidates, BIG_RAGGED, H100) == set()


def test_a_padded_estimate_is_the_kernel_on_whole_vector_rows_plus_the_copies() -> None:
    config = parse_config(KERNEL)
    run = plan_padding(BIG_RAGGED).run_shape  # 2053 x 3004 x 2000
    padded = estimate(config.padded(4), BIG_RAGGED, H100)
    kernel = estimate(config, run, H100)
    copies = padding_copies_ms(BIG_RAGGED, True, H100)
    assert copies > 0
    assert padded.ms == pytest.approx(kernel.ms + copies)


def test_copies_cost_more_the_more_is_copied() -> None:
    one = padding_copies_ms(Shape(2048, 2048, 2047), True, H100)  # A only
    both = padding_copies_ms(Shape(2048, 2047, 2047), True, H100)  # A and B
    assert 0 < one < both
    assert padding_copies_ms(Shape(2048, 2048, 2048), True, H100) == 0.0


def test_screened_as_pads_only_the_chosen_families_and_what_can_be_measured() -> None:
    kernel = build_candidate(parse_config(KERNEL), BIG_RAGGED, H100)
    ffma = build_candidate(parse_config(FFMA), BIG_RAGGED, H100)
    padded = screened_as(kernel, {"dmma_pipelined"}, BIG_RAGGED)
    assert padded.name == KERNEL + "_pad4"
    # The padded twin keeps its kernel's check and plans the copies of its operands once.
    assert padded.check is kernel.check
    assert padded.padding == plan_padding(BIG_RAGGED, leading_dims=True)
    assert screened_as(ffma, {"dmma_pipelined"}, BIG_RAGGED) == ffma
    assert screened_as(kernel, {"dmma_pipelined"}, BIG_RAGGED, lambda c: not c.pad) == kernel


def test_the_other_mode_of_a_finalist() -> None:
    kernel = parse_config(KERNEL)
    assert other_mode(kernel, BIG_RAGGED) == kernel.padded(4)
    assert other_mode(kernel.padded(4), BIG_RAGGED) == kernel
    assert other_mode(kernel, Shape(2048, 3000, 2000)) is None  # no ragged rows
    assert other_mode(parse_config(EMULATED), BIG_RAGGED) is None  # writes whole rows itself


def test_a_study_screens_a_family_padded_and_remeasures_its_finalists_direct() -> None:
    evaluator = RuleEvaluator(H100)
    families = ("warptile", "dmma_pipelined")
    study = Study(BIG_RAGGED, families, evaluator, MemoryRecorder(), "ranked", seed=1)
    progress = study.run(trials=12)
    names = [r.config_name for r in progress.history]
    assert len(names) == len(set(names)) == 12  # no candidate proposed twice
    families_seen = {r.family for r in progress.history}
    assert families_seen == set(families)
    for result in progress.history:
        assert result.config_name.endswith("_pad4") == (result.family == "dmma_pipelined")
    final = evaluator.compared[0]  # the finalists' first round: every one of them
    padded_finalists = [n for n in final if n.endswith("_pad4") and n in names]
    assert padded_finalists
    for name in padded_finalists:  # each padded finalist is also measured on the arrays
        assert name.removesuffix("_pad4") in final


def test_an_aligned_study_screens_nothing_padded() -> None:
    evaluator = RuleEvaluator(H100)
    shape = Shape(2048, 3000, 2000)
    study = Study(shape, ("dmma_pipelined",), evaluator, MemoryRecorder(), "ranked", seed=1)
    progress = study.run(trials=4)
    assert progress.history and not any(r.config_name.endswith("_pad4") for r in progress.history)
    assert not any(n.endswith("_pad4") for names in evaluator.compared for n in names)


def test_which_families_may_be_screened_padded() -> None:
    assert screening_mode.may_screen_padded("dmma_pipelined", BIG_RAGGED)
    assert not screening_mode.may_screen_padded("dmma_pipelined", Shape(2048, 3000, 2000))
    assert not screening_mode.may_screen_padded("warptile", BIG_RAGGED)  # no leading dims
    assert not screening_mode.may_screen_padded("hmma_bf16x3", BIG_RAGGED)  # rewrites A and B


def test_ragged_rows_of_c_alone_pad_only_the_vendor_launches() -> None:
    """NT with K aligned and N ragged: only C's rows are off 16 bytes. cuBLAS takes C's pitch
    and is screened padded (its C through a buffer of whole vectors); our kernels write C as it
    is, so nothing is padded for them and no twin of theirs is re-measured."""
    shape = Shape(777, 12345, 4096, "bfloat16", "NT")
    assert screening_mode.may_screen_padded("cublaslt", shape)
    assert screening_mode.may_screen_padded("cublas", shape)
    assert not screening_mode.may_screen_padded("tma_ws", shape)
    lt = parse_config("cublaslt_rk0")
    assert other_mode(lt, shape) == lt.padded(8)
    assert other_mode(lt.padded(8), shape) == lt
    assert other_mode(parse_config(HALF_TMA), shape) is None


def test_a_start_is_prepared_and_searched_in_its_familys_screening_mode() -> None:
    evaluator = RuleEvaluator(H100)
    start = parse_config(KERNEL)
    study = Study(
        BIG_RAGGED, ("dmma_pipelined",), evaluator, MemoryRecorder(), "ranked", starts=[start]
    )
    study.prepare()
    assert evaluator.prepared[0] == KERNEL + "_pad4"  # not the caller's-array kernel first
    assert KERNEL not in evaluator.prepared
    progress = study.run(trials=2)
    assert progress.history[0].config_name == KERNEL + "_pad4"
