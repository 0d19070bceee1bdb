"""Padded operands (``_pad4``, ``_pad8``): the name, its validation, where it is offered, and
the padding arithmetic (buffer shapes and copy extents) on row lengths of every residue mod 4,
and for half inputs in every layout."""

from __future__ import annotations

import pytest

from tests.tuner.fakes import RuleEvaluator
from tuner.core.errors import InputError
from tuner.core.shape import Shape
from tuner.kernels.families import checked_config, parse_config
from tuner.kernels.operand_padding import (
    pad_multiple,
    padding_refusal,
    plan_padding,
    round_up,
)
from tuner.kernels.render import render
from tuner.kernels.resources import table_device
from tuner.search.recorder import MemoryRecorder
from tuner.search.screening_mode import other_mode
from tuner.search.study import Study

DIRECT = "dmma_pipelined_bm64_bn128_bk32_wm32_wn64_mk4_s3_sk1_mb1"
PADDED = DIRECT + "_pad4"
HALF = "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt0_ly0"


def test_padded_name_reads_back_as_the_same_config() -> None:
    config = checked_config(PADDED)
    assert config.pad == 4
    assert config.name == PADDED
    assert config.kernel_name == DIRECT
    assert config.direct == parse_config(DIRECT)
    assert config != config.direct
    assert config.direct.padded(4) == config
    half = checked_config(HALF + "_pad8")
    assert (half.pad, half.name, half.direct.name) == (8, HALF + "_pad8", HALF)


def test_a_pad_is_a_whole_16_byte_vector_of_the_input_type() -> None:
    assert [pad_multiple(d) for d in ("float32", "float16", "bfloat16")] == [4, 8, 8]


@pytest.mark.parametrize(
    "name",
    [DIRECT + "_pad16", DIRECT + "_pad0", DIRECT.replace("_s3_", "_pad4_s3_")],
    ids=["other value", "zero", "not last"],
)
def test_other_operand_modes_are_refused_naming_them(name: str) -> None:
    with pytest.raises(InputError, match="pad"):
        parse_config(name)


@pytest.mark.parametrize(
    ("name", "allowed"), [(HALF + "_pad4", "pad8"), (DIRECT + "_pad8", "pad4")], ids=str
)
def test_a_pad_of_another_input_type_is_refused_naming_the_right_one(
    name: str, allowed: str
) -> None:
    with pytest.raises(InputError, match=allowed):
        checked_config(name)


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
    ],
    ids=str,
)
def test_padding_is_offered_only_for_ragged_float32_rows(shape: Shape, offered: bool) -> None:
    configs = [parse_config(DIRECT), parse_config(PADDED)]
    refusal = padding_refusal(shape)
    assert (refusal is None) == offered
    assert refusal is None or f"{shape} has none" in refusal  # names the shape
    direct, padded = configs
    twin = other_mode(direct, shape)
    assert (twin.name if twin else None) == (PADDED if offered else None)
    assert other_mode(padded, shape) == direct  # a padded finalist is also run on the arrays


@pytest.mark.parametrize(
    ("shape", "offered"),
    [
        (Shape(2047, 2047, 2047, "bfloat16"), True),
        (Shape(4096, 4096, 4092, "float16"), True),  # a multiple of 4 floats, not of 8 halves
        (Shape(1023, 4096, 4096, "bfloat16", "NT"), False),  # M is no stored row's length
        (Shape(1023, 4096, 4096, "bfloat16", "TN"), True),  # A stored K x M: rows of M
        (Shape(4096, 4093, 4096, "float16", "NT"), False),  # B stored N x K: rows of K
        (Shape(4096, 4096, 4093, "float16", "TN"), False),  # K is no stored row's length
    ],
    ids=lambda v: v.label() if isinstance(v, Shape) else str(v),
)
def test_half_padding_follows_the_stored_rows(shape: Shape, offered: bool) -> None:
    configs = [parse_config(HALF)]
    assert (padding_refusal(shape) is None) == offered
    twin = other_mode(configs[0], shape)
    assert (twin.name if twin else None) == (HALF + "_pad8" if offered else None)


