"""Padded operands (``_pad4``): the name, its validation, where it is offered, and the padding
arithmetic (buffer shapes and copy extents) on row lengths of every residue mod 4."""

from __future__ import annotations

import pytest

from tests.tuner.fakes import RuleEvaluator
from tuner.errors import InputError
from tuner.families import checked_config, parse_config
from tuner.operand_padding import padded_twins, padding_refusal, plan_padding, round_up
from tuner.recording import MemoryRecorder
from tuner.render import render
from tuner.resources import table_device
from tuner.shape import Shape
from tuner.study import Study

DIRECT = "dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1"
PADDED = DIRECT + "_pad4"


def test_padded_name_reads_back_as_the_same_config() -> None:
    config = checked_config(PADDED)
    assert config.pad == 4
    assert config.name == PADDED
    assert config.kernel_name == DIRECT
    assert config.direct == parse_config(DIRECT)
    assert config != config.direct
    assert config.direct.padded() == config


@pytest.mark.parametrize(
    "name",
    [DIRECT + "_pad8", DIRECT + "_pad0", DIRECT.replace("_s3_", "_pad4_s3_")],
    ids=["other value", "zero", "not last"],
)
def test_other_operand_modes_are_refused_naming_them(name: str) -> None:
    with pytest.raises(InputError, match="pad"):
        parse_config(name)


def test_padding_is_refused_for_a_half_input_family() -> None:
    with pytest.raises(InputError, match="float32 NN"):
        checked_config("hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt0_ly0_pad4")


def test_a_padded_config_runs_the_unpadded_kernel() -> None:
    direct, padded = render(parse_config(DIRECT)), render(parse_config(PADDED))
    assert padded.code == direct.code
    assert padded.entry == direct.entry == DIRECT
    assert padded.config.name == PADDED


@pytest.mark.parametrize(
    ("shape", "offered"),
    [
        (Shape(2047, 2047, 2047), True),
        (Shape(4096, 4096, 1531), True),  # K alone
        (Shape(511, 32001, 4096), True),  # N alone
        (Shape(1023, 4096, 4096), False),  # M does not lengthen any row
        (Shape(4096, 4096, 4096), False),
        (Shape(2047, 2047, 2047, "float16"), False),
        (Shape(2047, 2047, 2047, "float32", "NT"), False),
    ],
    ids=str,
)
def test_padding_is_offered_only_for_ragged_float32_nn_rows(shape: Shape, offered: bool) -> None:
    configs = [parse_config(DIRECT), parse_config(PADDED)]
    assert (padding_refusal(shape) is None) == offered
    twins = padded_twins(configs, shape)
    assert [c.name for c in twins] == ([PADDED] if offered else [])


@pytest.mark.parametrize("residue", [1, 2, 3])
def test_padding_arithmetic_for_each_residue_of_k(residue: int) -> None:
    shape = Shape(37, 64, 100 + residue)
    plan = plan_padding(shape)
    assert (plan.kp, plan.np) == (104, 64)
    assert plan.run_shape == Shape(37, 64, 104)
    assert (plan.copy_a, plan.copy_b, plan.copy_c) == (True, True, False)
    assert plan.a_buffer == (37, 104) and plan.b_buffer == (104, 64)
    a = plan.a_in()
    assert (a.rows, a.width, a.src_pitch, a.dst_pitch) == (37, 4 * (100 + residue), a.width, 416)
    b = plan.b_in()
    assert (b.rows, b.width, b.src_pitch, b.dst_pitch) == (100 + residue, 256, 256, 256)
    assert plan.bytes_moved == 2 * 4 * (37 * (100 + residue) + (100 + residue) * 64)


@pytest.mark.parametrize("residue", [1, 2, 3])
def test_padding_arithmetic_for_each_residue_of_n(residue: int) -> None:
    n = 60 + residue
    plan = plan_padding(Shape(37, n, 96))
    assert (plan.kp, plan.np) == (96, 64)
    assert (plan.copy_a, plan.copy_b, plan.copy_c) == (False, True, True)
    assert plan.b_buffer == (96, 64) and plan.c_buffer == (37, 64)
    b, c_in, c_out = plan.b_in(), plan.c_in(), plan.c_out()
    assert (b.rows, b.width, b.src_pitch, b.dst_pitch) == (96, 4 * n, 4 * n, 256)
    assert (c_in.rows, c_in.width, c_in.src_pitch, c_in.dst_pitch) == (37, 4 * n, 4 * n, 256)
    assert (c_out.rows, c_out.width, c_out.src_pitch, c_out.dst_pitch) == (37, 4 * n, 256, 4 * n)


def test_aligned_rows_copy_only_the_arrays_whose_base_is_off() -> None:
    shape = Shape(50, 64, 32)
    assert not plan_padding(shape).copies
    plan = plan_padding(shape, a_aligned=False, b_aligned=True, c_aligned=False)
    assert (plan.copy_a, plan.copy_b, plan.copy_c) == (True, False, True)
    assert plan.run_shape == shape


def test_round_up() -> None:
    assert [round_up(v) for v in (1, 2, 3, 4, 5, 4093)] == [4, 4, 4, 4, 8, 4096]


def _finals(shape: Shape) -> list[list[str]]:
    evaluator = RuleEvaluator(table_device("sm_90"))
    study = Study(shape, ("dmma_pipelined",), evaluator, MemoryRecorder(), sampler="random")
    study.run(trials=6)
    return evaluator.compared


def test_a_study_remeasures_its_fastest_padded_only_where_rows_are_ragged() -> None:
    aligned = _finals(Shape(512, 512, 512))
    assert aligned and not any(name.endswith("_pad4") for name in aligned[0])
    ragged = _finals(Shape(511, 509, 507))
    padded = [name for name in ragged[0] if name.endswith("_pad4")]
    assert padded
    assert all(name.removesuffix("_pad4") in ragged[0] for name in padded)


def test_the_transfer_prior_ignores_padded_times() -> None:
    """A padded time includes its copies: it says nothing about the kernel on another shape."""
    from tuner.correction import transfer_prior
    from tuner.samplers import Observation

    direct = parse_config(DIRECT)
    shape, other = Shape(2047, 2047, 2047), Shape(4097, 4097, 4097)

    def prior(name: str) -> float:
        history = [Observation(other, name, 5.0)]
        return float(transfer_prior([direct], shape, history, lambda c, s: 0.0)[0])

    assert prior(DIRECT) != 0.0
    assert prior(PADDED) == 0.0
