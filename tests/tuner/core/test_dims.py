"""Distances between GEMM sizes and the TFLOP/s of a time."""

from __future__ import annotations

import pytest

from tuner.core.dims import log_dims, shape_distance, tflops
from tuner.core.shape import Shape


def test_shape_distance_is_euclidean_in_log_space() -> None:
    # By hand: ln(2000/1024)^2 + ln(1000/1024)^2 + ln(3000/1024)^2
    #   = 0.66943^2 + 0.02372^2 + 1.07490^2 = 0.44814 + 0.00056 + 1.15541 = 1.60411 -> 1.26653
    assert shape_distance((2000, 1000, 3000), (1024, 1024, 1024)) == pytest.approx(
        1.26653, abs=2e-5
    )
    assert log_dims((1, 1, 1)) == (0.0, 0.0, 0.0)


def test_equal_ratios_are_equal_distances() -> None:
    small = shape_distance((128, 64, 64), (256, 64, 64))
    large = shape_distance((64, 4096, 64), (64, 8192, 64))
    assert small == pytest.approx(large)
    assert shape_distance((4096, 4096, 4096), (4224, 4096, 4096)) < small / 10
    assert shape_distance((3, 5, 7), (3, 5, 7)) == 0.0
    assert shape_distance((3, 5, 7), (1000, 1000, 1000)) == shape_distance(
        (1000, 1000, 1000), (3, 5, 7)
    )


def test_tflops_counts_two_flops_a_multiply_add() -> None:
    # 2 * 1000^3 flops in 1 ms: 2e9 flop / 1e-3 s = 2e12 flop/s.
    assert tflops(1000, 1000, 1000, 1.0) == pytest.approx(2.0)
    assert tflops(4096, 4096, 4096, 0.25) == pytest.approx(2 * 4096**3 / 0.25e-3 / 1e12)
    assert Shape(4096, 4096, 4096).tflops(0.25) == tflops(4096, 4096, 4096, 0.25)


@pytest.mark.parametrize("ms", [None, 0.0, -1.0, float("nan"), 1e-320])
def test_no_rate_without_a_usable_time(ms: float | None) -> None:
    assert tflops(4096, 4096, 4096, ms) is None
