"""A tune's pace (``tuner.run.pace``): only this command's candidates count."""

from __future__ import annotations

from tuner.run.pace import Pace
from tuner.search.study import Progress


def test_resumed_candidates_do_not_count_and_the_rates_are_per_minute() -> None:
    fresh = Progress("a", 40, evaluated=40)
    resumed = Progress("b", 40, evaluated=40, earlier=30)
    done_before = Progress("c", 40, evaluated=40, earlier=40)
    pace = Pace.of([fresh, resumed, done_before], seconds=30.0)
    assert (pace.shapes, pace.candidates) == (3, 50)
    assert pace.shapes_per_min == 6.0 and pace.candidates_per_min == 100.0
    assert pace.seconds_per_shape == 10.0
    assert pace.summary() == (
        "3 shapes, 50 candidates evaluated in 30.0 s, 10.0 s a shape: "
        "6.00 shapes/min, 100 candidates/min"
    )


def test_an_empty_tune_has_no_rate() -> None:
    pace = Pace.of([], seconds=0.0)
    assert pace.shapes_per_min == 0.0 and pace.seconds_per_shape is None
    assert pace.summary().startswith("0 shapes, 0 candidates")