def test_half_padding_widens_only_the_ragged_rows_in_every_layout() -> None:
    """hmma takes leading dimensions: a ragged operand's rows are copied to a whole number of
    8 halves, the product keeps its dimensions and C is never copied."""
    m, n, k = 37, 61, 101  # each ragged for 8 halves
    expected = {  # A's array -> buffer, B's array -> buffer (as stored)
        "NN": (((37, 101), (37, 104)), ((101, 61), (101, 64))),
        "NT": (((37, 101), (37, 104)), ((61, 101), (61, 104))),
        "TN": (((101, 37), (101, 40)), ((101, 61), (101, 64))),
        "TT": (((101, 37), (101, 40)), ((61, 101), (61, 104))),
    }
    for layout, ((a_array, a_buffer), (b_array, b_buffer)) in expected.items():
        shape = Shape(m, n, k, "bfloat16", layout)
        plan = plan_padding(shape, leading_dims=True)
        assert plan.run_shape == shape, layout
        assert (plan.a_array, plan.a_buffer) == (a_array, a_buffer), layout
        assert (plan.b_array, plan.b_buffer) == (b_array, b_buffer), layout
        assert (plan.copy_a, plan.copy_b, plan.copy_c) == (True, True, False)
        a, b = plan.a_in(), plan.b_in()
        assert (a.rows, a.width, a.src_pitch, a.dst_pitch) == (
            a_array[0],
            2 * a_array[1],
            2 * a_array[1],
            2 * a_buffer[1],
        )
        assert (b.rows, b.width, b.src_pitch, b.dst_pitch) == (
            b_array[0],
            2 * b_array[1],
            2 * b_array[1],
            2 * b_buffer[1],
        )
        assert plan.bytes_moved == 2 * 2 * (m * k + k * n)  # A and B read and written


@pytest.mark.parametrize(
    ("k", "a_aligned", "copied", "pitch"),
    [
        (1531, True, True, 1536),  # ragged: copied into rows of whole 128-byte lines
        (4097, True, True, 4128),
        (1532, True, False, 1532),  # whole float4s: read in place, whatever the pitch
        (1532, False, True, 1536),  # a base off 16 bytes is copied, into whole lines too
        (1024, False, True, 1024),
    ],
)
def test_float32_copies_get_128_byte_row_pitches(
    k: int, a_aligned: bool, copied: bool, pitch: int
) -> None:
    plan = plan_padding(Shape(64, 4096, k), a_aligned=a_aligned, leading_dims=True)
    assert plan.copy_a == copied and not plan.copy_b
    assert plan.a_buffer == (64, pitch)
    if copied:
        assert plan.a_in().dst_pitch == 4 * pitch and plan.a_in().width == 4 * k


def test_half_padding_copies_only_the_ragged_operand() -> None:
    assert not plan_padding(Shape(64, 61, 96, "float16", "NT"), leading_dims=True).copies
    plan = plan_padding(Shape(64, 61, 96, "float16", "NN"), leading_dims=True)
    assert (plan.copy_a, plan.copy_b, plan.copy_c) == (False, True, False)
    plan = plan_padding(Shape(64, 96, 96, "float16", "NN"), False, True, False, True)
    assert (plan.copy_a, plan.copy_b, plan.copy_c) == (True, False, False)  # C's base: no copy


def test_without_leading_dimensions_padding_grows_the_product_in_every_layout() -> None:
    """The float32 way (the kernel's rows are its dimensions), for any layout: each dimension
    that is a stored row's length grows, and C is copied when M or N did."""
    m, n, k = 37, 61, 101
    expected = {"NN": (37, 64, 104), "NT": (37, 61, 104), "TN": (40, 64, 101), "TT": (40, 61, 104)}
    for layout, dims in expected.items():
        for out, c_bytes in (("float32", 4), ("bfloat16", 2)):  # C's copies move its own type
            plan = plan_padding(Shape(m, n, k, "bfloat16", layout, out))
            assert (plan.mp, plan.np, plan.kp) == dims, layout
            assert plan.c_buffer == dims[:2] and plan.copy_c == (dims[:2] != (m, n))
            c = plan.c_out()
            width = c_bytes * n
            assert (c.rows, c.width, c.src_pitch, c.dst_pitch) == (
                m,
                width,
                c_bytes * dims[1],
                width,
            )


