"""Axis scales of the x/y charts: log-spaced ticks, and where a value lands on a log axis."""

from __future__ import annotations

import itertools
import math

import pytest

from tuner.report.svg_axes import Scale, log_ticks


@pytest.mark.parametrize(
    ("low", "high", "ticks"),
    [
        (0.05, 12.0, [0.01, 0.1, 1.0, 10.0, 100.0]),  # decades
        (3.0, 30.0, [2.0, 5.0, 10.0, 20.0, 50.0]),  # one decade: 1-2-5 steps
        (1.5, 4.5, [1.0, 2.0, 3.0, 4.0, 5.0]),  # under a decade: 1..9 steps
        (43.0, 58.0, [40.0, 45.0, 50.0, 55.0, 60.0]),  # nearly linear: round linear values
    ],
)
def test_log_ticks_cover_the_data_with_round_values(
    low: float, high: float, ticks: list[float]
) -> None:
    assert log_ticks(low, high) == ticks


def test_log_ticks_of_tile_sizes_are_powers_of_two() -> None:
    assert log_ticks(32, 256, powers_of_two=True) == [32.0, 64.0, 128.0, 256.0]
    assert Scale.fit([64.0, 32.0, 256.0], log=True).ticks == (32.0, 64.0, 128.0, 256.0)
    # Values that are not all powers of two get decimal ticks.
    assert Scale.fit([48.0, 256.0], log=True).ticks == (20.0, 50.0, 100.0, 200.0, 500.0)


def test_many_decades_are_labelled_by_at_most_nine_ticks() -> None:
    ticks = log_ticks(1e-6, 1e14)
    assert len(ticks) <= 9 and ticks[0] <= 1e-6 and ticks[-1] >= 1e14
    ratios = {round(math.log10(b / a), 6) for a, b in itertools.pairwise(ticks)}
    assert ratios == {3.0}  # every third decade


def test_a_log_scale_refuses_values_that_are_not_positive() -> None:
    with pytest.raises(ValueError, match="needs values > 0, got 0"):
        log_ticks(0.0, 10.0)


def test_values_land_by_their_logarithm_on_a_log_scale() -> None:
    log = Scale.fit([1.0, 100.0], log=True)
    assert log.ticks == (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)  # two decades: 1-2-5
    assert log.fraction(10.0) == pytest.approx(0.5)
    assert log.fraction(2.0) == pytest.approx(math.log10(2) / 2)
    linear = Scale.fit([0.0, 100.0])
    assert linear.fraction(10.0) == pytest.approx(0.1)


def test_a_chosen_range_sets_the_axis_ends() -> None:
    scale = Scale.fit([1.0, 2.0, 90.0], low=0.0, high=10.0)
    assert scale.ticks[0] == 0.0 and scale.ticks[-1] == 10.0
