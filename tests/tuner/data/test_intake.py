"""The rules every stored result passes: names, family rules, plausible times, trust."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

import storage
from tuner.data.intake import (
    MIN_KERNEL_MS,
    PEAK_MARGIN,
    RejectedRecords,
    check_record,
    check_records,
    check_upload,
    peak_tflops,
    record_problems,
    with_trust,
)
from tuner.kernels.families import FAMILIES, parse_config
from tuner.model.rates import ARCH_FIGURES

H100 = storage.DeviceIn("NVIDIA H100 80GB HBM3", "sm_90", 132)
CUBE = storage.ShapeIn(4096, 4096, 4096)
NAME = "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t128"
DMMA = "dmma_bm64_bn64_bk16_wm32_wn32_mk4_sk1_mb1_wd0"


def good(name: str = NAME, **changes: Any) -> storage.MeasurementIn:
    config = parse_config(name)
    values: dict[str, Any] = {
        "family": config.family,
        "config_name": config.name,
        "params": config.as_dict(),
        "ms": 3.0,
        "cublas_ms": 2.5,
    }
    values.update(changes)
    return storage.MeasurementIn(**values)


def fields(device: storage.DeviceIn, shape: storage.ShapeIn, m: storage.MeasurementIn) -> set[str]:
    return {problem.field for problem in record_problems(device, shape, m)}


def test_a_real_measurement_passes() -> None:
    assert record_problems(H100, CUBE, good()) == []


@pytest.mark.parametrize(
    ("changes", "field", "needle"),
    [
        ({"family": "fastest_ever"}, "family", "must be one of"),
        ({"config_name": "garbage"}, "config_name", "must start with a family"),
        ({"family": "pipelined"}, "config_name", "belongs to family warptile"),
        ({"params": {"BM": 1}}, "params", "must be the parameters of"),
        ({"ms": 1e-6}, "ms", f">= {MIN_KERNEL_MS}"),
        ({"ms": 0.1}, "ms", "TFLOP/s"),
        ({"tflops": 5000.0}, "tflops", "sm_90"),
        ({"cublas_ms": 0.05}, "cublas_ms", "ffma peak"),
        ({"ratio": -1.0}, "ratio", "> 0"),
        ({"study": "a\x00b"}, "study", "NUL"),
        ({"study": "s" * 256}, "study", "at most 255"),
    ],
)
def test_each_bad_field_is_named(changes: dict[str, Any], field: str, needle: str) -> None:
    problems = record_problems(H100, CUBE, good(**changes))
    assert [p.field for p in problems] == [field]
    assert needle in str(problems[0]) and str(problems[0]).startswith(f"`{field}`")


def test_a_config_breaking_its_family_rules_is_refused_unless_recorded_as_invalid() -> None:
    broken = "warptile_bm128_bn128_bk16_wm64_wn64_wni4_tm8_tn4_t256"  # 4 warps, 256 threads
    params = parse_config(broken).as_dict()
    ok = good(config_name=broken, params=params)
    assert fields(H100, CUBE, ok) == {"config_name"}
    invalid = replace(ok, status="invalid", ms=None, cublas_ms=None, reason="rule")
    assert record_problems(H100, CUBE, invalid) == []


def test_a_name_must_be_canonical() -> None:
    reordered = "warptile_bn128_bm128_bk16_wm64_wn64_wni4_tm8_tn4_t128"
    problems = record_problems(H100, CUBE, good(config_name=reordered))
    assert [p.field for p in problems] == ["config_name"] and NAME in problems[0].message


def test_device_and_shape_are_checked_first() -> None:
    device = storage.DeviceIn("gpu\x00", "ampere", 108)
    shape = storage.ShapeIn(2**40, 1, 1, dtype="float64")
    assert fields(device, shape, good(family="nope")) == {
        "device.name",
        "device.arch",
        "shape.m",
        "shape.dtype",
    }


def test_the_peak_is_the_unit_the_family_multiplies_on() -> None:
    a6000 = storage.DeviceIn("NVIDIA RTX A6000", "sm_86", 84)
    shape = storage.ShapeIn(1024, 1024, 1024)
    ffma, fp64 = peak_tflops("sm_86", 84, "ffma"), peak_tflops("sm_86", 84, "fp64_tensor")
    assert fp64 < ffma / 10
    # 2 GFLOP in 1 ms is 2.1 TFLOP/s: fine for FFMA, beyond sm_86's FP64 rate
    assert record_problems(a6000, shape, good(ms=1.0, cublas_ms=1.0)) == []
    assert fields(a6000, shape, good(DMMA, ms=1.0, cublas_ms=1.0)) == {"ms"}
    assert record_problems(H100, shape, good(DMMA, ms=1.0, cublas_ms=1.0)) == []


def test_an_unknown_architecture_gets_the_largest_known_rate_per_sm() -> None:
    largest = max(f.tflops(f.ffma_per_clk, 100) for f in ARCH_FIGURES.values())
    assert peak_tflops("sm_999", 100, "ffma") == largest
    unknown = storage.DeviceIn("future GPU", "sm_999", 100)
    fastest_ms = CUBE.m * CUBE.n * CUBE.k * 2 / (largest * PEAK_MARGIN * 1e9)
    assert record_problems(unknown, CUBE, good(ms=fastest_ms * 1.01)) == []
    assert fields(unknown, CUBE, good(ms=fastest_ms * 0.99)) == {"ms"}


def test_an_upload_names_each_measurement_and_refuses_all() -> None:
    with pytest.raises(RejectedRecords) as caught:
        check_upload(H100, CUBE, [good(), good(ms=1e-6), good(family="x")])
    assert [p.field for p in caught.value.problems] == [
        "measurements.1.ms",
        "measurements.2.family",
    ]


def test_records_are_labelled_by_row() -> None:
    check_record(H100, CUBE, good())
    with pytest.raises(RejectedRecords, match=r"^file.json record 1: `ms` must be >="):
        check_records(
            [
                ("file.json record 0", (H100, CUBE, good())),
                ("file.json record 1", (H100, CUBE, good(ms=1e-6))),
            ]
        )


def test_trust_is_the_servers_word_not_the_senders() -> None:
    claimed = good(trusted=True)
    assert not with_trust(claimed, False).trusted
    assert with_trust(good(trusted=False), True).trusted
    assert good().trusted  # the tuner's own results are trusted unless marked otherwise


def test_half_inputs_are_held_to_the_tensor_core_peak_for_hmma_and_cublas() -> None:
    """The first H100 hmma measurement of 4096^3 bf16 NT (0.43 ms ours, 0.19 ms cuBLAS: 320
    and 710 TFLOP/s, far above the FP32 FMA peak) passes; times no tensor core reaches fail."""
    half = storage.ShapeIn(4096, 4096, 4096, "bfloat16", "NT")
    name = "hmma_bm128_bn128_bk32_wpm2_wpn2_s4_sw8_dt1_ly1"
    assert record_problems(H100, half, good(name, ms=0.43, cublas_ms=0.19)) == []
    peak = peak_tflops("sm_90", 132, "half_tensor")
    assert peak > 10 * peak_tflops("sm_90", 132, "ffma")
    too_fast = 2 * 4096**3 / (PEAK_MARGIN * peak * 1e9) / 2  # twice the margin's rate
    assert fields(H100, half, good(name, ms=too_fast, cublas_ms=too_fast)) == {"ms", "cublas_ms"}
    # float32: cuBLAS is held to FMA, so the same cuBLAS time is refused there.
    assert "cublas_ms" in fields(H100, CUBE, good(cublas_ms=0.19))


def test_every_half_precision_family_is_held_to_the_tensor_core_peak() -> None:
    """A tma_ws best of the shipped grid (128x128256x2048 BF16 NT at 331 TFLOP/s, 1.06x cuBLAS)
    was refused when its unit, ``half_tma``, fell back to the FMA peak."""
    tensor = peak_tflops("sm_90", 132, "half_tensor")
    half_units = {f.cost.math for f in FAMILIES.values() if f.cost.math.startswith("half_")}
    assert half_units >= {"half_tensor", "half_wgmma", "half_tma"}
    assert {unit: peak_tflops("sm_90", 132, unit) for unit in half_units} == dict.fromkeys(
        half_units, tensor
    )
    grid = storage.ShapeIn(128, 128256, 2048, "bfloat16", "NT", "bfloat16")
    name = "tma_ws_bm128_bn256_bk64_cw2_s4_gr8_ra1_ep1_cm1_cn2_dt1_ly1_out2"
    assert record_problems(H100, grid, good(name, ms=0.2034, cublas_ms=0.2151)) == []


def test_a_vendor_measurement_is_bounded_by_the_unit_cublas_uses_for_its_input_type() -> None:
    ragged = storage.ShapeIn(4097, 4097, 4097, "bfloat16", "NN")
    # 4097^3 BF16 in 0.32 ms is 430 TFLOP/s: beyond any FFMA peak, within the tensor cores'.
    assert record_problems(H100, ragged, good("cublaslt_rk0_pad8", ms=0.32, cublas_ms=1.08)) == []
    too_fast = good("cublaslt_rk0", ms=0.32)  # 430 TFLOP/s of float32 would beat the FMA pipes
    assert fields(H100, CUBE, too_fast) == {"ms"}


def test_a_type_of_c_the_inputs_cannot_write_is_named() -> None:
    for dtype, out in (("float32", "bfloat16"), ("float16", "bfloat16"), ("bfloat16", "int8")):
        shape = storage.ShapeIn(64, 64, 64, dtype=dtype, out_dtype=out)
        assert fields(H100, shape, good()) == {"shape.out_dtype"}
    for dtype, out in (("float32", "float32"), ("bfloat16", "bfloat16"), ("float16", "float32")):
        assert "shape.out_dtype" not in fields(
            H100, storage.ShapeIn(64, 64, 64, dtype, "NN", out), good()
        )
