"""Devices asked about, and which math is slow on them."""

from __future__ import annotations

import pytest

from tuner.answers.device_kind import DeviceSpec, MathRates, slow_math
from tuner.core.errors import InputError
from tuner.kernels.families import FAMILIES
from tuner.model.rates import ARCH_FIGURES


def test_kind_needs_both_arch_and_sm_count() -> None:
    assert DeviceSpec("H200", "sm_90", 132).kind == ("sm_90", 132)
    assert DeviceSpec("H200", "sm_90").kind is None
    assert DeviceSpec("H200", sm_count=132).kind is None


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"name": " "}, "`device` must be a GPU's name, got ' '"),
        ({"name": "x", "arch": "9.0"}, "`arch` must look like sm_90"),
        ({"name": "x", "arch": "sm_9"}, "got 'sm_9'"),
        ({"name": "x", "sm_count": 0}, "`sm_count` must be an integer >= 1, got 0"),
        ({"name": "x", "sm_count": True}, "got True"),
    ],
)
def test_bad_specs_name_the_field(values: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        DeviceSpec(**values)  # type: ignore[arg-type]


def test_the_table_marks_the_datacenter_parts_fast_and_the_others_slow() -> None:
    verdicts = {arch: bool(slow_math(arch, None).units) for arch in ARCH_FIGURES}
    assert verdicts == {
        "sm_80": False,
        "sm_86": True,
        "sm_89": True,
        "sm_90": False,
        "sm_120": True,
    }
    unknown = slow_math("sm_100", None)
    assert unknown.units == {"fp64_tensor"} and "unknown for sm_100" in unknown.reason
    assert slow_math(None, None).units == {"fp64_tensor"}


def test_measured_rates_win_over_the_table_when_both_are_there() -> None:
    assert slow_math("sm_90", MathRates(60.0, 10.0)).units == {"fp64_tensor"}
    assert slow_math("sm_89", MathRates(80.0, 79.0)).units == frozenset()
    assert slow_math("sm_90", MathRates(60.0, None)).units == frozenset()  # half a probe: table


def test_only_fp64_tensor_families_are_excluded() -> None:
    slow = slow_math("sm_89", None)
    barred = sorted(name for name in FAMILIES if not slow.allows(name))
    assert barred == ["dmma", "dmma_pipelined", "dmma_streamk"]
    assert slow.allows("a family of an older tuner")  # not judged
    assert all(slow_math("sm_90", None).allows(name) for name in FAMILIES)