def test_the_vendor_launch_rounds_up_c_rows_in_every_layout() -> None:
    """NT: N is the row length of C only. Without ``c_rows`` nothing is padded for it (our
    kernels write C as it is); with it (cuBLAS), N is rounded up too, so B (N x K) gains zero
    rows and C is copied back from an Mp x Np buffer."""
    shape = Shape(777, 12345, 4096, "bfloat16", "NT")
    assert padding_refusal(shape) is not None
    assert "A, B or C" in (padding_refusal(Shape(64, 64, 64, "bfloat16"), c_rows=True) or "")
    assert padding_refusal(shape, c_rows=True) is None
    assert not plan_padding(shape).copies
    plan = plan_padding(shape, c_rows=True)
    assert (plan.mp, plan.np, plan.kp) == (777, 12352, 4096)
    assert (plan.copy_a, plan.copy_b, plan.copy_c) == (False, True, True)
    assert plan.b_buffer == (12352, 4096) and plan.c_buffer == (777, 12352)
    out = plan.c_out()
    assert (out.rows, out.width, out.src_pitch, out.dst_pitch) == (777, 24690, 24704, 24690)
    m, n, k = 37, 61, 101
    expected = {"NN": (37, 64, 104), "NT": (37, 64, 104), "TN": (40, 64, 101), "TT": (40, 64, 104)}
    for layout, dims in expected.items():
        plan = plan_padding(Shape(m, n, k, "bfloat16", layout), c_rows=True)
        assert (plan.mp, plan.np, plan.kp) == dims, layout
        assert plan.run_shape.n % 8 == 0 and plan.copy_c


@pytest.mark.parametrize("residue", [1, 2, 3])
def test_padding_arithmetic_for_each_residue_of_k(residue: int) -> None:
    shape = Shape(37, 64, 100 + residue)
    plan = plan_padding(shape)
    assert (plan.mp, plan.kp, plan.np) == (37, 104, 64)
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


def _finals(shape: Shape, family: str = "dmma_pipelined") -> list[list[str]]:
    evaluator = RuleEvaluator(table_device("sm_90"))
    study = Study(shape, (family,), evaluator, MemoryRecorder(), sampler="random")
    study.run(trials=6)
    return evaluator.compared


def test_a_study_remeasures_its_fastest_padded_only_where_rows_are_ragged() -> None:
    aligned = _finals(Shape(512, 512, 512))
    assert aligned and not any(name.endswith("_pad4") for name in aligned[0])
    ragged = _finals(Shape(511, 509, 507))
    padded = [name for name in ragged[0] if name.endswith("_pad4")]
    assert padded
    assert all(name.removesuffix("_pad4") in ragged[0] for name in padded)


def test_a_study_also_pads_the_fastest_of_each_family_taking_leading_dimensions() -> None:
    """Beyond its one finalist, a ragged shape's study re-measures padded the fastest candidate
    of dmma and of dmma_pipelined (their padded launches copy only ragged operands)."""
    evaluator = RuleEvaluator(table_device("sm_90"))
    recorder = MemoryRecorder()
    families = ("warptile", "dmma", "dmma_pipelined")
    study = Study(
        Shape(511, 509, 507), families, evaluator, recorder, sampler="random", seed=3, finalists=1
    )
    study.run(trials=24)
    measured = [
        r for r in recorder.evaluated(study.name).values() if r.status == "ok" and r.ms is not None
    ]
    fastest = {
        family: min((r for r in measured if r.family == family), key=lambda r: r.ms or 0.0)
        for family in ("dmma", "dmma_pipelined")
    }
    final = evaluator.compared[0]  # the finalists' first round: every one of them
    for family, result in fastest.items():
        assert result.config_name + "_pad4" in final, family
    padded = [name for name in final if name.endswith("_pad4")]
    assert len(padded) <= 3  # the finalist's twin and at most one per such family


def test_a_half_input_study_remeasures_its_fastest_with_eight_half_rows() -> None:
    aligned = _finals(Shape(512, 512, 512, "bfloat16", "NT"), "hmma")
    assert aligned and not any("_pad" in name for name in aligned[0])
    ragged = _finals(Shape(512, 512, 509, "bfloat16", "NT"), "hmma")
    padded = [name for name in ragged[0] if "_pad" in name]
    assert padded and all(name.endswith("_pad8") for name in padded)
    assert all(name.removesuffix("_pad8") in ragged[0] for name in padded)


def test_the_transfer_prior_ignores_padded_times() -> None:
    """A padded time includes its copies: it says nothing about the kernel on another shape."""
    from tuner.search.samplers import Observation
    from tuner.search.samplers.correction import transfer_prior

    direct = parse_config(DIRECT)
    shape, other = Shape(2047, 2047, 2047), Shape(4097, 4097, 4097)

    def prior(name: str) -> float:
        history = [Observation(other, name, 5.0)]
        return float(transfer_prior([direct], shape, history, lambda c, s: 0.0)[0])

    assert prior(DIRECT) != 0.0
    assert prior(PADDED) == 0.0
